package virtkit

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Rules 16-20, with KubeVirt's paths: every memory size problem is
// reported at resources.requests.memory (or limits.memory), hugepages
// included.
func (v *vmiValidator) resources() {
	dom := &v.spec.Domain
	rp := v.sp.Child("domain", "resources")
	v.add(validateResourceList(dom.Resources.Requests, rp.Child("requests"))...)
	v.add(validateResourceList(dom.Resources.Limits, rp.Child("limits"))...)
	reqMem, hasReqMem := dom.Resources.Requests[ResourceMemory]
	limMem, hasLimMem := dom.Resources.Limits[ResourceMemory]
	var guest *resource.Quantity
	var hugepages *Hugepages
	if dom.Memory != nil {
		guest, hugepages = dom.Memory.Guest, dom.Memory.Hugepages
	}
	mp := v.sp.Child("domain", "memory")
	oneM := resource.MustParse("1M")
	if hasReqMem && reqMem.Sign() > 0 && reqMem.Cmp(oneM) < 0 { // rule 17
		v.add(field.Invalid(rp.Child("requests", string(ResourceMemory)), reqMem.String(), "must be greater than or equal to 1M."))
	}
	if hasReqMem && hasLimMem && limMem.Sign() > 0 && reqMem.Cmp(limMem) > 0 {
		v.add(field.Invalid(rp.Child("requests", string(ResourceMemory)), reqMem.String(),
			fmt.Sprintf("%s is greater than the memory limit %s", reqMem.String(), limMem.String())))
	}
	if dom.Memory != nil && dom.Memory.MaxGuest != nil {
		v.add(validateQuantityRange(ResourceMemory, *dom.Memory.MaxGuest, mp.Child("maxGuest"))...)
	}
	if guest != nil {
		// Rule 18: memory.guest may exceed limits.memory, as under
		// KubeVirt's default LiveUpdate rollout strategy.
		v.add(validateQuantityRange(ResourceMemory, *guest, mp.Child("guest"))...)
		if guest.Sign() < 0 {
			v.add(field.Invalid(mp.Child("guest"), guest.String(), "must not be negative"))
		}
	}
	if hugepages != nil { // rule 19
		size, err := resource.ParseQuantity(hugepages.PageSize)
		if err != nil || size.Sign() <= 0 {
			v.add(field.Invalid(mp.Child("hugepages", "pageSize"), hugepages.PageSize, "must be a page size such as 2Mi or 1Gi"))
		} else {
			// The memory that must hold whole pages: the request, else
			// memory.guest, else the limit.
			var mem int64
			switch {
			case hasReqMem && reqMem.Value() != 0:
				mem = reqMem.Value()
			case guest != nil && guest.Value() != 0:
				mem = guest.Value()
			case hasLimMem:
				mem = limMem.Value()
			}
			if mem != 0 && mem < size.Value() {
				v.add(field.Invalid(rp.Child("requests", string(ResourceMemory)), mem,
					fmt.Sprintf("must be equal to or larger than the hugepage size %s", hugepages.PageSize)))
			} else if mem%size.Value() != 0 {
				v.add(field.Invalid(rp.Child("requests", string(ResourceMemory)), mem,
					fmt.Sprintf("is not a multiple of the hugepage size %s", hugepages.PageSize)))
			}
		}
	}
	reqCPU, hasReqCPU := dom.Resources.Requests[ResourceCPU]
	limCPU, hasLimCPU := dom.Resources.Limits[ResourceCPU]
	if hasReqCPU && hasLimCPU && limCPU.Sign() > 0 && reqCPU.Cmp(limCPU) > 0 { // rule 20
		v.add(field.Invalid(rp.Child("requests", string(ResourceCPU)), reqCPU.String(),
			fmt.Sprintf("%s is greater than the cpu limit %s", reqCPU.String(), limCPU.String())))
	}
}

// Rules 21-23.
func (v *vmiValidator) cpu() {
	cpu := v.spec.Domain.CPU
	if cpu == nil {
		return
	}
	cp := v.sp.Child("domain", "cpu")
	v.add(validateCPUTopology(cpu, cp)...)
	if cpu.MaxSockets != 0 && cpu.Sockets > cpu.MaxSockets { // rule 22
		v.add(field.Invalid(cp.Child("sockets"), cpu.Sockets, "Number of sockets in CPU topology is greater than the maximum sockets allowed"))
	}
	if cpu.IsolateEmulatorThread && !cpu.DedicatedCPUPlacement { // rule 21
		v.add(field.Invalid(cp.Child("isolateEmulatorThread"), true, "IsolateEmulatorThread should be only set in combination with DedicatedCPUPlacement"))
	}
	if cpu.DedicatedCPUPlacement {
		v.dedicatedCPUs(cpu, cp)
	}
	policies := []string{"", "force", "require", "optional", "disable", "forbid"}
	for i, f := range cpu.Features { // rule 23
		fp := cp.Child("features").Index(i)
		if f.Name == "" {
			v.add(field.Required(fp.Child("name"), ""))
		}
		if !slices.Contains(policies, f.Policy) {
			v.add(field.NotSupported(fp.Child("policy"), f.Policy, policies[1:]))
		}
	}
}

