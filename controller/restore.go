package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

const (
	msgRestoreInitializing = "Initializing VirtualMachineRestore"
	msgRestoreWaiting      = "Waiting for target to be ready"
)

// RestoreReconciler is KubeVirt's VirtualMachineRestore controller: it
// restores a ready snapshot into its source VM (which must be stopped:
// runStrategy Halted and no VMI) or into a new VM that spec.target names.
// Each DataVolume of the snapshot is restored from its volume snapshot
// into a new DataVolume restore-<restore uid>-<volume> (KubeVirt's
// RandomizeNames policy) owned by the target VM, or with the InPlace
// policy (only into the snapshot's own VM) over the original volume,
// whose DataVolume keeps its name (made again when it was deleted); the
// restore's patches (JSON patch operations) are applied to the VM written; the VM's spec becomes the
// snapshot's, pointing at the restored volumes; DataVolumes of the target
// VM that nothing uses any more are deleted (status.deletedDataVolumes). A
// new VM is created Halted with its own firmware UUID and serial and
// without the source's MAC addresses, so it can run next to the source.
type RestoreReconciler struct {
	o  ReconcilerOptions
	so SnapshotOptions
}

var _ Reconciler = (*RestoreReconciler)(nil)

// NewRestoreReconciler returns the VirtualMachineRestore reconciler.
func NewRestoreReconciler(o ReconcilerOptions, so SnapshotOptions) (*RestoreReconciler, error) {
	o, err := o.withDefaults("restore")
	if err != nil {
		return nil, err
	}
	return &RestoreReconciler{o: o, so: so}, nil
}

// Watches returns every VirtualMachineRestore, and the VMIs and VMs of
// restore targets (a target that stops lets its restore go on).
func (r *RestoreReconciler) Watches() []Watch {
	return []Watch{
		{NewList: func() virtkit.ObjectList { return &virtkit.VirtualMachineRestoreList{} }, Map: ObjectKey},
		{NewList: vmiList, Map: r.restoresOf},
		{NewList: vmList, Map: r.restoresOf},
		{NewList: func() virtkit.ObjectList { return &virtkit.VirtualMachineSnapshotList{} }, Map: r.restoresOf},
	}
}

// restoresOf enqueues the unfinished restores whose target is named like
// obj (a VM or its VMI) or that restore obj (a snapshot).
func (r *RestoreReconciler) restoresOf(ctx context.Context, obj virtkit.Object) []Request {
	var list virtkit.VirtualMachineRestoreList
	if err := r.o.Store.List(ctx, &list, store.ListOptions{Namespace: obj.GetNamespace()}); err != nil {
		return nil
	}
	var reqs []Request
	for i := range list.Items {
		rs := &list.Items[i]
		_, isSnap := obj.(*virtkit.VirtualMachineSnapshot)
		named := rs.Spec.Target.Name == obj.GetName() && !isSnap || rs.Spec.VirtualMachineSnapshotName == obj.GetName() && isSnap
		if named && (rs.Status == nil || rs.Status.Complete == nil || !*rs.Status.Complete) {
			reqs = append(reqs, Request{Namespace: rs.Namespace, Name: rs.Name})
		}
	}
	return reqs
}

