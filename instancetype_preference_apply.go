package virtkit

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// applyPreference fills what the template leaves unset, in KubeVirt's
// order: CPU features, devices, hypervisor features, firmware, machine,
// clock, subdomain, termination grace period, annotations, architecture,
// launch security.
func applyPreference(spec *VirtualMachineInstanceSpec, meta *metav1.ObjectMeta, pref *VirtualMachinePreferenceSpec) {
	if c := pref.CPU; c != nil && len(c.PreferredCPUFeatures) > 0 {
		applyCPUFeaturePreferences(spec, c.PreferredCPUFeatures)
	}
	if d := pref.Devices; d != nil {
		applyDevicePreferences(spec, d)
	}
	if f := pref.Features; f != nil {
		applyFeaturePreferences(spec, f)
	}
	if f := pref.Firmware; f != nil {
		applyFirmwarePreferences(spec, f)
	}
	if m := pref.Machine; m != nil && m.PreferredMachineType != "" {
		if spec.Domain.Machine == nil {
			spec.Domain.Machine = &Machine{}
		}
		if spec.Domain.Machine.Type == "" {
			spec.Domain.Machine.Type = m.PreferredMachineType
		}
	}
	if c := pref.Clock; c != nil {
		applyClockPreferences(spec, c)
	}
	if s := pref.PreferredSubdomain; s != nil && spec.Subdomain == "" {
		spec.Subdomain = *s
	}
	if g := pref.PreferredTerminationGracePeriodSeconds; g != nil && spec.TerminationGracePeriodSeconds == nil {
		v := *g
		spec.TerminationGracePeriodSeconds = &v
	}
	if len(pref.Annotations) > 0 {
		if meta.Annotations == nil {
			meta.Annotations = map[string]string{}
		}
		for k, v := range pref.Annotations {
			if _, ok := meta.Annotations[k]; !ok {
				meta.Annotations[k] = v
			}
		}
	}
	if a := pref.PreferredArchitecture; a != nil && *a != "" && spec.Architecture == "" {
		spec.Architecture = *a
	}
	if ls := pref.PreferredLaunchSecurity; ls != nil && spec.Domain.LaunchSecurity == nil {
		spec.Domain.LaunchSecurity = ls.DeepCopy()
	}
}

// applyCPUFeaturePreferences adds the preferred CPU features the template
// does not name.
func applyCPUFeaturePreferences(spec *VirtualMachineInstanceSpec, features []CPUFeature) {
	if spec.Domain.CPU == nil {
		spec.Domain.CPU = &CPU{}
	}
	have := map[string]bool{}
	for _, f := range spec.Domain.CPU.Features {
		have[f.Name] = true
	}
	for _, f := range features {
		if !have[f.Name] {
			spec.Domain.CPU.Features = append(spec.Domain.CPU.Features, f)
		}
	}
}

func setBool(dst **bool, pref *bool) {
	if pref != nil && *dst == nil {
		*dst = ptrBool(*pref)
	}
}

