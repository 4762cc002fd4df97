package virtkit

import (
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ApplyInstancetype expands an instance type and a preference (either
// may be nil) into tmpl, a VM's template, as KubeVirt does when
// it creates a VM's VMI: the instance type's CPU (laid out as the
// preference's preferred topology says, sockets by default), memory,
// hugepages, node selector, scheduler and annotations; then the
// preference's defaults wherever the template leaves a field unset.
//
// A preference whose requirements are unmet is reported alone, first: an
// Invalid error at spec.instancetype when the instance type gives too
// little, else at the template's CPU or memory field (a preference-only
// VM's vCPUs count only in the preferred topology's field). A template
// field the instance type also sets is a conflict: each is returned as
// an Invalid error at its path under base (KubeVirt reports them under
// spec.template.spec). Every field is applied, including those a node
// may be unable to run (passthrough devices, guest NUMA, realtime vCPUs,
// confidential computing): the node says so, with the field's path. A
// preference's preferredStorageClassName changes the VM's
// dataVolumeTemplates, not its template (see
// ApplyPreferredStorageClass). On any error tmpl is left as it was.
func ApplyInstancetype(tmpl *VirtualMachineInstanceTemplateSpec, it *VirtualMachineInstancetypeSpec, pref *VirtualMachinePreferenceSpec, base *field.Path) field.ErrorList {
	out := tmpl.DeepCopy()
	// Requirements are checked against the template as the VM gives it
	// (a preference-only VM's own CPU and memory).
	// KubeVirt reports an unmet requirement alone, before any conflict.
	if errs := checkRequirements(it, pref, &tmpl.Spec, base); len(errs) > 0 {
		return errs
	}
	var errs field.ErrorList
	if it != nil {
		// In KubeVirt's order: scheduling, CPU, memory, annotations.
		errs = append(errs, applyInstancetypeScheduling(&out.Spec, it, base)...)
		errs = append(errs, applyInstancetypeCPU(&out.Spec, it, pref, base)...)
		errs = append(errs, applyInstancetypeMemory(&out.Spec, it, base)...)
		errs = append(errs, applyInstancetypeHost(&out.Spec, it, base)...)
		errs = append(errs, applyInstancetypeAnnotations(&out.ObjectMeta, it)...)
	}
	if pref != nil {
		errs = append(errs, checkArchitecture(&out.Spec, pref, base)...)
	}
	if len(errs) > 0 {
		return errs
	}
	if pref != nil {
		applyPreference(&out.Spec, &out.ObjectMeta, pref)
	}
	*tmpl = *out
	return nil
}

// applyInstancetypeAnnotations adds the instance type's annotations to
// the template's; a key the template has with another value conflicts
// (at annotations.<key>, as KubeVirt reports it).
func applyInstancetypeAnnotations(meta *metav1.ObjectMeta, it *VirtualMachineInstancetypeSpec) field.ErrorList {
	var errs field.ErrorList
	for _, k := range sortedKeys(it.Annotations) {
		v := it.Annotations[k]
		if have, ok := meta.Annotations[k]; ok {
			if have != v {
				errs = append(errs, conflict(field.NewPath("annotations", k), have))
			}
			continue
		}
		if meta.Annotations == nil {
			meta.Annotations = map[string]string{}
		}
		meta.Annotations[k] = v
	}
	return errs
}

func conflict(p *field.Path, v any) *field.Error {
	return field.Invalid(p, v, "conflicts with the VM's instancetype")
}

func applyInstancetypeCPU(spec *VirtualMachineInstanceSpec, it *VirtualMachineInstancetypeSpec, pref *VirtualMachinePreferenceSpec, base *field.Path) field.ErrorList {
	var errs field.ErrorList
	dp := base.Child("domain")
	if c := spec.Domain.CPU; c != nil {
		cp := dp.Child("cpu")
		for _, f := range []struct {
			name string
			set  bool
			v    any
		}{
			{"sockets", c.Sockets != 0, c.Sockets}, {"cores", c.Cores != 0, c.Cores}, {"threads", c.Threads != 0, c.Threads},
			{"model", c.Model != "" && it.CPU.Model != nil, c.Model},
			{"dedicatedCPUPlacement", c.DedicatedCPUPlacement && it.CPU.DedicatedCPUPlacement != nil, c.DedicatedCPUPlacement},
			{"isolateEmulatorThread", c.IsolateEmulatorThread && it.CPU.IsolateEmulatorThread != nil, c.IsolateEmulatorThread},
			{"numa", c.NUMA != nil && it.CPU.NUMA != nil, "set"},
			{"realtime", c.Realtime != nil && it.CPU.Realtime != nil, "set"},
		} {
			if f.set {
				errs = append(errs, conflict(cp.Child(f.name), f.v))
			}
		}
	}
	rp := dp.Child("resources")
	if q, ok := spec.Domain.Resources.Requests[ResourceCPU]; ok {
		errs = append(errs, conflict(rp.Child("requests", string(ResourceCPU)), q.String()))
	}
	if q, ok := spec.Domain.Resources.Limits[ResourceCPU]; ok {
		errs = append(errs, conflict(rp.Child("limits", string(ResourceCPU)), q.String()))
	}
	sockets, cores, threads, err := topology(it.CPU.Guest, pref)
	if err != nil {
		errs = append(errs, field.Invalid(field.NewPath("spec", "preference"), it.CPU.Guest, err.Error()))
	}
	if len(errs) > 0 {
		return errs
	}
	if spec.Domain.CPU == nil {
		spec.Domain.CPU = &CPU{}
	}
	c := spec.Domain.CPU
	c.Sockets, c.Cores, c.Threads = sockets, cores, threads
	if it.CPU.Model != nil {
		c.Model = *it.CPU.Model
	}
	if it.CPU.DedicatedCPUPlacement != nil {
		c.DedicatedCPUPlacement = *it.CPU.DedicatedCPUPlacement
	}
	if it.CPU.IsolateEmulatorThread != nil {
		c.IsolateEmulatorThread = *it.CPU.IsolateEmulatorThread
	}
	if it.CPU.NUMA != nil {
		c.NUMA = it.CPU.NUMA.DeepCopy()
	}
	if it.CPU.Realtime != nil {
		c.Realtime = it.CPU.Realtime.DeepCopy()
	}
	if it.CPU.MaxSockets != nil {
		c.MaxSockets = *it.CPU.MaxSockets
	}
	return nil
}

// topology lays guest vCPUs out as the preference prefers.
func topology(guest uint32, pref *VirtualMachinePreferenceSpec) (sockets, cores, threads uint32, err error) {
	if guest == 1 {
		return 1, 1, 1, nil // one vCPU is one socket whatever the preference
	}
	switch preferredTopology(pref) {
	case PreferCores:
		return 1, guest, 1, nil
	case PreferThreads:
		return 1, 1, guest, nil
	case PreferSpread:
		ratio, across := spreadOptions(pref)
		switch across {
		case SpreadAcrossCoresThreads:
			if ratio == 0 || guest%ratio != 0 {
				return 0, 0, 0, fmt.Errorf("%d vCPUs cannot be spread across cores and threads with ratio %d", guest, ratio)
			}
			return 1, guest / ratio, ratio, nil
		case SpreadAcrossSocketsCoresThreads:
			if ratio == 0 || guest%(2*ratio) != 0 {
				return 0, 0, 0, fmt.Errorf("%d vCPUs cannot be spread across sockets, cores and threads with ratio %d", guest, ratio)
			}
			return guest / (2 * ratio), ratio, 2, nil
		default:
			if ratio == 0 || guest%ratio != 0 {
				return 0, 0, 0, fmt.Errorf("%d vCPUs cannot be spread across sockets and cores with ratio %d", guest, ratio)
			}
			return guest / ratio, ratio, 1, nil
		}
	default: // sockets, any
		return guest, 1, 1, nil
	}
}

// preferredTopology is the preference's topology in its current spelling,
// sockets when it names none.
func preferredTopology(pref *VirtualMachinePreferenceSpec) PreferredCPUTopology {
	t := PreferSockets
	if pref != nil && pref.CPU != nil && pref.CPU.PreferredCPUTopology != nil {
		t = *pref.CPU.PreferredCPUTopology
	}
	switch t {
	case DeprecatedPreferSockets:
		return PreferSockets
	case DeprecatedPreferCores:
		return PreferCores
	case DeprecatedPreferThreads:
		return PreferThreads
	case DeprecatedPreferSpread:
		return PreferSpread
	case DeprecatedPreferAny:
		return PreferAny
	}
	return t
}

// spreadOptions are the spread topology's ratio (2 unless
// spreadOptions.ratio or the older preferSpreadSocketToCoreRatio says)
// and what it spreads across (sockets and cores by default).
func spreadOptions(pref *VirtualMachinePreferenceSpec) (uint32, string) {
	ratio, across := uint32(2), SpreadAcrossSocketsCores
	if pref == nil {
		return ratio, across
	}
	if pref.PreferSpreadSocketToCoreRatio != 0 {
		ratio = pref.PreferSpreadSocketToCoreRatio
	}
	if pref.CPU != nil && pref.CPU.SpreadOptions != nil {
		if so := pref.CPU.SpreadOptions; so.Across != nil {
			across = *so.Across
		}
		if so := pref.CPU.SpreadOptions; so.Ratio != nil {
			ratio = *so.Ratio
		}
	}
	return ratio, across
}

func applyInstancetypeMemory(spec *VirtualMachineInstanceSpec, it *VirtualMachineInstancetypeSpec, base *field.Path) field.ErrorList {
	// KubeVirt reports the first memory conflict only, in this order.
	dp := base.Child("domain")
	rp := dp.Child("resources")
	m := spec.Domain.Memory
	if m == nil {
		m = &Memory{}
	}
	var errs field.ErrorList
	switch q, hasReq := spec.Domain.Resources.Requests[ResourceMemory]; {
	case m.Guest != nil:
		errs = append(errs, conflict(dp.Child("memory", "guest"), m.Guest.String()))
	case m.Hugepages != nil && it.Memory.Hugepages != nil:
		errs = append(errs, conflict(dp.Child("memory", "hugepages"), m.Hugepages.PageSize))
	case m.MaxGuest != nil && it.Memory.MaxGuest != nil:
		errs = append(errs, conflict(dp.Child("memory", "maxGuest"), m.MaxGuest.String()))
	case hasReq:
		errs = append(errs, conflict(rp.Child("requests", string(ResourceMemory)), q.String()))
	default:
		if l, ok := spec.Domain.Resources.Limits[ResourceMemory]; ok {
			errs = append(errs, conflict(rp.Child("limits", string(ResourceMemory)), l.String()))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if spec.Domain.Memory == nil {
		spec.Domain.Memory = &Memory{}
	}
	m = spec.Domain.Memory
	g := it.Memory.Guest.DeepCopy()
	m.Guest = &g
	if it.Memory.Hugepages != nil {
		m.Hugepages = it.Memory.Hugepages.DeepCopy()
	}
	if it.Memory.MaxGuest != nil {
		mg := it.Memory.MaxGuest.DeepCopy()
		m.MaxGuest = &mg
	}
	if p := it.Memory.OvercommitPercent; p > 0 {
		// In single precision, as KubeVirt computes it.
		req := resource.NewQuantity(int64(float32(g.Value())*(1-float32(p)/100)), g.Format)
		if spec.Domain.Resources.Requests == nil {
			spec.Domain.Resources.Requests = ResourceList{}
		}
		spec.Domain.Resources.Requests[ResourceMemory] = *req
	}
	return nil
}

func applyInstancetypeScheduling(spec *VirtualMachineInstanceSpec, it *VirtualMachineInstancetypeSpec, base *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(it.NodeSelector) > 0 {
		if len(spec.NodeSelector) > 0 {
			errs = append(errs, conflict(base.Child("nodeSelector"), spec.NodeSelector))
		} else {
			spec.NodeSelector = maps.Clone(it.NodeSelector)
		}
	}
	if it.SchedulerName != "" {
		if spec.SchedulerName != "" {
			errs = append(errs, conflict(base.Child("schedulerName"), spec.SchedulerName))
		} else {
			spec.SchedulerName = it.SchedulerName
		}
	}
	return errs
}

// checkRequirements checks a preference's requirements as KubeVirt's VM
// admission does: against the instance type when there is one, else
// against the template, where only the preferred topology's field counts
// the vCPUs (a VM preferring cores that gives sockets gives no cores).
func checkRequirements(it *VirtualMachineInstancetypeSpec, pref *VirtualMachinePreferenceSpec, spec *VirtualMachineInstanceSpec, base *field.Path) field.ErrorList {
	if pref == nil || pref.Requirements == nil {
		return nil
	}
	itp := field.NewPath("spec", "instancetype")
	if r := pref.Requirements.CPU; r != nil {
		if err := checkCPURequirement(it, pref, spec, r.Guest, itp, base); err != nil {
			return field.ErrorList{err} // KubeVirt reports the first unmet requirement
		}
	}
	r := pref.Requirements.Memory
	switch {
	case r == nil:
	case it != nil && it.Memory.Guest.Cmp(r.Guest) < 0:
		return field.ErrorList{field.Invalid(itp, it.Memory.Guest.String(), fmt.Sprintf(
			"insufficient Memory resources of %s provided by instance type, preference requires %s", it.Memory.Guest.String(), r.Guest.String()))}
	case it == nil && spec.Domain.Memory != nil && spec.Domain.Memory.Guest != nil && spec.Domain.Memory.Guest.Cmp(r.Guest) < 0:
		g := spec.Domain.Memory.Guest.String()
		return field.ErrorList{field.Invalid(base.Child("domain", "memory"), g, fmt.Sprintf(
			"insufficient Memory resources of %s provided by VirtualMachine, preference requires %s", g, r.Guest.String()))}
	}
	return nil
}

func checkCPURequirement(it *VirtualMachineInstancetypeSpec, pref *VirtualMachinePreferenceSpec, spec *VirtualMachineInstanceSpec, want uint32, itp, base *field.Path) *field.Error {
	if it != nil {
		if it.CPU.Guest < want {
			return field.Invalid(itp, it.CPU.Guest, fmt.Sprintf(
				"insufficient CPU resources of %d vCPU provided by instance type, preference requires %d vCPU", it.CPU.Guest, want))
		}
		return nil
	}
	cp := base.Child("domain", "cpu")
	c := spec.Domain.CPU
	if c == nil {
		return field.Required(cp, fmt.Sprintf("no CPU resources provided by VirtualMachine, preference requires %d vCPU", want))
	}
	var have uint32
	var p *field.Path
	var as string
	switch preferredTopology(pref) {
	case PreferThreads:
		have, p, as = c.Threads, cp.Child("threads"), "threads"
	case PreferCores:
		have, p, as = c.Cores, cp.Child("cores"), "cores"
	case PreferSpread:
		_, across := spreadOptions(pref)
		switch across {
		case SpreadAcrossCoresThreads:
			have, p = c.Cores*c.Threads, cp.Child("cores")
		case SpreadAcrossSocketsCoresThreads:
			have, p = c.Sockets*c.Cores*c.Threads, cp.Child("sockets")
		default:
			have, p = c.Sockets*c.Cores, cp.Child("sockets")
		}
		as = across
	case PreferAny:
		have, p, as = c.Cores*c.Sockets*c.Threads, cp.Child("cores"), "cores, sockets and threads"
	default:
		have, p, as = c.Sockets, cp.Child("sockets"), "sockets"
	}
	if have < want {
		return field.Invalid(p, have, fmt.Sprintf(
			"insufficient CPU resources of %d vCPU provided by VirtualMachine, preference requires %d vCPU provided as %s", have, want, as))
	}
	return nil
}

func ptrBool(b bool) *bool { return &b }

// applyDiskPreferences fills a disk's unset bus (a disk of no type
// becomes a hard disk), cache, io and dedicated IO thread.
func applyDiskPreferences(disk *Disk, d *DevicePreferences) {
	if disk.Disk == nil && disk.CDRom == nil && disk.LUN == nil {
		disk.Disk = &DiskTarget{}
	}
	switch {
	case disk.Disk != nil:
		if disk.Disk.Bus == "" && d.PreferredDiskBus != "" {
			disk.Disk.Bus = d.PreferredDiskBus
		}
		if d.PreferredDiskBlockSize != nil && disk.BlockSize == nil {
			disk.BlockSize = d.PreferredDiskBlockSize.DeepCopy()
		}
		if disk.Cache == "" {
			disk.Cache = d.PreferredDiskCache
		}
		if disk.IO == "" {
			disk.IO = d.PreferredDiskIO
		}
		if t := d.PreferredDiskDedicatedIoThread; t != nil && disk.DedicatedIOThread == nil && disk.Disk.Bus == DiskBusVirtio {
			disk.DedicatedIOThread = ptrBool(*t)
		}
	case disk.CDRom != nil:
		if disk.CDRom.Bus == "" {
			disk.CDRom.Bus = d.PreferredCdromBus
		}
	case disk.LUN != nil:
		if disk.LUN.Bus == "" {
			disk.LUN.Bus = d.PreferredLunBus
		}
	}
}

// applyFirmwarePreferences picks the bootloader when the template has
// none: BIOS if preferred, else preferredEfi, else EFI if preferred; an
// EFI bootloader gets the preferred secure boot when it sets none.
func applyFirmwarePreferences(spec *VirtualMachineInstanceSpec, f *FirmwarePreferences) {
	if spec.Domain.Firmware == nil {
		spec.Domain.Firmware = &Firmware{}
	}
	fw := spec.Domain.Firmware
	if fw.Bootloader == nil {
		fw.Bootloader = &Bootloader{}
	}
	bl := fw.Bootloader
	unset := bl.BIOS == nil && bl.EFI == nil
	if unset && isTrue(f.PreferredUseBios) {
		bl.BIOS = &BIOS{}
	}
	if f.PreferredUseBiosSerial != nil && bl.BIOS != nil && bl.BIOS.UseSerial == nil {
		bl.BIOS.UseSerial = ptrBool(*f.PreferredUseBiosSerial)
	}
	switch {
	case unset && bl.BIOS == nil && f.PreferredEfi != nil:
		bl.EFI = f.PreferredEfi.DeepCopy()
		return
	case unset && bl.BIOS == nil && isTrue(f.PreferredUseEfi):
		bl.EFI = &EFI{}
	}
	if f.PreferredUseSecureBoot != nil && bl.EFI != nil && bl.EFI.SecureBoot == nil {
		bl.EFI.SecureBoot = ptrBool(*f.PreferredUseSecureBoot)
	}
	if bl.BIOS == nil && bl.EFI == nil {
		fw.Bootloader = nil // nothing preferred: leave the template as it was
	}
}