// Reconcile implements Reconciler.
func (r *RestoreReconciler) Reconcile(ctx context.Context, req Request) (Result, error) {
	rs := &virtkit.VirtualMachineRestore{}
	found, err := getOptional(ctx, r.o.Store, keyOf(req), rs)
	if err != nil || !found || rs.DeletionTimestamp != nil {
		return Result{}, err
	}
	now := r.o.now()
	if rs.Status == nil {
		rs.Status = &virtkit.VirtualMachineRestoreStatus{Complete: ptrTo(false)}
		virtkit.SetCondition(&rs.Status.Conditions, virtkit.Condition{Type: virtkit.ConditionProgressing, Status: virtkit.ConditionTrue, Reason: msgRestoreInitializing}, now)
		virtkit.SetCondition(&rs.Status.Conditions, virtkit.Condition{Type: virtkit.ConditionReady, Status: virtkit.ConditionFalse, Reason: msgRestoreInitializing}, now)
		if err := r.o.Store.UpdateStatus(ctx, rs); err != nil {
			return Result{}, err
		}
	}
	if rs.Status.Complete != nil && *rs.Status.Complete {
		return Result{}, nil
	}
	waiting, err := r.restore(ctx, rs)
	if err == nil && waiting == "" {
		return Result{}, nil
	}
	msg := waiting
	if err != nil {
		msg = err.Error()
	}
	changed := virtkit.SetCondition(&rs.Status.Conditions, virtkit.Condition{Type: virtkit.ConditionReady, Status: virtkit.ConditionFalse, Reason: msgRestoreWaiting, Message: msg}, now)
	if changed {
		if err != nil {
			RecordEvent(ctx, r.o.Events, rs, virtkit.EventTypeWarning, EventReasonRestoreError, "Restore", "VirtualMachineRestore encountered error %s", msg)
		}
		if uerr := r.o.Store.UpdateStatus(ctx, rs); uerr != nil {
			return Result{}, errors.Join(err, uerr)
		}
	}
	if errors.Is(err, ErrSnapshot) {
		// The user must act (stop the VM, fix the snapshot): look again
		// later rather than back off for ever.
		return Result{RequeueAfter: snapshotRetry}, nil
	}
	if err != nil {
		return Result{}, err
	}
	return Result{RequeueAfter: snapshotRetry}, nil
}

// restore does the restore; waiting says what it waits for.
func (r *RestoreReconciler) restore(ctx context.Context, rs *virtkit.VirtualMachineRestore) (waiting string, err error) {
	ns := rs.Namespace
	snap := &virtkit.VirtualMachineSnapshot{}
	ok, err := getOptional(ctx, r.o.Store, store.Key{Namespace: ns, Name: rs.Spec.VirtualMachineSnapshotName}, snap)
	if err != nil {
		return "", err
	}
	if !ok {
		snap = nil
	}
	vm := &virtkit.VirtualMachine{}
	ok, err = getOptional(ctx, r.o.Store, store.Key{Namespace: ns, Name: rs.Spec.Target.Name}, vm)
	if err != nil {
		return "", err
	}
	if !ok {
		vm = nil
	}
	restoreMark := rs.Name + "-" + string(rs.UID)
	done := vm != nil && vm.Annotations[virtkit.LastRestoreUIDAnnotation] == restoreMark
	if !done {
		if errs := virtkit.AdmitRestore(rs, snap, vm); len(errs) > 0 {
			return "", fmt.Errorf("%w: %s", ErrSnapshot, errs.ToAggregate().Error())
		}
		if snap.Status == nil || snap.Status.ReadyToUse == nil || !*snap.Status.ReadyToUse {
			return fmt.Sprintf("VirtualMachineSnapshot %s is not ready to use", snap.Name), nil
		}
		if vm != nil {
			vmi := &virtkit.VirtualMachineInstance{}
			running, err := getOptional(ctx, r.o.Store, store.Key{Namespace: ns, Name: vm.Name}, vmi)
			if err != nil {
				return "", err
			}
			if running {
				return fmt.Sprintf("VirtualMachineInstance %s still exists", vm.Name), nil
			}
		}
	}
	if snap == nil || snap.Status == nil || snap.Status.VirtualMachineSnapshotContentName == nil {
		return "", fmt.Errorf("%w: VirtualMachineSnapshot %s has no content", ErrSnapshot, rs.Spec.VirtualMachineSnapshotName)
	}
	content := &virtkit.VirtualMachineSnapshotContent{}
	if ok, err := getOptional(ctx, r.o.Store, store.Key{Namespace: ns, Name: *snap.Status.VirtualMachineSnapshotContentName}, content); err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("%w: VirtualMachineSnapshotContent %s does not exist", ErrSnapshot, *snap.Status.VirtualMachineSnapshotContentName)
		}
		return "", err
	}
	source := content.Spec.Source.VirtualMachine
	if source == nil {
		return "", fmt.Errorf("%w: VirtualMachineSnapshotContent %s holds no VirtualMachine", ErrSnapshot, content.Name)
	}
	if !done {
		if err := r.restoreVolumes(ctx, rs, content, vm); err != nil {
			return "", err
		}
		if vm, err = r.restoreVM(ctx, rs, source, vm, restoreMark); err != nil {
			return "", err
		}
	}
	if err := r.adoptVolumes(ctx, rs, vm); err != nil {
		return "", err
	}
	if err := r.deleteUnused(ctx, rs, vm); err != nil {
		return "", err
	}
	now := r.o.now()
	st := rs.Status
	st.Complete = ptrTo(true)
	st.RestoreTime = &now
	virtkit.SetCondition(&st.Conditions, virtkit.Condition{Type: virtkit.ConditionProgressing, Status: virtkit.ConditionFalse, Reason: msgComplete}, now)
	virtkit.SetCondition(&st.Conditions, virtkit.Condition{Type: virtkit.ConditionReady, Status: virtkit.ConditionTrue, Reason: msgComplete}, now)
	if err := r.o.Store.UpdateStatus(ctx, rs); err != nil {
		return "", err
	}
	RecordEvent(ctx, r.o.Events, rs, virtkit.EventTypeNormal, EventReasonRestoreComplete, "Restore",
		"Successfully completed VirtualMachineRestore %s", rs.Name)
	return "", nil
}

