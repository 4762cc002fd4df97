package virtkit

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The rules of this file follow KubeVirt's VMI admission for the parts of
// a VMI that depend on what its node has: IO thread policies, guest NUMA,
// realtime vCPUs, confidential computing, passthrough, panic and sound
// devices, and disk block sizes. Feature gates are not checked here: a
// cluster's configuration is the admission chain's to apply.

var validIOThreadsPolicies = []IOThreadsPolicy{IOThreadsPolicyShared, IOThreadsPolicyAuto, IOThreadsPolicySupplementalPool}

var validPanicDeviceModels = []PanicDeviceModel{PanicDeviceHyperv, PanicDeviceIsa, PanicDevicePvpanic}

func (v *vmiValidator) hostDependent() {
	v.ioThreadsPolicy()
	v.numaAndRealtime()
	v.launchSecurity()
	v.passthrough()
	v.panicAndSound()
	dp := v.sp.Child("domain", "devices", "disks")
	for i := range v.spec.Domain.Devices.Disks {
		if bs := v.spec.Domain.Devices.Disks[i].BlockSize; bs != nil && bs.Custom != nil && bs.MatchVolume != nil {
			v.add(field.Invalid(dp.Index(i).Child("blockSize"), "custom and matchVolume",
				"custom and matchVolume are mutually exclusive"))
		}
	}
}

func (v *vmiValidator) ioThreadsPolicy() {
	p := v.spec.Domain.IOThreadsPolicy
	if p == nil {
		return
	}
	if !slices.Contains(validIOThreadsPolicies, *p) {
		v.add(field.NotSupported(v.sp.Child("domain", "ioThreadsPolicy"), *p, validIOThreadsPolicies))
	}
	if t := v.spec.Domain.IOThreads; *p == IOThreadsPolicySupplementalPool &&
		(t == nil || t.SupplementalPoolThreadCount == nil || *t.SupplementalPoolThreadCount < 1) {
		v.add(field.Invalid(v.sp.Child("domain", "ioThreads", "supplementalPoolThreadCount"), 0,
			"must be set and positive for the supplementalPool policy"))
	}
}

func (v *vmiValidator) numaAndRealtime() {
	cpu := v.spec.Domain.CPU
	if cpu == nil {
		return
	}
	cp := v.sp.Child("domain", "cpu")
	passthrough := cpu.NUMA != nil && cpu.NUMA.GuestMappingPassthrough != nil
	np := cp.Child("numa", "guestMappingPassthrough")
	if passthrough {
		if !cpu.DedicatedCPUPlacement {
			v.add(field.Invalid(np, "set", fmt.Sprintf("%s must be set to true when NUMA topology strategy is set in %s",
				cp.Child("dedicatedCpuPlacement"), np)))
		}
		if m := v.spec.Domain.Memory; m == nil || m.Hugepages == nil {
			v.add(field.Invalid(np, "set", fmt.Sprintf("%s must be requested when NUMA topology strategy is set in %s",
				v.sp.Child("domain", "memory", "hugepages"), np)))
		}
	}
	if cpu.Realtime == nil {
		return
	}
	if !cpu.DedicatedCPUPlacement {
		v.add(field.Required(cp.Child("dedicatedCpuPlacement"), fmt.Sprintf("must be set to true when %s is used", cp.Child("realtime"))))
	}
	if !passthrough {
		v.add(field.Required(np, fmt.Sprintf("must be defined when %s is used", cp.Child("realtime"))))
	}
}

func (v *vmiValidator) launchSecurity() {
	ls := v.spec.Domain.LaunchSecurity
	if ls == nil {
		return
	}
	lp := v.sp.Child("domain", "launchSecurity")
	arch := v.spec.Architecture
	if arch == "" {
		arch = DefaultArchitecture
	}
	switch arch {
	case "s390x":
		return // Secure Execution has no settings of its own
	case "amd64":
	default:
		v.add(field.Invalid(v.sp.Child("architecture"), arch, "no launchSecurity support for architecture "+arch))
		return
	}
	var kinds []string
	for _, k := range []struct {
		set  bool
		name string
	}{{ls.SEV != nil, "SEV"}, {ls.SNP != nil, "SNP"}, {ls.TDX != nil, "TDX"}} {
		if k.set {
			kinds = append(kinds, k.name)
		}
	}
	if len(kinds) != 1 {
		v.add(field.Forbidden(lp, "one and only one launchSecurity type can be set"))
		return
	}
	if f := v.spec.Domain.Features; ls.TDX != nil && f != nil && f.SMM != nil && (f.SMM.Enabled == nil || *f.SMM.Enabled) {
		v.add(field.Invalid(lp, kinds[0], "TDX does not work along with SMM"))
	}
	fw := v.spec.Domain.Firmware
	if fw == nil || fw.Bootloader == nil || fw.Bootloader.EFI == nil {
		v.add(field.Invalid(lp, kinds[0], kinds[0]+" requires OVMF (UEFI)"))
		return
	}
	efi := fw.Bootloader.EFI
	if ls.TDX == nil && (efi.SecureBoot == nil || *efi.SecureBoot) {
		v.add(field.Invalid(lp, kinds[0], kinds[0]+" does not work along with SecureBoot"))
	}
	if ls.SEV == nil && efi.Persistent != nil && *efi.Persistent {
		v.add(field.Invalid(lp, kinds[0], kinds[0]+" does not work along with Persistent EFI variables"))
	}
	if ls.SEV != nil && ls.SEV.Attestation != nil && (v.spec.StartStrategy == nil || *v.spec.StartStrategy != StartStrategyPaused) {
		v.add(field.Invalid(lp, kinds[0], "SEV attestation requires VMI StartStrategy 'Paused'"))
	}
}

func (v *vmiValidator) passthrough() {
	dp := v.sp.Child("domain", "devices")
	names := map[string]bool{}
	check := func(p *field.Path, name, deviceName string, claim *string) {
		switch {
		case name == "":
			v.add(field.Required(p.Child("name"), ""))
		case names[name]:
			v.add(field.Duplicate(p.Child("name"), name))
		}
		names[name] = true
		if deviceName == "" && claim == nil {
			v.add(field.Required(p.Child("deviceName"), "a device name or a claim name is required"))
		}
	}
	for i, g := range v.spec.Domain.Devices.GPUs {
		check(dp.Child("gpus").Index(i), g.Name, g.DeviceName, g.ClaimName)
	}
	for i, h := range v.spec.Domain.Devices.HostDevices {
		check(dp.Child("hostDevices").Index(i), h.Name, h.DeviceName, h.ClaimName)
	}
}

func (v *vmiValidator) panicAndSound() {
	dev := &v.spec.Domain.Devices
	dp := v.sp.Child("domain", "devices")
	if len(dev.PanicDevices) > 0 && v.spec.Architecture == "s390x" {
		v.add(field.Invalid(dp.Child("panicDevices"), len(dev.PanicDevices), "custom panic devices are not supported on s390x architecture"))
	}
	for i, pd := range dev.PanicDevices {
		if pd.Model != nil && !slices.Contains(validPanicDeviceModels, *pd.Model) {
			v.add(field.NotSupported(dp.Child("panicDevices").Index(i).Child("model"), *pd.Model, validPanicDeviceModels))
		}
	}
	if s := dev.Sound; s != nil {
		if s.Model != "" && s.Model != "ich9" && s.Model != "ac97" {
			v.add(field.NotSupported(dp.Child("sound", "model"), s.Model, []string{"ich9", "ac97"}))
		}
		if s.Name == "" {
			v.add(field.Required(dp.Child("sound", "name"), "a sound device needs a name"))
		}
	}
}
