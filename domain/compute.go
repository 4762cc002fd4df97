package domain

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit"
)

func (b *builder) cpu(dom *libvirtxml.Domain) {
	spec := &b.vmi.Spec.Domain
	cpu := spec.CPU
	if cpu == nil {
		cpu = &virtkit.CPU{}
	}
	sockets, cores, threads := uint(cpu.Sockets), uint(cpu.Cores), uint(cpu.Threads)
	if sockets == 0 && cores == 0 && threads == 0 {
		// KubeVirt: the CPU limit (else request) becomes sockets.
		sockets = 1
		for _, rl := range []virtkit.ResourceList{spec.Resources.Limits, spec.Resources.Requests} {
			if q, ok := rl[virtkit.ResourceCPU]; ok {
				if v := q.Value(); v > 0 {
					sockets = uint(v)
				}
				break
			}
		}
	}
	if sockets == 0 {
		sockets = 1
	}
	if cores == 0 {
		cores = 1
	}
	if threads == 0 {
		threads = 1
	}
	// Bound the factors before multiplying so the count cannot wrap; the
	// object model's validation reports the same with field paths.
	maxSockets := uint(cpu.MaxSockets)
	if sockets > virtkit.MaxVCPUs || cores > virtkit.MaxVCPUs || threads > virtkit.MaxVCPUs ||
		sockets*cores*threads > virtkit.MaxVCPUs || maxSockets*cores*threads > virtkit.MaxVCPUs {
		b.fail("spec.domain.cpu", "more than %d vCPUs (sockets %d, cores %d, threads %d, maxSockets %d)",
			virtkit.MaxVCPUs, sockets, cores, threads, maxSockets)
		sockets, cores, threads, maxSockets = 1, 1, 1, 0 // the build fails; keep the rest consistent
	}
	b.vcpus = sockets * cores * threads
	dom.VCPU = &libvirtxml.DomainVCPU{Placement: "static", Value: b.vcpus}
	if ms := maxSockets; ms > sockets {
		// CPU hotplug: room for maxSockets, sockets of them online.
		dom.VCPU.Value = ms * cores * threads
		dom.VCPU.Current = b.vcpus
		sockets = ms
	}
	out := &libvirtxml.DomainCPU{
		Topology: &libvirtxml.DomainCPUTopology{Sockets: int(sockets), Cores: int(cores), Threads: int(threads)},
	}
	switch model := cpu.Model; model {
	case "", virtkit.CPUModeHostModel:
		out.Mode = "host-model"
	case virtkit.CPUModeHostPassthrough:
		out.Mode = "host-passthrough"
		if b.opts.Type == TypeQEMU {
			// TCG cannot pass the host CPU through; "maximum" is its
			// closest equivalent (every feature TCG emulates).
			out.Mode = "maximum"
			out.Migratable = "on"
		}
	default:
		out.Mode = "custom"
		out.Match = "exact"
		out.Model = &libvirtxml.DomainCPUModel{Value: model, Fallback: "forbid"}
		if b.arch == "x86_64" && !hasCPUFeature(cpu.Features, "mpx") {
			// KubeVirt: mpx is gone from current CPUs and breaks models that list it.
			out.Features = append(out.Features, libvirtxml.DomainCPUFeature{Name: "mpx", Policy: "disable"})
		}
	}
	for i, f := range cpu.Features {
		path := fmt.Sprintf("spec.domain.cpu.features[%d]", i)
		policy := f.Policy
		if policy == "" {
			policy = "require"
		}
		switch policy {
		case "force", "require", "optional", "disable", "forbid":
		default:
			b.fail(path+".policy", "unknown policy %q", f.Policy)
		}
		if f.Name == "" {
			b.fail(path+".name", "required")
		}
		out.Features = append(out.Features, libvirtxml.DomainCPUFeature{Name: f.Name, Policy: policy})
	}
	dom.CPU = out

	if cpu.DedicatedCPUPlacement {
		need := int(b.vcpus)
		if cpu.IsolateEmulatorThread {
			need++
		}
		if len(b.opts.DedicatedCPUs) < need {
			b.fail("spec.domain.cpu.dedicatedCpuPlacement", "needs %d host CPUs in Options.DedicatedCPUs, have %d: %w",
				need, len(b.opts.DedicatedCPUs), ErrNotResolved)
			return
		}
		tune := &libvirtxml.DomainCPUTune{}
		for i := range b.vcpus {
			tune.VCPUPin = append(tune.VCPUPin, libvirtxml.DomainCPUTuneVCPUPin{
				VCPU: i, CPUSet: strconv.FormatUint(uint64(b.opts.DedicatedCPUs[i]), 10),
			})
		}
		if cpu.IsolateEmulatorThread {
			tune.EmulatorPin = &libvirtxml.DomainCPUTuneEmulatorPin{
				CPUSet: strconv.FormatUint(uint64(b.opts.DedicatedCPUs[b.vcpus]), 10),
			}
		}
		dom.CPUTune = tune
	} else if cpu.IsolateEmulatorThread {
		b.fail("spec.domain.cpu.isolateEmulatorThread", "requires dedicatedCpuPlacement")
	}
}