// restoreVolumes fills a new DataVolume from each volume snapshot of the
// content (once: an existing one is kept) and records them in
// status.restores.
func (r *RestoreReconciler) restoreVolumes(ctx context.Context, rs *virtkit.VirtualMachineRestore, content *virtkit.VirtualMachineSnapshotContent, vm *virtkit.VirtualMachine) error {
	inPlace := rs.Spec.VolumeRestorePolicy != nil && *rs.Spec.VolumeRestorePolicy == virtkit.VolumeRestorePolicyInPlace
	mark := rs.Name + "-" + string(rs.UID)
	var restores []virtkit.VolumeRestore
	for _, b := range content.Spec.VolumeBackups {
		if b.VolumeSnapshotName == nil {
			continue
		}
		name := virtkit.RestoreVolumeName(string(rs.UID), b.VolumeName)
		if inPlace {
			name = b.PersistentVolumeClaim.Name
		}
		restores = append(restores, virtkit.VolumeRestore{VolumeName: b.VolumeName, PersistentVolumeClaim: name,
			VolumeSnapshotName: *b.VolumeSnapshotName, DataVolumeName: ptrTo(name)})
		existing := &virtkit.DataVolume{}
		ok, err := getOptional(ctx, r.o.Store, store.Key{Namespace: rs.Namespace, Name: name}, existing)
		if err != nil {
			return err
		}
		if ok && (!inPlace || existing.Annotations[virtkit.LastRestoreUIDAnnotation] == mark) {
			continue
		}
		if r.so.Volumes == nil {
			return fmt.Errorf("%w: volume %s: no volume snapshotter is configured: volume restores are not supported", ErrSnapshot, b.VolumeName)
		}
		target := backupVolume(rs.Namespace, &b)
		target.Name = name
		if ok {
			// InPlace over a volume that is still there: its data is
			// overwritten from the snapshot and the DataVolume kept (the
			// VM is stopped: nothing has the volume open).
			target.StorageClass = existing.Annotations[virtkit.DataVolumeStorageClassAnnotation]
			if n := existing.Annotations[virtkit.DataVolumeVolumeNodeAnnotation]; n != "" {
				target.Node = n
			}
			if err := r.so.Volumes.Restore(ctx, *b.VolumeSnapshotName, target); err != nil {
				return fmt.Errorf("volume %s: %w", b.VolumeName, err)
			}
			if err := r.markRestoredInPlace(ctx, rs, content, &b, name, mark); err != nil {
				return err
			}
			continue
		}
		if err := r.so.Volumes.Restore(ctx, *b.VolumeSnapshotName, target); err != nil {
			return fmt.Errorf("volume %s: %w", b.VolumeName, err)
		}
		dv := restoredDataVolume(rs, content, &b, name)
		if inPlace {
			dv.Annotations[virtkit.LastRestoreUIDAnnotation] = mark
		}
		if vm != nil {
			dv.OwnerReferences = []metav1.OwnerReference{newControllerRef(vm, virtkit.KindVirtualMachine)}
		}
		if err := r.o.Store.Create(ctx, dv); err != nil && !errors.Is(err, store.ErrAlreadyExists) {
			return err
		}
	}
	rs.Status.Restores = restores
	return r.o.Store.UpdateStatus(ctx, rs)
}