// Rule 25 and firmware fields.
func (v *vmiValidator) firmware() {
	fw := v.spec.Domain.Firmware
	if fw == nil {
		return
	}
	fp := v.sp.Child("domain", "firmware")
	if fw.UUID != "" && !IsValidUUID(string(fw.UUID)) {
		v.add(field.Invalid(fp.Child("uuid"), fw.UUID, "must be a UUID such as 5d307ca9-b3ef-428c-8861-06e72d69f223"))
	}
	if bl := fw.Bootloader; bl != nil {
		if bl.BIOS != nil && bl.EFI != nil {
			v.add(field.Invalid(fp.Child("bootloader"), "bios, efi", "only one of bios and efi may be set"))
		}
		if efi := bl.EFI; efi != nil {
			secure := v.spec.Architecture != "arm64"
			if efi.SecureBoot != nil {
				secure = *efi.SecureBoot
			}
			var smm *FeatureState
			if v.spec.Domain.Features != nil {
				smm = v.spec.Domain.Features.SMM
			}
			if secure && !featureOn(smm) {
				v.add(field.Invalid(v.sp.Child("domain"), "secureBoot without smm",
					"EFI SecureBoot is enabled; SecureBoot requires SMM, which is currently disabled (set spec.domain.features.smm)"))
			}
		}
	}
	if kb := fw.KernelBoot; kb != nil {
		kp := fp.Child("kernelBoot")
		if kb.Container == nil {
			if kb.KernelArgs != "" {
				v.add(field.Invalid(kp.Child("kernelArgs"), kb.KernelArgs, "kernel arguments need a kernel boot container"))
			}
		} else {
			if kb.Container.Image == "" {
				v.add(field.Required(kp.Child("container", "image"), ""))
			}
			if kb.Container.KernelPath == "" && kb.Container.InitrdPath == "" {
				v.add(field.Required(kp.Child("container"), "at least one of kernelPath and initrdPath is required"))
			}
			for _, f := range []struct{ name, val string }{{"kernelPath", kb.Container.KernelPath}, {"initrdPath", kb.Container.InitrdPath}} {
				if f.val != "" {
					if e := absolutePath(f.val, kp.Child("container", f.name)); e != nil {
						v.add(e)
					}
				}
			}
			v.pullPolicy(kb.Container.ImagePullPolicy, kp.Child("container", "imagePullPolicy"))
		}
	}
}

func (v *vmiValidator) features() {
	f := v.spec.Domain.Features
	if f == nil || f.Hyperv == nil {
		return
	}
	hp := v.sp.Child("domain", "features", "hyperv")
	if s := f.Hyperv.Spinlocks; s != nil && s.Retries != nil && *s.Retries < DefaultHypervSpinlocks {
		v.add(field.Invalid(hp.Child("spinlocks", "spinlocks"), *s.Retries, "must be at least 4096"))
	}
	if vid := f.Hyperv.VendorID; vid != nil && len(vid.VendorID) > 12 {
		v.add(field.TooLong(hp.Child("vendorid", "vendorid"), vid.VendorID, 12))
	}
}

func (v *vmiValidator) clock() {
	c := v.spec.Domain.Clock
	if c == nil {
		return
	}
	cp := v.sp.Child("domain", "clock")
	if c.UTC != nil && c.Timezone != nil {
		v.add(field.Invalid(cp, "utc, timezone", "only one of utc and timezone may be set"))
	}
	if t := c.Timer; t != nil {
		valid := []TickPolicy{TickPolicyDelay, TickPolicyCatchup, TickPolicyMerge, TickPolicyDiscard}
		check := func(tp TickPolicy, name string) {
			if tp != "" && !slices.Contains(valid, tp) {
				v.add(field.NotSupported(cp.Child("timer", name, "tickPolicy"), tp, valid))
			}
		}
		if t.HPET != nil {
			check(t.HPET.TickPolicy, "hpet")
		}
		if t.PIT != nil {
			check(t.PIT.TickPolicy, "pit")
		}
		if t.RTC != nil {
			check(t.RTC.TickPolicy, "rtc")
			if tr := t.RTC.Track; tr != "" && tr != "guest" && tr != "wall" {
				v.add(field.NotSupported(cp.Child("timer", "rtc", "track"), tr, []string{"guest", "wall"}))
			}
		}
	}
}
