package node

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/hypervisor"
)

// errNoDeviceHotplug: the hypervisor cannot change a running domain's
// devices.
var errNoDeviceHotplug = hypervisor.NotSupportedError("volume hotplug", "the hypervisor does not attach devices to a running domain")

// hotplugInvolved reports whether the VMI has hot-pluggable volumes, or
// its status records some, so its running domain's disks are compared
// with its spec.
func hotplugInvolved(vmi *virtkit.VirtualMachineInstance) bool {
	for i := range vmi.Spec.Volumes {
		if vmi.Spec.Volumes[i].IsHotpluggable() {
			return true
		}
	}
	for _, vs := range vmi.Status.VolumeStatus {
		if vs.HotplugVolume != nil {
			return true
		}
	}
	return false
}

// mayHoldUnplugged reports whether the domain may hold a disk the VMI's
// spec no longer has: its cached disks are unknown (an agent that just
// started, a domain it has not read) or name one the spec lacks. The
// status alone cannot tell: a hot-plug whose status write was lost (the
// store unreachable, the agent restarted) leaves no trace there, and the
// disk must still go once its volume leaves the spec.
func (a *Agent) mayHoldUnplugged(vmi *virtkit.VirtualMachineInstance, domName string) bool {
	a.mu.Lock()
	f, ok := a.domainFacts[domName]
	a.mu.Unlock()
	if !ok || !f.disksKnown {
		return true
	}
	for _, name := range f.disks {
		if !slices.ContainsFunc(vmi.Spec.Domain.Devices.Disks, func(d virtkit.Disk) bool { return d.Name == name }) &&
			!slices.ContainsFunc(vmi.Spec.Volumes, func(v virtkit.Volume) bool { return v.Name == name }) {
			return true
		}
	}
	return false
}

// noteDisks records the disks the domain holds in its cached facts; with
// known false it marks them unknown, to be read live again (a hot-plug
// call under way).
func (a *Agent) noteDisks(domName string, names []string, known bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f, ok := a.domainFacts[domName]
	if !ok {
		return
	}
	f.disks, f.disksKnown = nil, known
	if known {
		f.disks = slices.Sorted(slices.Values(names))
	}
	a.domainFacts[domName] = f
}

