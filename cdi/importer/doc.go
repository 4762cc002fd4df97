// Package importer is virtkit's CDI importer: it fills a DataVolume's disk
// on a node. [Importer] does one transfer (HTTP(S) with resumable, bounded
// downloads and an optional checksum; an S3 object, signed with AWS
// Signature Version 4; a registry image's /disk/; a blank image; a clone of
// another volume; an uploaded file), detects the format (qcow2, raw, ISO,
// gzip, xz), converts to a raw target with qemu-img and resizes it to the
// requested size. The target is written under a temporary name and renamed
// at the end, so a failed or interrupted import never leaves a disk that
// looks complete.
//
// What a tenant names is untrusted: an image that refers to a file outside
// itself (a qcow2 backing file or external data file) is refused with
// ErrExternalReference, from the importer's own reading of the header and
// from qemu-img info, and qemu-img opens sources on the file protocol with
// no backing file; a clone is copied as raw bytes. qemu-img itself runs
// confined ([QemuImg.Sandbox]): by default, when bubblewrap's bwrap is
// found, each run sees an empty filesystem holding only its binary and
// libraries, its input read-only and its output read-write, with no
// network and no capabilities, so even an image that got past the header
// checks cannot make it read a host file. Without bwrap the default falls
// back to running qemu-img unconfined and New logs a warning (SandboxBwrap
// refuses to run instead, with ErrNoSandbox); New logs the confinement in
// use. Every connection of an
// import, redirects included, obeys an address policy (no loopback,
// link-local, metadata, unspecified or node addresses unless
// Options.AllowedNetworks allows them; ErrAddressNotAllowed). A transfer
// stops with ErrTooLarge as soon as it exceeds the requested size plus room
// for image metadata ([Importer.SourceLimit]), and the scratch space is
// removed when an import fails for good or its DataVolume is deleted.
//
// [Worker] is the per-node reconciler: it takes the DataVolumes the
// DataVolume controller scheduled on its node, runs the import, writes
// status.progress while it runs, retries failures with backoff (counting
// status.restartCount) and reports Succeeded, or Failed with a reason. An
// S3 source's secretRef and certConfigMap are read from the store; while
// one is missing the import waits (ReasonCreateContainerConfigError).
// [Worker.ReceiveUpload] takes the body of an upload to a DataVolume
// waiting in UploadReady on its node (the upload proxy of package
// cdi/upload calls it).
// What the DataVolume's conditions and events say about a failure is
// [TenantMessage]: what the tenant gave and what the source answered, never
// the node's paths, addresses or users, which only the node's log holds.
package importer
