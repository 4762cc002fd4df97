package controller

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/virtkit/virtkit"
)

// syncVolumeHotplug applies a VM's volume requests (what the addvolume and
// removevolume subresources queue on its status) to its template, and
// then the template's hot-pluggable volumes to its running VMI, as
// KubeVirt's VM controller does with declarative volume hotplug: a
// hot-pluggable volume (and its disk) added to or removed from the
// template is added to or removed from the running VMI's spec, where the
// node agent attaches or detaches it. A request is dropped from the
// status once the template and the running VMI reflect it.
func (r *VMReconciler) syncVolumeHotplug(ctx context.Context, s *vmSync) error {
	vm := s.vm
	if vm.Spec.Template == nil {
		return nil
	}
	if len(vm.Status.VolumeRequests) > 0 {
		spec := vm.Spec.Template.Spec.DeepCopy()
		for _, req := range vm.Status.VolumeRequests {
			virtkit.ApplyVolumeRequest(spec, req)
		}
		if !equality.Semantic.DeepEqual(spec, &vm.Spec.Template.Spec) {
			requests := vm.Status.VolumeRequests
			vm.Spec.Template.Spec = *spec
			if err := r.o.Store.Update(ctx, vm); err != nil {
				return err
			}
			// The spec write leaves the status as stored.
			vm.Status.VolumeRequests = requests
		}
	}
	if vmi := s.vmi; vmi != nil && !vmi.IsFinal() && vmi.DeletionTimestamp == nil && vmi.Status.Phase == virtkit.Running {
		spec := vmi.Spec.DeepCopy()
		if syncHotplugVolumes(spec, &vm.Spec.Template.Spec) {
			updated := vmi.DeepCopy()
			updated.Spec = *spec
			if err := r.o.Store.Update(ctx, updated); err != nil {
				return err
			}
			s.vmi = updated
		}
	}
	// Drop the requests both reflect.
	kept := vm.Status.VolumeRequests[:0]
	for _, req := range vm.Status.VolumeRequests {
		if !volumeRequestDone(&vm.Spec.Template.Spec, req) || s.vmi != nil && !s.vmi.IsFinal() && !volumeRequestDone(&s.vmi.Spec, req) {
			kept = append(kept, req)
		}
	}
	if len(kept) == 0 {
		kept = nil
	}
	vm.Status.VolumeRequests = kept
	return nil
}

// volumeRequestDone reports whether spec reflects the request.
func volumeRequestDone(spec *virtkit.VirtualMachineInstanceSpec, req virtkit.VirtualMachineVolumeRequest) bool {
	has := func(name string) bool {
		return slices.ContainsFunc(spec.Volumes, func(v virtkit.Volume) bool { return v.Name == name })
	}
	switch {
	case req.AddVolumeOptions != nil:
		return has(req.AddVolumeOptions.Name)
	case req.RemoveVolumeOptions != nil:
		return !has(req.RemoveVolumeOptions.Name)
	}
	return true
}

// syncHotplugVolumes makes the hot-pluggable volumes of vmi (a running
// VMI's spec) those of template: it removes the ones template lacks (with
// their disks) and appends the ones template adds (with their disks). It
// reports whether vmi changed.
func syncHotplugVolumes(vmi, template *virtkit.VirtualMachineInstanceSpec) bool {
	want := map[string]bool{}
	for i := range template.Volumes {
		if template.Volumes[i].IsHotpluggable() {
			want[template.Volumes[i].Name] = true
		}
	}
	have := map[string]bool{}
	changed := false
	var drop []string
	for i := range vmi.Volumes {
		v := &vmi.Volumes[i]
		if !v.IsHotpluggable() {
			continue
		}
		if want[v.Name] {
			have[v.Name] = true
		} else {
			drop = append(drop, v.Name)
		}
	}
	if len(drop) > 0 {
		changed = true
		vmi.Volumes = slices.DeleteFunc(vmi.Volumes, func(v virtkit.Volume) bool { return slices.Contains(drop, v.Name) })
		vmi.Domain.Devices.Disks = slices.DeleteFunc(vmi.Domain.Devices.Disks, func(d virtkit.Disk) bool { return slices.Contains(drop, d.Name) })
	}
	for i := range template.Volumes {
		v := template.Volumes[i]
		if !want[v.Name] || have[v.Name] || slices.ContainsFunc(vmi.Volumes, func(o virtkit.Volume) bool { return o.Name == v.Name }) {
			continue
		}
		di := slices.IndexFunc(template.Domain.Devices.Disks, func(d virtkit.Disk) bool { return d.Name == v.Name })
		if di < 0 {
			continue // a template without the disk is invalid; nothing to plug
		}
		changed = true
		vmi.Volumes = append(vmi.Volumes, *v.DeepCopy())
		vmi.Domain.Devices.Disks = append(vmi.Domain.Devices.Disks, *template.Domain.Devices.Disks[di].DeepCopy())
	}
	return changed
}

// withoutHotplugVolumes drops the hot-pluggable volumes and their disks
// from spec: they change on a running VMI without a restart.
func withoutHotplugVolumes(spec *virtkit.VirtualMachineInstanceSpec) {
	var names []string
	for i := range spec.Volumes {
		if spec.Volumes[i].IsHotpluggable() {
			names = append(names, spec.Volumes[i].Name)
		}
	}
	if len(names) == 0 {
		return
	}
	spec.Volumes = slices.DeleteFunc(spec.Volumes, func(v virtkit.Volume) bool { return slices.Contains(names, v.Name) })
	spec.Domain.Devices.Disks = slices.DeleteFunc(spec.Domain.Devices.Disks, func(d virtkit.Disk) bool { return slices.Contains(names, d.Name) })
}
