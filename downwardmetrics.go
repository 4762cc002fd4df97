package virtkit

import "k8s.io/apimachinery/pkg/util/validation/field"

// DownwardMetricsVolumeSource (volumes[].downwardMetrics: {}) gives the
// guest a small read-only virtio disk in vhostmd's on-disk format that the
// node rewrites every few seconds with metrics of the host and of the VM
// (host name, memory, CPU time...), as KubeVirt's virt-handler does. Tools
// such as vm-dump-metrics read it inside the guest.
type DownwardMetricsVolumeSource struct{}

// DownwardMetrics (devices.downwardMetrics: {}) is a virtio-serial port
// named org.github.vhostmd.1: the guest writes "GET /metrics/XML" and a
// blank line, and the node answers with the same metrics document the
// downwardMetrics volume carries, followed by a blank line.
type DownwardMetrics struct{}

// downwardMetricsVolumes checks the downwardMetrics volumes as KubeVirt's
// admission does: at most one, and its disk a virtio disk (the metrics
// disk is a plain virtio block device in the guest).
func (v *vmiValidator) downwardMetricsVolumes(volPath *field.Path) {
	name, n := "", 0
	for i := range v.spec.Volumes {
		if v.spec.Volumes[i].DownwardMetrics != nil {
			if n == 0 {
				name = v.spec.Volumes[i].Name
			}
			n++
		}
	}
	if n > 1 {
		v.add(field.Invalid(volPath, n, "must have at most one downwardMetrics volume"))
	}
	if n == 0 {
		return
	}
	dp := v.sp.Child("domain", "devices", "disks")
	for i, d := range v.spec.Domain.Devices.Disks {
		if d.Name != name {
			continue
		}
		switch {
		case d.Disk == nil:
			v.add(field.Invalid(dp.Index(i), d.Name, "a downwardMetrics volume must be attached as a disk"))
		case d.Disk.Bus != "" && d.Disk.Bus != DiskBusVirtio:
			v.add(field.Invalid(dp.Index(i).Child("disk", "bus"), d.Disk.Bus, "a downwardMetrics disk needs the virtio bus"))
		}
	}
}
