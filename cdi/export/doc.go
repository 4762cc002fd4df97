// Package export is the export server of VirtualMachineExports: an HTTPS
// server on loopback that serves each exported volume's disk image, raw at
// /volumes/NAME/disk.img and gzipped at /volumes/NAME/disk.img.gz (the
// paths KubeVirt's export server uses), to a client presenting the
// export's token in the x-kubevirt-export-token header or query parameter.
// KubeVirt's server also serves a filesystem claim of content type archive
// as a tar.gz (/volumes/NAME/disk.tar.gz, format tar.gz) and a directory
// listing (/volumes/NAME/dir/, format dir); virtkit's volumes are always
// disk images, so those paths answer 404 naming the format, and the
// export's links list raw and gzip only. KubeVirt 1.9's VM manifests
// (/manifests/all, /manifests/secret) and OCI archive (/export.oci.tar,
// behind its OCIExport feature gate) are not served.
//
// The server only ever opens the files it was given when it was made; a
// request names a volume, never a path. A volume's file must lie under one
// of the directories the caller allows (the storage classes' directories),
// must be a regular file and must hold a raw image: virtkit's importer
// writes DataVolumes as raw images, and a qcow2 file is refused with
// [ErrNotRaw] rather than converted (a conversion would need scratch space
// of the disk's full virtual size for every download).
//
// [Manager] runs one server per export, all with certificates signed by
// one CA whose PEM goes into the export's status.links.*.cert, as
// KubeVirt's export controller puts its CA there.
package export