// markRestoredInPlace records on a DataVolume overwritten in place which
// restore and volume snapshot its data now comes from.
func (r *RestoreReconciler) markRestoredInPlace(ctx context.Context, rs *virtkit.VirtualMachineRestore, content *virtkit.VirtualMachineSnapshotContent, b *virtkit.VolumeBackup, name, mark string) error {
	fresh := restoredDataVolume(rs, content, b, name)
	return retryOnConflict(ctx, func() error {
		dv := &virtkit.DataVolume{}
		if err := r.o.Store.Get(ctx, store.Key{Namespace: rs.Namespace, Name: name}, dv); err != nil {
			return err
		}
		if dv.Annotations == nil {
			dv.Annotations = map[string]string{}
		}
		if dv.Labels == nil {
			dv.Labels = map[string]string{}
		}
		dv.Annotations[virtkit.RestoreNameAnnotation] = rs.Name
		dv.Annotations[virtkit.VolumeSnapshotAnnotation] = *b.VolumeSnapshotName
		dv.Annotations[virtkit.LastRestoreUIDAnnotation] = mark
		for k, v := range fresh.Labels {
			dv.Labels[k] = v
		}
		return r.o.Store.Update(ctx, dv)
	})
}

// restoredDataVolume is the DataVolume of a restored volume: the spec of
// the snapshot VM's dataVolumeTemplate for it when there is one, else a
// blank one of the backed-up claim's size, already Succeeded (its data is
// in place), on the storage class and node of the snapshot.
func restoredDataVolume(rs *virtkit.VirtualMachineRestore, content *virtkit.VirtualMachineSnapshotContent, b *virtkit.VolumeBackup, name string) *virtkit.DataVolume {
	dv := &virtkit.DataVolume{
		TypeMeta: metav1.TypeMeta{APIVersion: virtkit.CDISchemeGroupVersion.String(), Kind: virtkit.KindDataVolume},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: rs.Namespace, Annotations: map[string]string{
			virtkit.RestoreNameAnnotation:    rs.Name,
			virtkit.VolumeSnapshotAnnotation: *b.VolumeSnapshotName,
		}},
	}
	for _, k := range []string{virtkit.DataVolumeStorageClassAnnotation, virtkit.DataVolumeVolumeNodeAnnotation} {
		if v := b.PersistentVolumeClaim.Annotations[k]; v != "" {
			dv.Annotations[k] = v
		}
	}
	if src := content.Spec.Source.VirtualMachine; src != nil {
		ns := src.Namespace
		if ns == "" {
			ns = rs.Namespace
		}
		dv.Labels = map[string]string{virtkit.RestoreSourceVMNameLabel: src.Name, virtkit.RestoreSourceVMNamespaceLabel: ns}
		for _, t := range src.Spec.DataVolumeTemplates {
			if t.ObjectMeta.Name == b.PersistentVolumeClaim.Name {
				dv.Spec = *t.Spec.DeepCopy()
			}
		}
	}
	if dv.Spec.Source == nil && dv.Spec.SourceRef == nil {
		spec := b.PersistentVolumeClaim.Spec
		dv.Spec = virtkit.DataVolumeSpec{Source: &virtkit.DataVolumeImportSource{Blank: &virtkit.DataVolumeBlankImage{}}, Storage: spec.DeepCopy()}
	}
	now := metav1.Now()
	st := &dv.Status
	st.Phase = virtkit.DataVolumeSucceeded
	st.Progress = virtkit.FormatDataVolumeProgress(100)
	st.SetCondition(virtkit.DataVolumeCondition{Type: virtkit.DataVolumeBound, Status: virtkit.ConditionTrue,
		Reason: virtkit.DataVolumeReasonBound, Message: "PVC " + name + " Bound"}, now)
	st.SetCondition(virtkit.DataVolumeCondition{Type: virtkit.DataVolumeRunning, Status: virtkit.ConditionFalse,
		Reason: virtkit.DataVolumeReasonCompleted}, now)
	st.SetCondition(virtkit.DataVolumeCondition{Type: virtkit.DataVolumeReady, Status: virtkit.ConditionTrue}, now)
	return dv
}

