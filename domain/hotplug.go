package domain

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit"
)

// ErrNoSuchDisk is returned by HotplugDisk for a name no disk of the VMI
// carries.
var ErrNoSuchDisk = errors.New("no such disk")

// HotplugDisk builds the libvirt disk of the VMI's disk named name, as
// Build places it, for attaching it to the running domain: the volume of
// that name is resolved (only it), and a disk without a target recorded
// in the VMI's status gets the first target of its bus's prefix not in
// taken (the targets the running domain uses). Hot-plugged disks go on the
// scsi bus, on the virtio-scsi controller every domain has.
func HotplugDisk(ctx context.Context, vmi *virtkit.VirtualMachineInstance, opts Options, name string, taken []string) (*libvirtxml.DomainDisk, error) {
	if vmi == nil {
		return nil, errors.New("domain: nil VirtualMachineInstance")
	}
	b := &builder{ctx: ctx, vmi: vmi, opts: opts.withDefaults(), userEFI: opts.EFI, bootOrders: map[uint]string{}}
	b.arch = b.opts.Arch
	if b.arch == "" {
		b.arch = "x86_64"
		switch vmi.Spec.Architecture {
		case "arm64":
			b.arch = "aarch64"
		case "s390x":
			b.arch = "s390x"
		}
	}
	b.vcpus = 1
	if cpu := vmi.Spec.Domain.CPU; cpu != nil && cpu.Sockets*cpu.Cores*cpu.Threads > 0 {
		b.vcpus = uint(cpu.Sockets * cpu.Cores * cpu.Threads)
	}
	vi := -1
	for i, v := range vmi.Spec.Volumes {
		if v.Name == name {
			vi = i
		}
	}
	reserved := append([]string(nil), taken...)
	known := ""
	for _, vs := range vmi.Status.VolumeStatus {
		if vs.Name == name {
			known = vs.Target
		}
	}
	for i, d := range vmi.Spec.Domain.Devices.Disks {
		if d.Name != name {
			continue
		}
		if vi < 0 {
			return nil, fmt.Errorf("spec.domain.devices.disks[%d].name: no volume named %q", i, name)
		}
		disk := b.disk(fmt.Sprintf("spec.domain.devices.disks[%d]", i), d, vi, known, newTargetAllocator(reserved...))
		if err := errors.Join(b.errs...); err != nil {
			return nil, err
		}
		if disk == nil {
			return nil, fmt.Errorf("spec.domain.devices.disks[%d]: no disk built", i)
		}
		return disk, nil
	}
	return nil, fmt.Errorf("disk %q: %w", name, ErrNoSuchDisk)
}

// DiskName returns the name of the VMI disk a domain disk was built from
// (from its user alias, which libvirt keeps in the live XML), and false
// for a disk Build did not make from a VMI disk.
func DiskName(d *libvirtxml.DomainDisk) (string, bool) {
	if d == nil || d.Alias == nil || !strings.HasPrefix(d.Alias.Name, userAliasPrefix) {
		return "", false
	}
	return strings.TrimPrefix(d.Alias.Name, userAliasPrefix), true
}
