// Package importer is virtkit's CDI importer: it fills a DataVolume's disk
// on a node. [Importer] does one transfer (HTTP(S) with resumable, bounded
// downloads and an optional checksum; a registry image's /disk/; a blank
// image; a clone of another volume), detects the format (qcow2, raw, ISO,
// gzip, xz), converts to a raw target with qemu-img and resizes it to the
// requested size. The target is written under a temporary name and renamed
// at the end, so a failed or interrupted import never leaves a disk that
// looks complete.
//
// [Worker] is the per-node reconciler: it takes the DataVolumes the
// DataVolume controller scheduled on its node, runs the import, writes
// status.progress while it runs, retries failures with backoff (counting
// status.restartCount) and reports Succeeded, or Failed with a reason.
package importer