// restoreVM writes the snapshot's VM spec into the target (updated, or
// created Halted), with its volumes and dataVolumeTemplates renamed to the
// restored DataVolumes.
func (r *RestoreReconciler) restoreVM(ctx context.Context, rs *virtkit.VirtualMachineRestore, source, vm *virtkit.VirtualMachine, mark string) (*virtkit.VirtualMachine, error) {
	renamed := map[string]string{} // old claim -> restored DataVolume
	byVolume := map[string]string{}
	for _, x := range rs.Status.Restores {
		byVolume[x.VolumeName] = x.PersistentVolumeClaim
	}
	spec := source.Spec.DeepCopy()
	if spec.Template != nil {
		for i := range spec.Template.Spec.Volumes {
			v := &spec.Template.Spec.Volumes[i]
			nn, ok := byVolume[v.Name]
			if !ok {
				continue
			}
			switch {
			case v.DataVolume != nil:
				renamed[v.DataVolume.Name] = nn
				v.DataVolume.Name = nn
			case v.PersistentVolumeClaim != nil:
				renamed[v.PersistentVolumeClaim.ClaimName] = nn
				v.PersistentVolumeClaim.ClaimName = nn
			}
		}
	}
	for i := range spec.DataVolumeTemplates {
		if nn, ok := renamed[spec.DataVolumeTemplates[i].ObjectMeta.Name]; ok {
			spec.DataVolumeTemplates[i].ObjectMeta.Name = nn
		}
	}
	if vm != nil {
		out := vm.DeepCopy()
		out.Spec = *spec
		// The VM keeps its own (stopped) run strategy.
		out.Spec.Running, out.Spec.RunStrategy = vm.Spec.Running, vm.Spec.RunStrategy
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[virtkit.LastRestoreUIDAnnotation] = mark
		out, err := patchRestoredVM(rs, out)
		if err != nil {
			return nil, err
		}
		if err := r.o.Store.Update(ctx, out); err != nil {
			return nil, err
		}
		return out, nil
	}
	out := &virtkit.VirtualMachine{
		TypeMeta: metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachine},
		ObjectMeta: metav1.ObjectMeta{Name: rs.Spec.Target.Name, Namespace: rs.Namespace, Labels: source.Labels,
			Annotations: map[string]string{virtkit.LastRestoreUIDAnnotation: mark}},
		Spec: *spec,
	}
	if out.Spec.Running != nil {
		out.Spec.Running = ptrTo(false)
	} else {
		out.Spec.RunStrategy = ptrTo(virtkit.RunStrategyHalted)
	}
	if out.Name != source.Name && out.Spec.Template != nil {
		// A second VM from the same snapshot gets its own identity:
		// firmware UUID (from its name, as defaulting derives it) and
		// serial, and MACs the host assigns.
		d := &out.Spec.Template.Spec.Domain
		if d.Firmware != nil {
			d.Firmware.UUID = virtkit.FirmwareUUIDForVM(out.Name)
			if d.Firmware.Serial != "" {
				d.Firmware.Serial = string(virtkit.RandomUUID())
				if r.o.Defaults.NewUUID != nil {
					d.Firmware.Serial = string(r.o.Defaults.NewUUID())
				}
			}
		}
		for i := range d.Devices.Interfaces {
			d.Devices.Interfaces[i].MacAddress = ""
		}
	}
	out, err := patchRestoredVM(rs, out)
	if err != nil {
		return nil, err
	}
	if err := r.o.Store.Create(ctx, out); err != nil {
		return nil, err
	}
	RecordEvent(ctx, r.o.Events, rs, virtkit.EventTypeNormal, EventReasonSuccessfulCreate, "Restore", "Created VirtualMachine %s", out.Name)
	return out, nil
}

