package sim

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/virtkit/virtkit/guestagent"
	"github.com/virtkit/virtkit/hypervisor"
)

// freezeReporter is a guest agent that knows whether the guest's
// filesystems are frozen ([qgaserver.Server]).
type freezeReporter interface {
	FreezeStatus() guestagent.FreezeStatus
}

// WriteDisk models the running guest writing data at offset of the disk
// whose target device is target ("vda"): the bytes land in the disk's
// source file, as a guest's writes land in its image. It is a simulation
// capability for tests (libvirt has no such call; a real guest writes its
// own disk). While the guest's filesystems are frozen
// (guest-fsfreeze-freeze) the write is refused with an error matching
// hypervisor.ErrInvalidState, as a frozen guest's writes wait for the thaw.
func (h *Host) WriteDisk(ctx context.Context, name, target string, offset int64, data []byte) error {
	const op = "write disk"
	var path string
	err := h.do(ctx, func(time.Time) error {
		d, err := h.lookup(op, name)
		if err != nil {
			return err
		}
		if !d.running() {
			return invalidState(op, name, "domain is not running")
		}
		if fr, ok := d.agent.(freezeReporter); ok && d.agentUp && fr.FreezeStatus() == guestagent.FreezeStatusFrozen {
			return invalidState(op, name, "guest filesystems are frozen")
		}
		for _, disk := range d.spec().disks {
			if disk.target == target {
				path = disk.path
			}
		}
		if path == "" {
			return hypervisor.WrapDomain(op, name, fmt.Errorf("no file-backed disk %q: %w", target, hypervisor.ErrInvalidArgument))
		}
		return nil
	})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return hypervisor.WrapDomain(op, name, err)
	}
	if _, err := f.WriteAt(data, offset); err != nil {
		f.Close()
		return hypervisor.WrapDomain(op, name, err)
	}
	return f.Close()
}