func applyDevicePreferences(spec *VirtualMachineInstanceSpec, d *DevicePreferences) {
	dev := &spec.Domain.Devices
	setBool(&dev.UseVirtioTransitional, d.PreferredUseVirtioTransitional)
	setBool(&dev.BlockMultiQueue, d.PreferredBlockMultiQueue)
	setBool(&dev.NetworkInterfaceMultiQueue, d.PreferredNetworkInterfaceMultiQueue)
	if d.PreferredDisableHotplug != nil {
		// A plain bool in the VMI: the preference always wins, as in
		// KubeVirt.
		dev.DisableHotplug = *d.PreferredDisableHotplug
	}
	if d.PreferredSoundModel != "" && dev.Sound != nil && dev.Sound.Model == "" {
		dev.Sound.Model = d.PreferredSoundModel
	}
	if d.PreferredRng != nil && dev.Rng == nil {
		dev.Rng = d.PreferredRng.DeepCopy()
	}
	if d.PreferredTPM != nil && dev.TPM == nil {
		dev.TPM = d.PreferredTPM.DeepCopy()
	}
	if t := d.PreferredVideoType; t != nil {
		if dev.Video == nil {
			dev.Video = &VideoDevice{}
		}
		if dev.Video.Type == "" {
			dev.Video.Type = *t
		}
	}
	setBool(&dev.AutoattachGraphicsDevice, d.PreferredAutoattachGraphicsDevice)
	setBool(&dev.AutoattachMemBalloon, d.PreferredAutoattachMemBalloon)
	setBool(&dev.AutoattachPodInterface, d.PreferredAutoattachPodInterface)
	setBool(&dev.AutoattachSerialConsole, d.PreferredAutoattachSerialConsole)
	setBool(&dev.AutoattachInputDevice, d.PreferredAutoattachInputDevice)
	for i := range dev.Disks {
		applyDiskPreferences(&dev.Disks[i], d)
	}
	for i := range dev.Interfaces {
		iface := &dev.Interfaces[i]
		if d.PreferredInterfaceModel != "" && iface.Model == "" {
			iface.Model = d.PreferredInterfaceModel
		}
		if d.PreferredInterfaceMasquerade != nil && reflect.ValueOf(iface.InterfaceBindingMethod).IsZero() && iface.Binding == nil && onPodNetwork(spec, iface.Name) {
			iface.Masquerade = d.PreferredInterfaceMasquerade.DeepCopy()
		}
	}
	for i := range dev.Inputs {
		in := &dev.Inputs[i]
		if d.PreferredInputBus != "" && in.Bus == "" {
			in.Bus = d.PreferredInputBus
		}
		if d.PreferredInputType != "" && in.Type == "" {
			in.Type = d.PreferredInputType
		}
	}
	applyPreferredPanicDevices(dev, d.PreferredPanicDeviceModel)
}

func onPodNetwork(spec *VirtualMachineInstanceSpec, name string) bool {
	for _, n := range spec.Networks {
		if n.Name == name {
			return n.Pod != nil
		}
	}
	return false
}

func applyFeaturePreferences(spec *VirtualMachineInstanceSpec, f *FeaturePreferences) {
	if spec.Domain.Features == nil {
		spec.Domain.Features = &Features{}
	}
	ft := spec.Domain.Features
	if f.PreferredAcpi != nil {
		// ACPI is a value in the VMI, so the preference always wins, as in
		// KubeVirt.
		ft.ACPI = *f.PreferredAcpi.DeepCopy()
	}
	if f.PreferredApic != nil && ft.APIC == nil {
		ft.APIC = f.PreferredApic.DeepCopy()
	}
	if f.PreferredHyperv != nil {
		if ft.Hyperv == nil {
			ft.Hyperv = &FeatureHyperv{}
		}
		mergeUnsetPointers(ft.Hyperv, f.PreferredHyperv)
	}
	if f.PreferredKvm != nil && ft.KVM == nil {
		ft.KVM = f.PreferredKvm.DeepCopy()
	}
	if f.PreferredPvspinlock != nil && ft.Pvspinlock == nil {
		ft.Pvspinlock = f.PreferredPvspinlock.DeepCopy()
	}
	if f.PreferredSmm != nil && ft.SMM == nil {
		ft.SMM = f.PreferredSmm.DeepCopy()
	}
}

// mergeUnsetPointers copies each pointer field of pref (deeply) into the
// same field of dst where dst's is nil; both point to the same struct
// type.
func mergeUnsetPointers(dst, pref any) {
	d, p := reflect.ValueOf(dst).Elem(), reflect.ValueOf(pref).Elem()
	for i := range d.NumField() {
		df, pf := d.Field(i), p.Field(i)
		if df.Kind() != reflect.Pointer || !df.IsNil() || pf.IsNil() {
			continue
		}
		if dc := pf.MethodByName("DeepCopy"); dc.IsValid() {
			df.Set(dc.Call(nil)[0])
		}
	}
}

func applyClockPreferences(spec *VirtualMachineInstanceSpec, c *ClockPreferences) {
	if spec.Domain.Clock == nil {
		spec.Domain.Clock = &Clock{}
	}
	clk := spec.Domain.Clock
	// The offset is taken whole or not at all.
	if c.PreferredClockOffset != nil && clk.UTC == nil && clk.Timezone == nil {
		clk.ClockOffset = *c.PreferredClockOffset.DeepCopy()
	}
	if c.PreferredTimer != nil && clk.Timer == nil {
		clk.Timer = c.PreferredTimer.DeepCopy()
	}
}