// patchRestoredVM applies the restore's patches to the VM it writes; a
// patch that does not apply is the user's to fix (ErrSnapshot).
func patchRestoredVM(rs *virtkit.VirtualMachineRestore, vm *virtkit.VirtualMachine) (*virtkit.VirtualMachine, error) {
	if len(rs.Spec.Patches) == 0 {
		return vm, nil
	}
	out, err := virtkit.ApplyVMPatches(vm, rs.Spec.Patches)
	if err != nil {
		return nil, fmt.Errorf("%w: spec.patches: %w", ErrSnapshot, err)
	}
	return out, nil
}

// adoptVolumes makes the target VM the controller of the restored
// DataVolumes it was not there to own when they were made.
func (r *RestoreReconciler) adoptVolumes(ctx context.Context, rs *virtkit.VirtualMachineRestore, vm *virtkit.VirtualMachine) error {
	for _, x := range rs.Status.Restores {
		err := retryOnConflict(ctx, func() error {
			dv := &virtkit.DataVolume{}
			ok, err := getOptional(ctx, r.o.Store, store.Key{Namespace: rs.Namespace, Name: x.PersistentVolumeClaim}, dv)
			if err != nil || !ok || controllerOf(dv) != nil {
				return err
			}
			dv.OwnerReferences = append(dv.OwnerReferences, newControllerRef(vm, virtkit.KindVirtualMachine))
			return r.o.Store.Update(ctx, dv)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// deleteUnused deletes the DataVolumes the target VM controls that its
// restored spec no longer uses (KubeVirt's deletedDataVolumes).
func (r *RestoreReconciler) deleteUnused(ctx context.Context, rs *virtkit.VirtualMachineRestore, vm *virtkit.VirtualMachine) error {
	used := map[string]bool{}
	if vm.Spec.Template != nil {
		for i := range vm.Spec.Template.Spec.Volumes {
			used[claimOf(&vm.Spec.Template.Spec.Volumes[i])] = true
		}
	}
	for _, t := range vm.Spec.DataVolumeTemplates {
		used[t.ObjectMeta.Name] = true
	}
	var list virtkit.DataVolumeList
	if err := r.o.Store.List(ctx, &list, store.ListOptions{Namespace: vm.Namespace}); err != nil {
		return err
	}
	for i := range list.Items {
		dv := &list.Items[i]
		ref := controllerOf(dv)
		if used[dv.Name] || ref == nil || ref.Kind != virtkit.KindVirtualMachine || ref.UID != vm.UID {
			continue
		}
		if err := r.o.Store.Delete(ctx, dv, store.DeleteOptions{}); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if !slices.Contains(rs.Status.DeletedDataVolumes, dv.Name) {
			rs.Status.DeletedDataVolumes = append(rs.Status.DeletedDataVolumes, dv.Name)
		}
	}
	return nil
}

// backupVolume is where a volume backup's claim lived.
func backupVolume(namespace string, b *virtkit.VolumeBackup) SnapshotVolume {
	return SnapshotVolume{Namespace: namespace, Name: b.PersistentVolumeClaim.Name,
		StorageClass: b.PersistentVolumeClaim.Annotations[virtkit.DataVolumeStorageClassAnnotation],
		Node:         b.PersistentVolumeClaim.Annotations[virtkit.DataVolumeVolumeNodeAnnotation]}
}