// diskNames names the disks of dom with a user alias, sorted.
func diskNames(dom *libvirtxml.Domain) []string {
	var out []string
	if dom.Devices != nil {
		for i := range dom.Devices.Disks {
			if name, ok := domain.DiskName(&dom.Devices.Disks[i]); ok {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// syncHotplugVolumes brings the running domain's disks in line with the
// VMI's hot-pluggable volumes, as virt-handler does: a hot-pluggable
// volume of the spec the domain lacks is attached (on the scsi bus, live
// and in the definition, so a migration or restart keeps it), a disk the
// domain holds whose volume left the spec is detached, and
// status.volumeStatus records each disk's target and each hot-plugged
// volume's phase (Pending, Ready, Detaching). Events record each
// hot-plugged volume's phase change with its status reason and message,
// as KubeVirt does. A failed attach leaves the volume Pending with the
// error as its message; the next resync tries again. The domain's disks
// are compared with the spec on every resync while the spec or status
// has hot-plugged volumes or the domain may hold a disk the spec lacks
// (mayHoldUnplugged); otherwise the cached disks stand for the live ones.
func (a *Agent) syncHotplugVolumes(ctx context.Context, vmi *virtkit.VirtualMachineInstance, domName string) error {
	if !hotplugInvolved(vmi) && !a.mayHoldUnplugged(vmi, domName) {
		return nil
	}
	dom, err := a.liveDomain(ctx, domName)
	if err != nil {
		return err
	}
	a.noteDisks(domName, diskNames(dom), true)
	attacher, canAttach := a.opts.Hypervisor.(hypervisor.DeviceAttacher)
	live := map[string]libvirtxml.DomainDisk{}
	var taken []string
	for _, d := range dom.Devices.Disks {
		if d.Target != nil {
			taken = append(taken, d.Target.Dev)
		}
		if name, ok := domain.DiskName(&d); ok {
			live[name] = d
		}
	}
	specDisks := map[string]bool{}
	for _, d := range vmi.Spec.Domain.Devices.Disks {
		specDisks[d.Name] = true
	}
	volumes := map[string]*virtkit.Volume{}
	for i := range vmi.Spec.Volumes {
		volumes[vmi.Spec.Volumes[i].Name] = &vmi.Spec.Volumes[i]
	}
	failed := map[string]error{}
	// A failed attach or detach call may still have changed the domain:
	// its disks are then left unknown, to be read again.
	uncertain := false
	// Attach what the spec adds.
	for _, v := range vmi.Spec.Volumes {
		if !v.IsHotpluggable() || !specDisks[v.Name] {
			continue
		}
		if _, ok := live[v.Name]; ok {
			continue
		}
		if !canAttach {
			failed[v.Name] = errNoDeviceHotplug
			continue
		}
		disk, err := domain.HotplugDisk(ctx, vmi, a.opts.Domain, v.Name, taken)
		if err == nil {
			var x string
			if x, err = disk.Marshal(); err == nil {
				a.noteDisks(domName, nil, false)
				err = attacher.AttachDevice(ctx, domName, x)
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			a.log.Warn("hot-plugging a volume failed", "vmi", vmi.Namespace+"/"+vmi.Name, "volume", v.Name, "err", err)
			failed[v.Name] = err
			uncertain = true
			continue
		}
		a.log.Info("hot-plugged a volume", "vmi", vmi.Namespace+"/"+vmi.Name, "volume", v.Name, "target", disk.Target.Dev)
		live[v.Name] = *disk
		taken = append(taken, disk.Target.Dev)
	}
	// Detach what the spec dropped.
	detaching := map[string]bool{}
	for name, d := range live {
		if specDisks[name] || volumes[name] != nil {
			continue
		}
		detaching[name] = true
		if !canAttach {
			continue
		}
		x, err := d.Marshal()
		if err == nil {
			a.noteDisks(domName, nil, false)
			err = attacher.DetachDevice(ctx, domName, x)
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			a.log.Warn("hot-unplugging a volume failed", "vmi", vmi.Namespace+"/"+vmi.Name, "volume", name, "err", err)
			uncertain = true
			continue
		}
		a.log.Info("hot-unplugged a volume", "vmi", vmi.Namespace+"/"+vmi.Name, "volume", name)
	}
	if len(detaching) > 0 && canAttach {
		// The guest may release a disk after the detach call returns:
		// what the domain holds now decides the phase.
		if dom, err = a.liveDomain(ctx, domName); err != nil {
			return err
		}
		a.noteDisks(domName, diskNames(dom), true)
		still := map[string]bool{}
		for _, d := range dom.Devices.Disks {
			if name, ok := domain.DiskName(&d); ok {
				still[name] = true
			}
		}
		for name := range detaching {
			if !still[name] {
				delete(detaching, name)
				delete(live, name)
			}
		}
	}
	if !uncertain {
		a.noteDisks(domName, slices.Collect(maps.Keys(live)), true)
	}
	return a.writeVolumeStatus(ctx, vmi, volumeStatuses(vmi, live, failed, detaching), failed)
}

// liveDomain reads the running domain's XML.
func (a *Agent) liveDomain(ctx context.Context, domName string) (*libvirtxml.Domain, error) {
	x, err := a.opts.Hypervisor.XML(ctx, domName)
	if err != nil {
		return nil, err
	}
	dom := &libvirtxml.Domain{}
	if err := dom.Unmarshal(x); err != nil {
		return nil, fmt.Errorf("domain %s: live XML: %w", domName, err)
	}
	if dom.Devices == nil {
		dom.Devices = &libvirtxml.DomainDeviceList{}
	}
	return dom, nil
}

// volumeStatuses computes status.volumeStatus: one entry per disk the
// domain holds (its target), in the spec's volume order, hot-plugged
// volumes with their phase; volumes still detaching last.
func volumeStatuses(vmi *virtkit.VirtualMachineInstance, live map[string]libvirtxml.DomainDisk, failed map[string]error, detaching map[string]bool) []virtkit.VolumeStatus {
	old := map[string]virtkit.VolumeStatus{}
	for _, vs := range vmi.Status.VolumeStatus {
		old[vs.Name] = vs
	}
	entry := func(name string) virtkit.VolumeStatus {
		vs := old[name]
		vs.Name = name
		if d, ok := live[name]; ok && d.Target != nil {
			vs.Target = d.Target.Dev
		}
		return vs
	}
	var out []virtkit.VolumeStatus
	for i := range vmi.Spec.Volumes {
		v := &vmi.Spec.Volumes[i]
		_, attached := live[v.Name]
		if !v.IsHotpluggable() {
			if attached {
				vs := entry(v.Name)
				vs.Phase, vs.Reason, vs.Message, vs.HotplugVolume = "", "", "", nil
				out = append(out, vs)
			}
			continue
		}
		vs := entry(v.Name)
		if vs.HotplugVolume == nil {
			vs.HotplugVolume = &virtkit.HotplugVolumeStatus{}
		}
		switch err := failed[v.Name]; {
		case attached:
			vs.Phase, vs.Reason = virtkit.VolumeReady, virtkit.VolumeReadyReason
			vs.Message = fmt.Sprintf("Successfully attach hotplugged volume %s to VM", v.Name)
		case err != nil:
			vs.Phase, vs.Reason = virtkit.VolumePending, virtkit.VolumePendingReason
			vs.Message = fmt.Sprintf("Unable to attach hotplugged volume %s to VM: %v", v.Name, err)
		default:
			vs.Phase, vs.Reason = virtkit.VolumePending, virtkit.VolumePendingReason
			vs.Message = fmt.Sprintf("Volume %s is waiting to be attached to VM", v.Name)
		}
		out = append(out, vs)
	}
	for _, vs := range vmi.Status.VolumeStatus {
		if detaching[vs.Name] {
			vs.Phase, vs.Reason = virtkit.HotplugVolumeDetaching, virtkit.VolumeDetachingReason
			vs.Message = fmt.Sprintf("Volume %s is being detached from VM", vs.Name)
			if vs.HotplugVolume == nil {
				vs.HotplugVolume = &virtkit.HotplugVolumeStatus{}
			}
			out = append(out, vs)
			delete(detaching, vs.Name)
		}
	}
	for name := range detaching { // not in the status yet (an agent restart)
		vs := entry(name)
		vs.Phase, vs.Reason = virtkit.HotplugVolumeDetaching, virtkit.VolumeDetachingReason
		vs.Message = fmt.Sprintf("Volume %s is being detached from VM", name)
		vs.HotplugVolume = &virtkit.HotplugVolumeStatus{}
		out = append(out, vs)
	}
	return out
}

// writeVolumeStatus writes status.volumeStatus when it changed and
// records an event for each hot-plugged volume whose phase changed, with
// the status's reason and message.
func (a *Agent) writeVolumeStatus(ctx context.Context, vmi *virtkit.VirtualMachineInstance, next []virtkit.VolumeStatus, failed map[string]error) error {
	if reflect.DeepEqual(vmi.Status.VolumeStatus, next) {
		return nil
	}
	before := map[string]virtkit.VolumeStatus{}
	for _, vs := range vmi.Status.VolumeStatus {
		before[vs.Name] = vs
	}
	vmi.Status.VolumeStatus = next
	if err := a.opts.Store.UpdateStatus(ctx, vmi); err != nil {
		return err
	}
	for _, vs := range next {
		if vs.HotplugVolume == nil || before[vs.Name].Phase == vs.Phase && before[vs.Name].Reason == vs.Reason {
			continue
		}
		kind := virtkit.EventTypeNormal
		if failed[vs.Name] != nil {
			kind = virtkit.EventTypeWarning
		}
		a.event(ctx, vmi, kind, vs.Reason, "Hotplug", "%s", vs.Message)
	}
	return nil
}