func hasCPUFeature(fs []virtkit.CPUFeature, name string) bool {
	for _, f := range fs {
		if f.Name == name {
			return true
		}
	}
	return false
}

func (b *builder) memory(dom *libvirtxml.Domain) {
	spec := &b.vmi.Spec.Domain
	var guest uint64
	var have bool
	path := "spec.domain.memory.guest"
	if spec.Memory != nil && spec.Memory.Guest != nil {
		guest, have = quantityBytes(*spec.Memory.Guest)
		if !have {
			b.fail(path, "%s %s", spec.Memory.Guest.String(), quantityBytesProblem(*spec.Memory.Guest))
			return
		}
	} else if q, ok := spec.Resources.Requests[virtkit.ResourceMemory]; ok {
		path = "spec.domain.resources.requests.memory"
		guest, have = quantityBytes(q)
	} else if q, ok := spec.Resources.Limits[virtkit.ResourceMemory]; ok {
		path = "spec.domain.resources.limits.memory"
		guest, have = quantityBytes(q)
	}
	if !have || guest == 0 {
		b.fail(path, "the guest needs memory: set memory.guest or resources.requests.memory")
		return
	}
	dom.Memory = &libvirtxml.DomainMemory{Value: uint(guest), Unit: "b"}
	if spec.Memory != nil && spec.Memory.MaxGuest != nil {
		max, ok := quantityBytes(*spec.Memory.MaxGuest)
		switch {
		case !ok || max < guest:
			b.fail("spec.domain.memory.maxGuest", "%s is below the guest memory", spec.Memory.MaxGuest.String())
		case max > guest:
			// Memory hotplug needs a guest NUMA cell holding the boot memory.
			dom.MaximumMemory = &libvirtxml.DomainMaxMemory{Value: uint(max), Unit: "b", Slots: 16}
			dom.CPU.Numa = &libvirtxml.DomainNuma{Cell: []libvirtxml.DomainCell{{
				ID: uintp(0), CPUs: fmt.Sprintf("0-%d", dom.VCPU.Value-1), Memory: uint(guest), Unit: "b",
			}}}
			b.pluggableMemory(dom, guest, max)
		}
	}
	if spec.Memory != nil && spec.Memory.Hugepages != nil {
		size := spec.Memory.Hugepages.PageSize
		var kib uint
		switch size {
		case "2Mi":
			kib = 2048
		case "1Gi":
			kib = 1048576
		default:
			b.fail("spec.domain.memory.hugepages.pageSize", "%q is not 2Mi or 1Gi", size)
			return
		}
		dom.MemoryBacking = &libvirtxml.DomainMemoryBacking{
			MemoryHugePages: &libvirtxml.DomainMemoryHugepages{Hugepages: []libvirtxml.DomainMemoryHugepage{{Size: kib, Unit: "KiB"}}},
		}
	}
}

func (b *builder) machineType() string {
	if m := b.vmi.Spec.Domain.Machine; m != nil && m.Type != "" {
		return m.Type
	}
	switch b.arch {
	case "aarch64":
		return "virt"
	case "s390x":
		return "s390-ccw-virtio"
	}
	return b.opts.MachineType
}

