package domain

import (
	"libvirt.org/go/libvirtxml"
)

// Block sizes of the virtio-mem device memory hot-plug goes through, as
// KubeVirt sizes it: QEMU's recommended 2MiB (a transparent huge page),
// 1GiB with 1Gi huge pages.
const (
	hotplugBlock        = 2 << 20
	hotplugBlockHuge1Gi = 1 << 30
)

// pluggableMemory adds the virtio-mem device memory hot-plug raises the
// guest's memory through, from guest (its boot memory, in the domain's
// NUMA cell 0) up to max: KubeVirt's device on x86_64 (size max-guest,
// KubeVirt's block size, nothing requested at boot). Sizes that are not
// multiples of the block size leave the device out: such a guest cannot
// get memory hot-plugged, which KubeVirt's LiveUpdate validation refuses
// as well (the VM then needs a restart to change its memory).
func (b *builder) pluggableMemory(dom *libvirtxml.Domain, guest, max uint64) {
	if b.arch != "x86_64" || max <= guest {
		return
	}
	block := uint64(hotplugBlock)
	if m := b.vmi.Spec.Domain.Memory; m != nil && m.Hugepages != nil && m.Hugepages.PageSize == "1Gi" {
		block = hotplugBlockHuge1Gi
	}
	if guest%block != 0 || max%block != 0 {
		return
	}
	if dom.Devices == nil {
		dom.Devices = &libvirtxml.DomainDeviceList{}
	}
	node := uint(0)
	dom.Devices.Memorydevs = append(dom.Devices.Memorydevs, libvirtxml.DomainMemorydev{
		Model: "virtio-mem",
		Target: &libvirtxml.DomainMemorydevTarget{
			Size:      &libvirtxml.DomainMemorydevTargetSize{Value: uint(max - guest), Unit: "b"},
			Node:      &libvirtxml.DomainMemorydevTargetNode{Value: node},
			Block:     &libvirtxml.DomainMemorydevTargetBlock{Value: uint(block), Unit: "b"},
			Requested: &libvirtxml.DomainMemorydevTargetRequested{Value: 0, Unit: "b"},
		},
	})
}
