package hypervisor

import "context"

// DiskBackuper copies a disk of a running domain to a new file as the disk
// was at the moment of the call, while the guest keeps running (libvirt's
// push-mode backup, virDomainBackupBegin: QEMU's copy-before-write backup
// job). It is the point-in-time copy a storage snapshot of an in-use
// volume needs: a plain file copy of a disk QEMU writes to is torn when
// the guest writes during the copy, and for qcow2 it may miss metadata
// QEMU still caches. A backend whose disks no process writes behind its
// back (the simulator's) does not implement it.
type DiskBackuper interface {
	// BackupDisk copies the disk of the running domain whose host source
	// is the file source to target, a raw image target must not exist
	// yet, and returns when the copy is complete. The disk is matched by
	// its source path; a domain without such a disk gives an error
	// matching ErrInvalidArgument, one that is not running ErrInvalidState
	// or ErrNotFound. When ctx ends the copy is aborted and target
	// removed.
	BackupDisk(ctx context.Context, domain, source, target string) error
}