func (b *builder) os(dom *libvirtxml.Domain) {
	os := &libvirtxml.DomainOS{
		Type: &libvirtxml.DomainOSType{Type: "hvm", Arch: b.arch, Machine: b.machineType()},
	}
	if b.arch == "x86_64" {
		os.SMBios = &libvirtxml.DomainSMBios{Mode: "sysinfo"}
	}
	dom.OS = os
	fw := b.vmi.Spec.Domain.Firmware
	if fw == nil {
		return
	}
	if bl := fw.Bootloader; bl != nil {
		switch {
		case bl.BIOS != nil && bl.EFI != nil:
			b.fail("spec.domain.firmware.bootloader", "bios and efi are mutually exclusive")
		case bl.EFI != nil:
			b.efiFirmware(os, bl.EFI)
		case bl.BIOS != nil:
			if b.arch != "x86_64" {
				b.unsupported("spec.domain.firmware.bootloader.bios", "BIOS exists only on x86_64")
			}
			if boolDefault(bl.BIOS.UseSerial, false) {
				if !boolDefault(b.vmi.Spec.Domain.Devices.AutoattachSerialConsole, true) {
					b.fail("spec.domain.firmware.bootloader.bios.useSerial", "needs the serial console (autoattachSerialConsole)")
				}
				os.BIOS = &libvirtxml.DomainBIOS{UseSerial: "yes"}
			}
		}
	}
	if kb := fw.KernelBoot; kb != nil {
		path := "spec.domain.firmware.kernelBoot"
		if kb.Container == nil {
			b.fail(path+".container", "required: the kernel comes from a container image")
			return
		}
		c := kb.Container
		if c.KernelPath == "" && c.InitrdPath == "" {
			b.fail(path+".container", "kernelPath or initrdPath is required")
			return
		}
		k, err := b.opts.KernelResolver.ResolveKernel(b.ctx, KernelRequest{
			Namespace: namespaceOf(b.vmi), VMIName: b.vmi.Name, UID: string(b.vmi.UID),
			Field: path + ".container", Image: c.Image, KernelPath: c.KernelPath, InitrdPath: c.InitrdPath,
			ImagePullPolicy: string(c.ImagePullPolicy), ImagePullSecret: c.ImagePullSecret,
		})
		if err != nil {
			b.errs = append(b.errs, fmt.Errorf("%s.container: %w", path, err))
			return
		}
		os.Kernel, os.Initrd, os.Cmdline = k.Kernel, k.Initrd, kb.KernelArgs
	}
}

func (b *builder) efiFirmware(os *libvirtxml.DomainOS, efi *virtkit.EFI) {
	secure := boolDefault(efi.SecureBoot, b.arch == "x86_64")
	if secure {
		f := b.vmi.Spec.Domain.Features
		if f == nil || f.SMM == nil || !boolDefault(f.SMM.Enabled, true) {
			b.fail("spec.domain.firmware.bootloader.efi.secureBoot", "secure boot needs features.smm enabled")
		}
		if b.arch != "x86_64" {
			b.unsupported("spec.domain.firmware.bootloader.efi.secureBoot", "secure boot is x86_64 only")
		}
	}
	if boolDefault(efi.Persistent, false) {
		// The NVRAM file below already outlives the domain; there is no
		// backend storage to move it between hosts.
		b.unsupported("spec.domain.firmware.bootloader.efi.persistent", "persistent EFI variables need backend storage")
	}
	b.efi = true
	code, vars := b.opts.EFI.Code, b.opts.EFI.Vars
	if secure {
		code, vars = b.opts.EFI.SecureCode, b.opts.EFI.SecureVars
	}
	if b.arch == "aarch64" {
		// Debian's qemu-efi-aarch64 firmware, unless the caller chose.
		if b.userEFI.Code == "" {
			code = "/usr/share/AAVMF/AAVMF_CODE.fd"
		}
		if b.userEFI.Vars == "" {
			vars = "/usr/share/AAVMF/AAVMF_VARS.fd"
		}
	}
	os.Loader = &libvirtxml.DomainLoader{Path: code, Readonly: "yes", Secure: yesNo(secure), Type: "pflash"}
	os.NVRam = &libvirtxml.DomainNVRam{
		NVRam:    filepath.Join(b.opts.EFI.NVRAMDir, DomainName(b.vmi)+"_VARS.fd"),
		Template: vars,
	}
}

