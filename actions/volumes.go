package actions

import (
	"context"
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// InvalidError is an action refused because the object it would write is
// invalid; it wraps ErrInvalidAction and carries the field errors (the
// API answers them as 422 Invalid).
type InvalidError struct {
	// Kind is the kind of the object, Errs what is wrong with it.
	Kind string
	Errs field.ErrorList
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("%s: %s", ErrInvalidAction, e.Errs.ToAggregate())
}

// Unwrap returns ErrInvalidAction.
func (e *InvalidError) Unwrap() error { return ErrInvalidAction }

// FieldErrors returns the field errors of an InvalidError in err's chain.
func FieldErrors(err error) (string, field.ErrorList) {
	var ie *InvalidError
	if errors.As(err, &ie) {
		return ie.Kind, ie.Errs
	}
	return "", nil
}

// vmiNotRunning is KubeVirt's answer to hot-plugging into a VMI that does
// not run.
const vmiNotRunning = "VMI is not running"

func dryRun(opts []string) bool { return slices.Contains(opts, metav1.DryRunAll) }

// checkAddVolumeOptions checks an addvolume body as KubeVirt's API does.
func checkAddVolumeOptions(o *virtkit.AddVolumeOptions) error {
	switch {
	case o == nil:
		return fmt.Errorf("%w: Request with no body, a new name is expected as the request body", ErrInvalidAction)
	case o.Name == "":
		return fmt.Errorf("%w: AddVolumeOptions requires name to be set", ErrInvalidAction)
	case o.Disk == nil:
		return fmt.Errorf("%w: AddVolumeOptions requires disk to not be nil", ErrInvalidAction)
	case o.VolumeSource == nil:
		return fmt.Errorf("%w: AddVolumeOptions requires VolumeSource to not be nil", ErrInvalidAction)
	case (o.VolumeSource.PersistentVolumeClaim == nil) == (o.VolumeSource.DataVolume == nil):
		return fmt.Errorf("%w: AddVolumeOptions requires exactly one of persistentVolumeClaim and dataVolume in VolumeSource", ErrInvalidAction)
	}
	return nil
}

func checkRemoveVolumeOptions(o *virtkit.RemoveVolumeOptions) error {
	switch {
	case o == nil:
		return fmt.Errorf("%w: Request with no body, a new name is expected as the request body", ErrInvalidAction)
	case o.Name == "":
		return fmt.Errorf("%w: RemoveVolumeOptions requires name to be set", ErrInvalidAction)
	}
	return nil
}

// verifyVolumeRequest checks a request against the volumes it changes,
// with KubeVirt's messages.
func verifyVolumeRequest(volumes []virtkit.Volume, req virtkit.VirtualMachineVolumeRequest) error {
	if o := req.AddVolumeOptions; o != nil {
		source := ""
		if p := o.VolumeSource.PersistentVolumeClaim; p != nil {
			source = p.ClaimName
		} else if dv := o.VolumeSource.DataVolume; dv != nil {
			source = dv.Name
		}
		for _, v := range volumes {
			if v.Name == o.Name {
				return conflict("Unable to add volume [%s] because volume with that name already exists", o.Name)
			}
			if volumeSourceName(&v) == source && source != "" {
				return conflict("Unable to add volume source [%s] because it already exists", source)
			}
		}
		return nil
	}
	name := req.RemoveVolumeOptions.Name
	for _, v := range volumes {
		if v.Name == name || volumeSourceName(&v) == name {
			if !v.IsHotpluggable() {
				return conflict("Unable to remove volume [%s] because it is not hotpluggable", v.Name)
			}
			return nil
		}
	}
	return conflict("Unable to remove volume [%s] because it does not exist", name)
}

func volumeSourceName(v *virtkit.Volume) string {
	switch {
	case v.DataVolume != nil:
		return v.DataVolume.Name
	case v.PersistentVolumeClaim != nil:
		return v.PersistentVolumeClaim.ClaimName
	}
	return ""
}

// removeByVolume turns a remove request naming a claim into one naming
// the volume that uses it.
func removeByVolume(volumes []virtkit.Volume, req virtkit.VirtualMachineVolumeRequest) virtkit.VirtualMachineVolumeRequest {
	if o := req.RemoveVolumeOptions; o != nil {
		for _, v := range volumes {
			if v.Name != o.Name && volumeSourceName(&v) == o.Name {
				c := *o
				c.Name = v.Name
				return virtkit.VirtualMachineVolumeRequest{RemoveVolumeOptions: &c}
			}
		}
	}
	return req
}

// hotplugRequest prepares an addvolume body: the disk takes the volume's
// name and the source is marked hot-pluggable, as KubeVirt does.
func hotplugRequest(o *virtkit.AddVolumeOptions) virtkit.VirtualMachineVolumeRequest {
	c := o.DeepCopy()
	c.Disk.Name = c.Name
	if p := c.VolumeSource.PersistentVolumeClaim; p != nil {
		p.Hotpluggable = true
	}
	if dv := c.VolumeSource.DataVolume; dv != nil {
		dv.Hotpluggable = true
	}
	return virtkit.VirtualMachineVolumeRequest{AddVolumeOptions: c}
}

// AddVMIVolume hot-plugs a volume into the running VMI at key
// (virtctl addvolume VMI): the volume and its disk are added to the VMI's
// spec and the node agent attaches them. A VMI that does not run, a name
// or claim already in use, is refused (ErrConflictingAction); a VMI a VM
// owns is refused (ErrInvalidAction: use the VM's addvolume, its template
// decides its volumes); a disk the VMI cannot take (not on the scsi bus,
// say) gives an InvalidError.
func AddVMIVolume(ctx context.Context, st store.Store, key store.Key, opts *virtkit.AddVolumeOptions) error {
	if err := checkAddVolumeOptions(opts); err != nil {
		return err
	}
	req := hotplugRequest(opts)
	return retryOnConflict(ctx, func() error { return changeVMIVolumes(ctx, st, key, req, dryRun(opts.DryRun)) })
}

// RemoveVMIVolume unplugs a hot-plugged volume from the running VMI at
// key (virtctl removevolume VMI); the name may be the volume's or its
// claim's. A volume that is not hot-pluggable or does not exist is
// refused (ErrConflictingAction).
func RemoveVMIVolume(ctx context.Context, st store.Store, key store.Key, opts *virtkit.RemoveVolumeOptions) error {
	if err := checkRemoveVolumeOptions(opts); err != nil {
		return err
	}
	req := virtkit.VirtualMachineVolumeRequest{RemoveVolumeOptions: opts.DeepCopy()}
	return retryOnConflict(ctx, func() error { return changeVMIVolumes(ctx, st, key, req, dryRun(opts.DryRun)) })
}

func changeVMIVolumes(ctx context.Context, st store.Store, key store.Key, req virtkit.VirtualMachineVolumeRequest, dry bool) error {
	vmi, err := getVMI(ctx, st, key)
	if err != nil {
		return err
	}
	if ref := metav1.GetControllerOf(vmi); ref != nil && ref.Kind == virtkit.KindVirtualMachine {
		// Its VM's template decides its volumes (declarative hotplug):
		// the VM controller would take the volume out again.
		return fmt.Errorf("%w: VMI %s/%s is owned by a VM", ErrInvalidAction, vmi.Namespace, vmi.Name)
	}
	if !vmi.IsRunning() {
		return conflict(vmiNotRunning)
	}
	if err := verifyVolumeRequest(vmi.Spec.Volumes, req); err != nil {
		return err
	}
	req = removeByVolume(vmi.Spec.Volumes, req)
	updated := vmi.DeepCopy()
	virtkit.ApplyVolumeRequest(&updated.Spec, req)
	errs := virtkit.AdmitVolumeHotplug(&updated.Spec, &vmi.Spec, field.NewPath("spec"))
	if len(errs) == 0 {
		errs = virtkit.Validate(updated)
	}
	if len(errs) > 0 {
		return &InvalidError{Kind: virtkit.KindVirtualMachineInstance, Errs: errs}
	}
	if dry {
		return nil
	}
	return st.Update(ctx, updated)
}

// AddVMVolume queues an addvolume request on the VM at key (virtctl
// addvolume --persist, and the VM's addvolume subresource): the VM
// controller adds the volume to the VM's template and, while it runs, to
// its VMI, where the node agent attaches it. A name or claim already in
// the template, or a request for the same volume still queued, is
// refused (ErrConflictingAction).
func AddVMVolume(ctx context.Context, st store.Store, key store.Key, opts *virtkit.AddVolumeOptions) error {
	if err := checkAddVolumeOptions(opts); err != nil {
		return err
	}
	req := hotplugRequest(opts)
	return retryOnConflict(ctx, func() error { return queueVMVolumeRequest(ctx, st, key, req, dryRun(opts.DryRun)) })
}

// RemoveVMVolume queues a removevolume request on the VM at key: the VM
// controller removes the volume from the template and from the running
// VMI, where the node agent detaches it.
func RemoveVMVolume(ctx context.Context, st store.Store, key store.Key, opts *virtkit.RemoveVolumeOptions) error {
	if err := checkRemoveVolumeOptions(opts); err != nil {
		return err
	}
	req := virtkit.VirtualMachineVolumeRequest{RemoveVolumeOptions: opts.DeepCopy()}
	return retryOnConflict(ctx, func() error { return queueVMVolumeRequest(ctx, st, key, req, dryRun(opts.DryRun)) })
}

func queueVMVolumeRequest(ctx context.Context, st store.Store, key store.Key, req virtkit.VirtualMachineVolumeRequest, dry bool) error {
	vm := &virtkit.VirtualMachine{}
	if err := st.Get(ctx, key, vm); err != nil {
		return fmt.Errorf("virtualmachine %s: %w", key, err)
	}
	if vm.Spec.Template == nil {
		return conflict("VM %s has no template", key.Name)
	}
	volumes := vm.Spec.Template.Spec.Volumes
	if err := verifyVolumeRequest(volumes, req); err != nil {
		return err
	}
	req = removeByVolume(volumes, req)
	var name string
	if req.AddVolumeOptions != nil {
		name = req.AddVolumeOptions.Name
	} else {
		name = req.RemoveVolumeOptions.Name
	}
	kept := vm.Status.VolumeRequests[:0:0]
	for _, q := range vm.Status.VolumeRequests {
		switch {
		case req.AddVolumeOptions != nil && q.AddVolumeOptions != nil && q.AddVolumeOptions.Name == name:
			return conflict("add volume request for volume [%s] already exists", name)
		case req.AddVolumeOptions != nil && q.RemoveVolumeOptions != nil && q.RemoveVolumeOptions.Name == name:
			return conflict("unable to add volume since a remove volume request for volume [%s] already exists and is still being processed", name)
		case req.RemoveVolumeOptions != nil && q.RemoveVolumeOptions != nil && q.RemoveVolumeOptions.Name == name:
			return conflict("a remove volume request for volume [%s] already exists and is still being processed", name)
		case req.RemoveVolumeOptions != nil && q.AddVolumeOptions != nil && q.AddVolumeOptions.Name == name:
			continue // a remove cancels a queued add of the same volume
		}
		kept = append(kept, q)
	}
	// The template with the request applied must be one the VMI could take.
	spec := vm.Spec.Template.Spec.DeepCopy()
	virtkit.ApplyVolumeRequest(spec, req)
	p := field.NewPath("spec", "template", "spec")
	errs := virtkit.AdmitVolumeHotplug(spec, &vm.Spec.Template.Spec, p)
	if len(errs) == 0 {
		check := vm.DeepCopy()
		check.Spec.Template.Spec = *spec
		errs = virtkit.Validate(check)
	}
	if len(errs) > 0 {
		return &InvalidError{Kind: virtkit.KindVirtualMachine, Errs: errs}
	}
	if dry {
		return nil
	}
	vm.Status.VolumeRequests = append(kept, req)
	return st.UpdateStatus(ctx, vm)
}
