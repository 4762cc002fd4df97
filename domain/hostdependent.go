package domain

import (
	"fmt"
	"strconv"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit"
)

// ioThreads is how the disks of a domain get IO threads, as KubeVirt's
// converter numbers them: threads 1..auto are shared round-robin by the
// virtio disks that ask for no thread of their own, the dedicated ones
// follow; the supplementalPool policy gives every virtio disk the whole
// pool.
type ioThreads struct {
	count                  uint
	auto                   uint
	nextAuto, nextDedicate uint
	pool                   *libvirtxml.DomainDiskIOThreads
}

// ioThreadPlan sizes the IO threads by the VMI's policy: none without a
// policy and without dedicated disks; shared (the default) one for all
// the disks that ask for none of their own; auto up to two per vCPU
// requested (one when the emulator thread is isolated on dedicated CPUs);
// supplementalPool the pool's size.
func (b *builder) ioThreadPlan() *ioThreads {
	spec := &b.vmi.Spec.Domain
	var dedicated, auto uint
	for _, d := range spec.Devices.Disks {
		if boolDefault(d.DedicatedIOThread, false) {
			dedicated++
		} else {
			auto++
		}
	}
	policy := spec.IOThreadsPolicy
	if policy == nil && dedicated == 0 {
		return &ioThreads{}
	}
	if policy != nil && *policy == virtkit.IOThreadsPolicySupplementalPool {
		if spec.IOThreads == nil || spec.IOThreads.SupplementalPoolThreadCount == nil || *spec.IOThreads.SupplementalPoolThreadCount < 1 {
			b.fail("spec.domain.ioThreads.supplementalPoolThreadCount", "the supplementalPool policy needs a positive thread count")
			return &ioThreads{}
		}
		n := uint(*spec.IOThreads.SupplementalPoolThreadCount)
		pool := &libvirtxml.DomainDiskIOThreads{}
		for id := uint(1); id <= n; id++ {
			pool.IOThread = append(pool.IOThread, libvirtxml.DomainDiskIOThread{ID: id})
		}
		return &ioThreads{count: n, pool: pool}
	}
	limit := uint(1)
	if policy != nil && *policy == virtkit.IOThreadsPolicyAuto {
		cpu := spec.CPU
		if cpu == nil || !cpu.DedicatedCPUPlacement || !cpu.IsolateEmulatorThread {
			limit = 2 * requestedCPUs(spec)
		}
	}
	if auto+dedicated > limit {
		auto = uint(max(int64(limit)-int64(dedicated), 1))
	}
	return &ioThreads{count: auto + dedicated, auto: auto, nextAuto: 1, nextDedicate: auto + 1}
}

// requestedCPUs is the VMI's CPU request, else its limit, else 1, in whole
// CPUs.
func requestedCPUs(spec *virtkit.DomainSpec) uint {
	for _, rl := range []virtkit.ResourceList{spec.Resources.Requests, spec.Resources.Limits} {
		if q, ok := rl[virtkit.ResourceCPU]; ok {
			if v := q.Value(); v > 0 {
				return uint(v)
			}
			return 1
		}
	}
	return 1
}

// assign gives a virtio disk its thread (or the pool).
func (t *ioThreads) assign(d virtkit.Disk, disk *libvirtxml.DomainDisk) {
	if t.count == 0 || disk.Target == nil || disk.Target.Bus != "virtio" {
		return
	}
	switch {
	case t.pool != nil:
		disk.Driver.IOThreads = t.pool
	case boolDefault(d.DedicatedIOThread, false):
		disk.Driver.IOThread = uintp(t.nextDedicate)
		t.nextDedicate++
	default:
		disk.Driver.IOThread = uintp(t.nextAuto)
		t.nextAuto = t.nextAuto%t.auto + 1
	}
}

// blockSize writes a disk's custom block sizes. Matching the volume's
// needs the volume probed on the host, which the builder does not do.
func (b *builder) blockSize(path string, d virtkit.Disk, disk *libvirtxml.DomainDisk) {
	bs := d.BlockSize
	if bs == nil {
		return
	}
	if bs.MatchVolume != nil && (bs.MatchVolume.Enabled == nil || *bs.MatchVolume.Enabled) {
		b.unsupported(path+".blockSize.matchVolume", "the domain builder does not probe a volume's block sizes; give them in blockSize.custom")
		return
	}
	if c := bs.Custom; c != nil {
		disk.BlockIO = &libvirtxml.DomainDiskBlockIO{LogicalBlockSize: c.Logical, PhysicalBlockSize: c.Physical, DiscardGranularity: c.DiscardGranularity}
	}
}

// hostDependent writes the passthrough devices the node assigned, the
// panic and sound devices and realtime vCPUs, and refuses what a node of
// the builder's kind cannot give: guest NUMA mapped to the host's.
func (b *builder) hostDependent(dom *libvirtxml.Domain) {
	spec := &b.vmi.Spec.Domain
	dev := &spec.Devices
	b.hostDevices(dom)
	for i, p := range dev.PanicDevices {
		model := ""
		if p.Model != nil {
			model = string(*p.Model)
		}
		switch model {
		case "", string(virtkit.PanicDeviceIsa), string(virtkit.PanicDeviceHyperv), string(virtkit.PanicDevicePvpanic):
		default:
			b.fail(fmt.Sprintf("spec.domain.devices.panicDevices[%d].model", i), "unknown model %q", model)
		}
		dom.Devices.Panics = append(dom.Devices.Panics, libvirtxml.DomainPanic{Model: model})
	}
	if s := dev.Sound; s != nil {
		model := s.Model
		if model == "" {
			model = "ich9"
		}
		dom.Devices.Sounds = append(dom.Devices.Sounds, libvirtxml.DomainSound{
			Model: model, Alias: &libvirtxml.DomainAlias{Name: userAliasPrefix + s.Name},
		})
	}
	cpu := spec.CPU
	if cpu == nil {
		return
	}
	if cpu.NUMA != nil && cpu.NUMA.GuestMappingPassthrough != nil {
		b.unsupported("spec.domain.cpu.numa.guestMappingPassthrough",
			"the node gives the domain builder no host NUMA topology of its dedicated CPUs to mirror")
	}
	if rt := cpu.Realtime; rt != nil {
		b.realtime(dom, rt)
	}
}

// realtime runs the vCPUs in the mask (all by default) with the FIFO
// scheduler at priority 1, turns the PMU off and keeps the guest's memory
// out of page sharing, as KubeVirt's node does for realtime VMIs.
func (b *builder) realtime(dom *libvirtxml.Domain, rt *virtkit.Realtime) {
	if dom.CPUTune == nil {
		b.fail("spec.domain.cpu.realtime", "needs dedicatedCpuPlacement")
		return
	}
	mask := rt.Mask
	if mask == "" {
		mask = "0-" + strconv.FormatUint(uint64(b.vcpus-1), 10)
	}
	prio := 1
	dom.CPUTune.VCPUSched = append(dom.CPUTune.VCPUSched, libvirtxml.DomainCPUTuneVCPUSched{VCPUs: mask, Scheduler: "fifo", Priority: &prio})
	if dom.Features == nil {
		dom.Features = &libvirtxml.DomainFeatureList{}
	}
	dom.Features.PMU = &libvirtxml.DomainFeatureState{State: "off"}
	if dom.MemoryBacking == nil {
		dom.MemoryBacking = &libvirtxml.DomainMemoryBacking{}
	}
	dom.MemoryBacking.MemoryNosharepages = &libvirtxml.DomainMemoryNosharepages{}
}