func (b *builder) sysinfo(dom *libvirtxml.Domain) {
	if b.arch != "x86_64" {
		return
	}
	s := b.opts.SMBIOS
	entries := []libvirtxml.DomainSysInfoEntry{
		{Name: "manufacturer", Value: s.Manufacturer},
		{Name: "product", Value: s.Product},
	}
	if s.Version != "" {
		entries = append(entries, libvirtxml.DomainSysInfoEntry{Name: "version", Value: s.Version})
	}
	if fw := b.vmi.Spec.Domain.Firmware; fw != nil && fw.Serial != "" {
		entries = append(entries, libvirtxml.DomainSysInfoEntry{Name: "serial", Value: fw.Serial})
	}
	entries = append(entries, libvirtxml.DomainSysInfoEntry{Name: "uuid", Value: dom.UUID})
	if s.SKU != "" {
		entries = append(entries, libvirtxml.DomainSysInfoEntry{Name: "sku", Value: s.SKU})
	}
	entries = append(entries, libvirtxml.DomainSysInfoEntry{Name: "family", Value: s.Family})
	dom.SysInfo = []libvirtxml.DomainSysInfo{{SMBIOS: &libvirtxml.DomainSysInfoSMBIOS{
		System: &libvirtxml.DomainSysInfoSystem{Entry: entries},
	}}}
}

func featureOn(f *virtkit.FeatureState) bool { return f != nil && boolDefault(f.Enabled, true) }

func hvState(f *virtkit.FeatureState) *libvirtxml.DomainFeatureState {
	if f == nil {
		return nil
	}
	return &libvirtxml.DomainFeatureState{State: onOff(boolDefault(f.Enabled, true))}
}

func (b *builder) features(dom *libvirtxml.Domain) {
	f := b.vmi.Spec.Domain.Features
	if f == nil {
		f = &virtkit.Features{}
	}
	out := &libvirtxml.DomainFeatureList{}
	if boolDefault(f.ACPI.Enabled, true) {
		out.ACPI = &libvirtxml.DomainFeature{}
	}
	if f.APIC != nil && boolDefault(f.APIC.Enabled, true) {
		out.APIC = &libvirtxml.DomainFeatureAPIC{}
		if f.APIC.EndOfInterrupt {
			out.APIC.EOI = "on"
		}
	}
	if featureOn(f.SMM) {
		out.SMM = &libvirtxml.DomainFeatureSMM{State: "on"}
	}
	if f.Pvspinlock != nil {
		out.PVSpinlock = hvState(f.Pvspinlock)
	}
	if f.KVM != nil && f.KVM.Hidden {
		out.KVM = &libvirtxml.DomainFeatureKVM{Hidden: &libvirtxml.DomainFeatureState{State: "on"}}
	}
	if h := f.Hyperv; h != nil {
		if b.arch != "x86_64" {
			b.unsupported("spec.domain.features.hyperv", "Hyper-V enlightenments are x86_64 only")
		}
		hv := &libvirtxml.DomainFeatureHyperV{
			Relaxed:         hvState(h.Relaxed),
			VAPIC:           hvState(h.VAPIC),
			VPIndex:         hvState(h.VPIndex),
			Runtime:         hvState(h.Runtime),
			Synic:           hvState(h.SyNIC),
			Reset:           hvState(h.Reset),
			Frequencies:     hvState(h.Frequencies),
			ReEnlightenment: hvState(h.Reenlightenment),
			IPI:             hvState(h.IPI),
			EVMCS:           hvState(h.EVMCS),
		}
		if s := h.Spinlocks; s != nil {
			on := boolDefault(s.Enabled, true)
			hv.Spinlocks = &libvirtxml.DomainFeatureHyperVSpinlocks{DomainFeatureState: libvirtxml.DomainFeatureState{State: onOff(on)}}
			if on {
				retries := virtkit.DefaultHypervSpinlocks
				if s.Retries != nil {
					retries = *s.Retries
				}
				if retries < 4096 {
					b.fail("spec.domain.features.hyperv.spinlocks.spinlocks", "%d is below 4096", retries)
				}
				hv.Spinlocks.Retries = uint(retries)
			}
		}
		if v := h.VendorID; v != nil {
			on := boolDefault(v.Enabled, true)
			hv.VendorId = &libvirtxml.DomainFeatureHyperVVendorId{DomainFeatureState: libvirtxml.DomainFeatureState{State: onOff(on)}}
			if on {
				if v.VendorID == "" || len(v.VendorID) > 12 {
					b.fail("spec.domain.features.hyperv.vendorid.vendorid", "%q must be 1 to 12 characters", v.VendorID)
				}
				hv.VendorId.Value = v.VendorID
			}
		}
		if t := h.SyNICTimer; t != nil {
			hv.STimer = &libvirtxml.DomainFeatureHyperVSTimer{
				DomainFeatureState: libvirtxml.DomainFeatureState{State: onOff(boolDefault(t.Enabled, true))},
				Direct:             hvState(t.Direct),
			}
		}
		if t := h.TLBFlush; t != nil {
			hv.TLBFlush = &libvirtxml.DomainFeatureHyperVTLBFlush{
				DomainFeatureState: libvirtxml.DomainFeatureState{State: onOff(boolDefault(t.Enabled, true))},
			}
			// libvirt learned <direct>/<extended> in 9.2; Debian 12 ships 9.0.
			if t.Direct != nil {
				b.unsupported("spec.domain.features.hyperv.tlbflush.direct", "needs libvirt 9.2")
			}
			if t.Extended != nil {
				b.unsupported("spec.domain.features.hyperv.tlbflush.extended", "needs libvirt 9.2")
			}
		}
		out.HyperV = hv
	}
	if b.arch == "x86_64" {
		out.VMPort = &libvirtxml.DomainFeatureState{State: "off"}
	}
	dom.Features = out
}

