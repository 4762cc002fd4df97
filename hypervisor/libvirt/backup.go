//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	lv "libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/hypervisor"
)

// backupPoll is how often BackupDisk asks whether the copy is done.
const backupPoll = 200 * time.Millisecond

var _ hypervisor.DiskBackuper = (*Hypervisor)(nil)

// BackupDisk implements [hypervisor.DiskBackuper] with libvirt's push-mode
// backup (virDomainBackupBegin): QEMU's backup job copies the disk whose
// source is source into the new raw file target as the disk was when the
// job began, holding back guest writes to a region until the region is
// copied (copy-before-write), so the guest keeps running and the copy is
// point-in-time. libvirt creates target (its directory must be one QEMU
// can reach, as the disk's own is); every other disk of the domain is left
// out. BackupDisk polls the job until it completes; when ctx ends it aborts
// the job and removes target.
func (h *Hypervisor) BackupDisk(ctx context.Context, name, source, target string) error {
	const op = "backup disk"
	if !filepath.IsAbs(source) || !filepath.IsAbs(target) {
		return hypervisor.WrapDomain(op, name, fmt.Errorf("source %q and target %q must be absolute paths: %w", source, target, hypervisor.ErrInvalidArgument))
	}
	if err := h.requireRunning(ctx, op, name); err != nil {
		return err
	}
	desc, err := h.XML(ctx, name)
	if err != nil {
		return err
	}
	bx, err := backupXML(desc, source, target)
	if err != nil {
		return hypervisor.WrapDomain(op, name, err)
	}
	if err := doDomain(ctx, h, op, name, func(d *lv.Domain) error { return d.BackupBegin(bx, "", 0) }); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			h.abortBackup(name, target)
			return hypervisor.WrapDomain(op, name, ctx.Err())
		case <-time.After(backupPoll):
		}
		done, err := h.backupDone(ctx, name)
		if err != nil {
			if ctx.Err() != nil {
				continue // aborted above
			}
			_ = os.Remove(target)
			return err
		}
		if done {
			return nil
		}
	}
}

// backupDone reports whether the domain's backup job has ended, and how:
// a failed job gives its error.
func (h *Hypervisor) backupDone(ctx context.Context, name string) (bool, error) {
	const op = "backup disk"
	return withDomain(ctx, h, op, name, func(_ *lv.Connect, d *lv.Domain) (bool, error) {
		cur, err := d.GetJobStats(0)
		if err != nil {
			return false, err
		}
		if cur.Type != lv.DOMAIN_JOB_NONE {
			if cur.OperationSet && cur.Operation != lv.DOMAIN_JOB_OPERATION_BACKUP {
				return false, fmt.Errorf("the domain runs another job (operation %d) instead of the backup: %w", cur.Operation, hypervisor.ErrInvalidState)
			}
			return false, nil
		}
		// Kept for whoever looks next (virsh domjobinfo --completed).
		last, err := d.GetJobStats(lv.DOMAIN_JOB_STATS_COMPLETED | lv.DOMAIN_JOB_STATS_KEEP_COMPLETED)
		if err != nil {
			return false, err
		}
		if last.OperationSet && last.Operation != lv.DOMAIN_JOB_OPERATION_BACKUP {
			return false, errors.New("the backup job ended and its outcome was replaced by another job's")
		}
		switch last.Type {
		case lv.DOMAIN_JOB_COMPLETED:
			return true, nil
		case lv.DOMAIN_JOB_FAILED:
			msg := "the backup job failed"
			if last.ErrorMessageSet && last.ErrorMessage != "" {
				msg += ": " + last.ErrorMessage
			}
			return false, errors.New(msg)
		}
		return false, errors.New("the backup job ended and libvirt kept no outcome of it")
	})
}

// abortBackup stops the domain's backup job after its caller gave up, and
// removes the partial copy.
func (h *Hypervisor) abortBackup(name, target string) {
	actx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := doDomain(actx, h, "abort backup", name, func(d *lv.Domain) error { return d.AbortJob() }); err != nil {
		h.log.Warn("aborting a disk backup", "domain", name, "err", err)
	}
	_ = os.Remove(target)
}
