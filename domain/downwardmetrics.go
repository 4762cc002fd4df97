package domain

import (
	"path/filepath"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit"
)

// A downwardMetrics volume is attached as KubeVirt's converter attaches
// it: a read-only raw file disk on the virtio bus whose driver carries no
// error policy and no discard, backed by the VMI's vhostmd disk
// (DownwardMetricsDisk). The node creates that file before the domain is
// defined and keeps it current; the builder does no I/O.

// DownwardMetricsChannel is the name of the virtio-serial port on which
// the guest asks for the downward metrics (devices.downwardMetrics).
const DownwardMetricsChannel = "org.github.vhostmd.1"

// DownwardMetricsSocket is the host unix socket of a VMI's downward
// metrics channel: QEMU listens on it and the node connects, as KubeVirt's
// virt-handler does.
func DownwardMetricsSocket(vmi *virtkit.VirtualMachineInstance, opts Options) string {
	return filepath.Join(RuntimeDir(vmi, opts.withDefaults()), "downwardmetrics.sock")
}

func downwardMetricsChannel(vmi *virtkit.VirtualMachineInstance, opts Options) libvirtxml.DomainChannel {
	return libvirtxml.DomainChannel{
		Source: &libvirtxml.DomainChardevSource{UNIX: &libvirtxml.DomainChardevSourceUNIX{
			Mode: "bind", Path: DownwardMetricsSocket(vmi, opts),
		}},
		Target: &libvirtxml.DomainChannelTarget{VirtIO: &libvirtxml.DomainChannelTargetVirtIO{Name: DownwardMetricsChannel}},
	}
}

// VolumeDownwardMetrics is the kind of a downwardMetrics volume.
const VolumeDownwardMetrics VolumeKind = "downwardMetrics"

// DownwardMetricsDisk is the host file of a VMI's downward metrics disk.
func DownwardMetricsDisk(vmi *virtkit.VirtualMachineInstance, opts Options) string {
	return filepath.Join(RuntimeDir(vmi, opts.withDefaults()), "downwardmetrics", "vhostmd0")
}

// HasDownwardMetricsVolume says whether vmi has a downwardMetrics volume.
func HasDownwardMetricsVolume(vmi *virtkit.VirtualMachineInstance) bool {
	for i := range vmi.Spec.Volumes {
		if vmi.Spec.Volumes[i].DownwardMetrics != nil {
			return true
		}
	}
	return false
}

// downwardMetricsVolume is the host source of the downwardMetrics volume.
func (b *builder) downwardMetricsVolume() HostVolume {
	return HostVolume{Type: SourceFile, Path: DownwardMetricsDisk(b.vmi, b.opts), Format: "raw", ReadOnly: true}
}

// downwardMetricsDisk adjusts the disk of volume vi when it is the
// downwardMetrics volume: virtio only, and KubeVirt's bare driver.
func (b *builder) downwardMetricsDisk(path string, vi int, bus virtkit.DiskBus, out *libvirtxml.DomainDisk) bool {
	if vi < 0 || b.vmi.Spec.Volumes[vi].DownwardMetrics == nil {
		return true
	}
	if out.Device != "disk" {
		b.fail(path, "a downwardMetrics volume must be attached as a disk, not a %s", out.Device)
		return false
	}
	if bus != virtkit.DiskBusVirtio {
		b.fail(path+".disk.bus", "a downwardMetrics disk needs the virtio bus, not %q", bus)
		return false
	}
	if out.Driver != nil {
		out.Driver.ErrorPolicy, out.Driver.Discard = "", ""
	}
	return true
}