func timerPresent(p *bool) string {
	if p == nil {
		return ""
	}
	return yesNo(*p)
}

func (b *builder) clock(dom *libvirtxml.Domain) {
	c := b.vmi.Spec.Domain.Clock
	out := &libvirtxml.DomainClock{Offset: "utc"}
	dom.Clock = out
	if c == nil {
		return
	}
	switch {
	case c.UTC != nil && c.Timezone != nil:
		b.fail("spec.domain.clock", "utc and timezone are mutually exclusive")
	case c.Timezone != nil:
		tz := string(*c.Timezone)
		if tz == "" || strings.ContainsAny(tz, " \t\n") {
			b.fail("spec.domain.clock.timezone", "%q is not a timezone name", tz)
		}
		out.Offset, out.TimeZone = "timezone", tz
	case c.UTC != nil && c.UTC.OffsetSeconds != nil:
		out.Adjustment = strconv.Itoa(*c.UTC.OffsetSeconds)
	}
	t := c.Timer
	if t == nil {
		return
	}
	tick := func(path string, p virtkit.TickPolicy) string {
		switch p {
		case "", virtkit.TickPolicyDelay, virtkit.TickPolicyCatchup, virtkit.TickPolicyMerge, virtkit.TickPolicyDiscard:
			return string(p)
		}
		b.fail(path, "unknown tick policy %q", p)
		return ""
	}
	if t.RTC != nil {
		track := t.RTC.Track
		switch track {
		case "", "guest", "wall":
		default:
			b.fail("spec.domain.clock.timer.rtc.track", "%q is not guest or wall", track)
		}
		out.Timer = append(out.Timer, libvirtxml.DomainTimer{Name: "rtc", Present: timerPresent(t.RTC.Enabled),
			TickPolicy: tick("spec.domain.clock.timer.rtc.tickPolicy", t.RTC.TickPolicy), Track: track})
	}
	if t.PIT != nil {
		out.Timer = append(out.Timer, libvirtxml.DomainTimer{Name: "pit", Present: timerPresent(t.PIT.Enabled),
			TickPolicy: tick("spec.domain.clock.timer.pit.tickPolicy", t.PIT.TickPolicy)})
	}
	if t.KVM != nil {
		out.Timer = append(out.Timer, libvirtxml.DomainTimer{Name: "kvmclock", Present: timerPresent(t.KVM.Enabled)})
	}
	if t.HPET != nil {
		out.Timer = append(out.Timer, libvirtxml.DomainTimer{Name: "hpet", Present: timerPresent(t.HPET.Enabled),
			TickPolicy: tick("spec.domain.clock.timer.hpet.tickPolicy", t.HPET.TickPolicy)})
	}
	if t.Hyperv != nil {
		out.Timer = append(out.Timer, libvirtxml.DomainTimer{Name: "hypervclock", Present: timerPresent(t.Hyperv.Enabled)})
	}
}
