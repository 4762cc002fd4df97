package controller

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// Event reasons of the clone reconciler: KubeVirt's clone controller's,
// and virtkit's own for failures KubeVirt names no event for
// (EventReasonCloneTargetExists, EventReasonCloneSnapshotFailed,
// EventReasonCloneRestoreDeleted, EventReasonClonePatchFailed).
const (
	EventReasonCloneSnapshotCreated    = "SnapshotCreated"
	EventReasonCloneSnapshotReady      = "SnapshotReady"
	EventReasonCloneRestoreCreated     = "RestoreCreated"
	EventReasonCloneRestoreReady       = "RestoreReady"
	EventReasonCloneTargetVMCreated    = "TargetVMCreated"
	EventReasonCloneSnapshotDeleted    = "SnapshotDeleted"
	EventReasonCloneSourceDoesNotExist = "SourceDoesNotExist"
	EventReasonCloneTargetExists       = "TargetVMExists"
	EventReasonCloneSnapshotFailed     = "SnapshotFailed"
	EventReasonCloneRestoreDeleted     = "RestoreDeleted"
	EventReasonClonePatchFailed        = "PatchFailed"

	msgCloneProcessing = "Still processing"
	msgCloneReady      = "Ready"
	msgCloneFailed     = "Failed"
)

// ErrClone wraps the failures of the clone reconciler that end a clone.
var ErrClone = errors.New("clone")

// CloneReconciler is KubeVirt's VirtualMachineClone controller. A clone of
// a VirtualMachine snapshots it (tmp-snapshot-<clone uid>), waits for the
// snapshot to be ready to use, restores it into the target VM
// (tmp-restore-<clone uid>), makes the clone's changes to the new VM
// (labels and annotations filtered, the given MAC addresses or none, the
// given SMBIOS serial or a new one, a firmware UUID of its own), and deletes
// the snapshot and the restore. A clone of a VirtualMachineSnapshot
// restores it directly and keeps it. A missing source or an existing
// target fails the clone: a clone never overwrites a VM.
type CloneReconciler struct {
	o ReconcilerOptions
}

var _ Reconciler = (*CloneReconciler)(nil)

// NewCloneReconciler returns the VirtualMachineClone reconciler.
func NewCloneReconciler(o ReconcilerOptions) (*CloneReconciler, error) {
	o, err := o.withDefaults("clone")
	if err != nil {
		return nil, err
	}
	return &CloneReconciler{o: o}, nil
}

// Watches returns every VirtualMachineClone, and the snapshots, restores
// and VMs whose changes let unfinished clones in their namespace go on.
func (r *CloneReconciler) Watches() []Watch {
	return []Watch{
		{NewList: func() virtkit.ObjectList { return &virtkit.VirtualMachineCloneList{} }, Map: ObjectKey},
		{NewList: func() virtkit.ObjectList { return &virtkit.VirtualMachineSnapshotList{} }, Map: r.unfinished},
		{NewList: func() virtkit.ObjectList { return &virtkit.VirtualMachineRestoreList{} }, Map: r.unfinished},
		{NewList: vmList, Map: r.unfinished},
	}
}

// unfinished enqueues the clones in obj's namespace that have not
// succeeded or failed.
func (r *CloneReconciler) unfinished(ctx context.Context, obj virtkit.Object) []Request {
	var list virtkit.VirtualMachineCloneList
	if err := r.o.Store.List(ctx, &list, store.ListOptions{Namespace: obj.GetNamespace()}); err != nil {
		return nil
	}
	var reqs []Request
	for i := range list.Items {
		if c := &list.Items[i]; !cloneDone(c) {
			reqs = append(reqs, Request{Namespace: c.Namespace, Name: c.Name})
		}
	}
	return reqs
}

func cloneDone(c *virtkit.VirtualMachineClone) bool {
	return c.Status.Phase == virtkit.CloneSucceeded || c.Status.Phase == virtkit.CloneFailed
}

// Reconcile implements Reconciler.
func (r *CloneReconciler) Reconcile(ctx context.Context, req Request) (Result, error) {
	cl := &virtkit.VirtualMachineClone{}
	found, err := getOptional(ctx, r.o.Store, keyOf(req), cl)
	if err == nil && !found {
		return Result{}, r.collect(ctx, req)
	}
	if err != nil || cl.DeletionTimestamp != nil || cloneDone(cl) {
		return Result{}, err
	}
	if cl.Spec.Source == nil {
		return Result{}, r.fail(ctx, cl, EventReasonCloneSourceDoesNotExist, "the clone names no source")
	}
	st := &cl.Status
	if st.Phase == virtkit.ClonePhaseUnset {
		now := r.o.now()
		st.CreationTime = &now
		st.Phase = virtkit.CloneSnapshotInProgress
		if cl.Spec.Source.Kind == virtkit.KindVirtualMachineSnapshot {
			st.Phase = virtkit.CloneRestoreInProgress
			st.SnapshotName = ptrTo(cl.Spec.Source.Name)
		}
		r.setConditions(cl, virtkit.ConditionTrue, virtkit.ConditionFalse, msgCloneProcessing, "")
		if err := r.o.Store.UpdateStatus(ctx, cl); err != nil {
			return Result{}, err
		}
	}
	waiting, err := r.step(ctx, cl)
	if errors.Is(err, ErrClone) {
		return Result{}, nil
	}
	if err != nil || waiting {
		return Result{RequeueAfter: snapshotRetry}, err
	}
	return Result{}, nil
}

// step moves the clone through its phases; waiting says it waits for a
// snapshot, restore or VM. An error wrapping ErrClone has failed the
// clone.
func (r *CloneReconciler) step(ctx context.Context, cl *virtkit.VirtualMachineClone) (waiting bool, err error) {
	st := &cl.Status
	if st.Phase == virtkit.CloneSnapshotInProgress {
		if waiting, err := r.snapshotSource(ctx, cl); err != nil || waiting {
			return waiting, err
		}
	}
	if st.Phase == virtkit.CloneRestoreInProgress {
		if waiting, err := r.restoreTarget(ctx, cl); err != nil || waiting {
			return waiting, err
		}
	}
	if st.Phase == virtkit.CloneCreatingTargetVM {
		return r.finishTarget(ctx, cl)
	}
	return false, nil
}

// snapshotSource creates the snapshot of the source VM, then waits for it
// to be ready to use.
func (r *CloneReconciler) snapshotSource(ctx context.Context, cl *virtkit.VirtualMachineClone) (bool, error) {
	st := &cl.Status
	if st.SnapshotName == nil {
		src := &virtkit.VirtualMachine{}
		ok, err := getOptional(ctx, r.o.Store, store.Key{Namespace: cl.Namespace, Name: cl.Spec.Source.Name}, src)
		if err != nil {
			return false, err
		}
		if !ok {
			return false, r.fail(ctx, cl, EventReasonCloneSourceDoesNotExist,
				fmt.Sprintf("VirtualMachine %s does not exist in namespace %s", cl.Spec.Source.Name, cl.Namespace))
		}
		if err := r.chooseTarget(ctx, cl, src.Name); err != nil {
			return false, err
		}
		group := virtkit.GroupName
		snap := &virtkit.VirtualMachineSnapshot{
			TypeMeta: metav1.TypeMeta{APIVersion: virtkit.SnapshotSchemeGroupVersion.String(), Kind: virtkit.KindVirtualMachineSnapshot},
			ObjectMeta: metav1.ObjectMeta{Name: CloneSnapshotName(cl), Namespace: cl.Namespace,
				OwnerReferences: []metav1.OwnerReference{cloneOwnerRef(cl)}},
			Spec: virtkit.VirtualMachineSnapshotSpec{Source: virtkit.TypedLocalObjectReference{APIGroup: &group, Kind: virtkit.KindVirtualMachine, Name: src.Name}},
		}
		if err := r.o.Store.Create(ctx, snap); err != nil && !errors.Is(err, store.ErrAlreadyExists) {
			return false, err
		}
		RecordEvent(ctx, r.o.Events, cl, virtkit.EventTypeNormal, EventReasonCloneSnapshotCreated, "Clone",
			"created snapshot %s for clone %s", snap.Name, cl.Name)
		st.SnapshotName = ptrTo(snap.Name)
		return true, r.o.Store.UpdateStatus(ctx, cl)
	}
	ready, err := r.snapshotReady(ctx, cl, EventReasonCloneSnapshotDeleted, "snapshot %s does not exist anymore")
	if err != nil || !ready {
		return !ready, err
	}
	RecordEvent(ctx, r.o.Events, cl, virtkit.EventTypeNormal, EventReasonCloneSnapshotReady, "Clone",
		"snapshot %s for clone %s is ready to use", *st.SnapshotName, cl.Name)
	st.Phase = virtkit.CloneRestoreInProgress
	return false, r.o.Store.UpdateStatus(ctx, cl)
}

// snapshotReady reads status.snapshotName: missing or failed fails the
// clone (reason and format name the missing case).
func (r *CloneReconciler) snapshotReady(ctx context.Context, cl *virtkit.VirtualMachineClone, missingReason, missingFormat string) (bool, error) {
	snap := &virtkit.VirtualMachineSnapshot{}
	name := *cl.Status.SnapshotName
	ok, err := getOptional(ctx, r.o.Store, store.Key{Namespace: cl.Namespace, Name: name}, snap)
	if err != nil {
		return false, err
	}
	if !ok {
		return false, r.fail(ctx, cl, missingReason, fmt.Sprintf(missingFormat, name))
	}
	if snap.Status != nil && snap.Status.Phase == virtkit.SnapshotFailed {
		msg := fmt.Sprintf("VirtualMachineSnapshot %s failed", name)
		if e := snap.Status.Error; e != nil && e.Message != nil {
			msg += ": " + *e.Message
		}
		return false, r.fail(ctx, cl, EventReasonCloneSnapshotFailed, msg)
	}
	return snap.Status != nil && snap.Status.ReadyToUse != nil && *snap.Status.ReadyToUse, nil
}

// restoreTarget creates the restore of the snapshot into the target, then
// waits for it to complete.
func (r *CloneReconciler) restoreTarget(ctx context.Context, cl *virtkit.VirtualMachineClone) (bool, error) {
	st := &cl.Status
	if st.RestoreName == nil {
		fromSnapshot := cl.Spec.Source.Kind == virtkit.KindVirtualMachineSnapshot
		missing := "snapshot %s does not exist anymore"
		reason := EventReasonCloneSnapshotDeleted
		if fromSnapshot {
			missing = "VirtualMachineSnapshot %s does not exist in namespace " + cl.Namespace
			reason = EventReasonCloneSourceDoesNotExist
		}
		ready, err := r.snapshotReady(ctx, cl, reason, missing)
		if err != nil || !ready {
			return !ready, err
		}
		if st.TargetName == nil {
			snap := &virtkit.VirtualMachineSnapshot{}
			if err := r.o.Store.Get(ctx, store.Key{Namespace: cl.Namespace, Name: *st.SnapshotName}, snap); err != nil {
				return false, err
			}
			if err := r.chooseTarget(ctx, cl, snap.Spec.Source.Name); err != nil {
				return false, err
			}
		}
		if err := r.targetFree(ctx, cl, *st.TargetName); err != nil {
			return false, err
		}
		group := virtkit.GroupName
		rs := &virtkit.VirtualMachineRestore{
			TypeMeta: metav1.TypeMeta{APIVersion: virtkit.SnapshotSchemeGroupVersion.String(), Kind: virtkit.KindVirtualMachineRestore},
			ObjectMeta: metav1.ObjectMeta{Name: CloneRestoreName(cl), Namespace: cl.Namespace,
				OwnerReferences: []metav1.OwnerReference{cloneOwnerRef(cl)}},
			Spec: virtkit.VirtualMachineRestoreSpec{VirtualMachineSnapshotName: *st.SnapshotName,
				Target: virtkit.TypedLocalObjectReference{APIGroup: &group, Kind: virtkit.KindVirtualMachine, Name: *st.TargetName}},
		}
		if err := r.o.Store.Create(ctx, rs); err != nil && !errors.Is(err, store.ErrAlreadyExists) {
			return false, err
		}
		RecordEvent(ctx, r.o.Events, cl, virtkit.EventTypeNormal, EventReasonCloneRestoreCreated, "Clone",
			"created restore %s for clone %s", rs.Name, cl.Name)
		st.RestoreName = ptrTo(rs.Name)
		return true, r.o.Store.UpdateStatus(ctx, cl)
	}
	rs := &virtkit.VirtualMachineRestore{}
	ok, err := getOptional(ctx, r.o.Store, store.Key{Namespace: cl.Namespace, Name: *st.RestoreName}, rs)
	if err != nil {
		return false, err
	}
	if !ok {
		return false, r.fail(ctx, cl, EventReasonCloneRestoreDeleted, fmt.Sprintf("restore %s does not exist anymore", *st.RestoreName))
	}
	if rs.Status == nil || rs.Status.Complete == nil || !*rs.Status.Complete {
		return true, nil
	}
	RecordEvent(ctx, r.o.Events, cl, virtkit.EventTypeNormal, EventReasonCloneRestoreReady, "Clone",
		"restore %s for clone %s is ready to use", rs.Name, cl.Name)
	st.Phase = virtkit.CloneCreatingTargetVM
	return false, r.o.Store.UpdateStatus(ctx, cl)
}

// finishTarget makes the clone's changes to the restored VM, deletes the
// restore (and the snapshot the clone took) and ends the clone.
func (r *CloneReconciler) finishTarget(ctx context.Context, cl *virtkit.VirtualMachineClone) (bool, error) {
	st := &cl.Status
	if st.RestoreName != nil {
		rs := &virtkit.VirtualMachineRestore{}
		ok, err := getOptional(ctx, r.o.Store, store.Key{Namespace: cl.Namespace, Name: *st.RestoreName}, rs)
		if err != nil {
			return false, err
		}
		// A restore already deleted means the changes were made.
		if ok {
			if err := r.applyChanges(ctx, cl, rs); errors.Is(err, virtkit.ErrVMPatch) {
				return false, r.fail(ctx, cl, EventReasonClonePatchFailed, err.Error())
			} else if err != nil {
				return false, err
			}
			RecordEvent(ctx, r.o.Events, cl, virtkit.EventTypeNormal, EventReasonCloneTargetVMCreated, "Clone",
				"created target VM %s for clone %s", *st.TargetName, cl.Name)
			if err := r.o.Store.Delete(ctx, rs, store.DeleteOptions{}); err != nil && !errors.Is(err, store.ErrNotFound) {
				return false, err
			}
		}
	}
	if cl.Spec.Source.Kind == virtkit.KindVirtualMachine && st.SnapshotName != nil {
		snap := &virtkit.VirtualMachineSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: cl.Namespace, Name: *st.SnapshotName}}
		if err := r.o.Store.Delete(ctx, snap, store.DeleteOptions{}); err != nil && !errors.Is(err, store.ErrNotFound) {
			return false, err
		}
	}
	st.SnapshotName, st.RestoreName = nil, nil
	st.Phase = virtkit.CloneSucceeded
	r.setConditions(cl, virtkit.ConditionFalse, virtkit.ConditionTrue, msgCloneReady, "")
	return false, r.o.Store.UpdateStatus(ctx, cl)
}

// applyChanges gives the restored target the clone's labels, annotations,
// MAC addresses, SMBIOS serial and firmware UUID, from the VM the
// snapshot holds, then applies the clone's patches (after virtkit's own
// changes, as KubeVirt appends the user's patches to its own).
func (r *CloneReconciler) applyChanges(ctx context.Context, cl *virtkit.VirtualMachineClone, rs *virtkit.VirtualMachineRestore) error {
	snap := &virtkit.VirtualMachineSnapshot{}
	if err := r.o.Store.Get(ctx, store.Key{Namespace: cl.Namespace, Name: rs.Spec.VirtualMachineSnapshotName}, snap); err != nil {
		return fmt.Errorf("snapshot of clone %s: %w", cl.Name, err)
	}
	if snap.Status == nil || snap.Status.VirtualMachineSnapshotContentName == nil {
		return fmt.Errorf("%w: VirtualMachineSnapshot %s has no content", ErrSnapshot, snap.Name)
	}
	content := &virtkit.VirtualMachineSnapshotContent{}
	if err := r.o.Store.Get(ctx, store.Key{Namespace: cl.Namespace, Name: *snap.Status.VirtualMachineSnapshotContentName}, content); err != nil {
		return fmt.Errorf("content of snapshot %s: %w", snap.Name, err)
	}
	src := content.Spec.Source.VirtualMachine
	if src == nil {
		return fmt.Errorf("%w: VirtualMachineSnapshotContent %s holds no VirtualMachine", ErrSnapshot, content.Name)
	}
	return retryOnConflict(ctx, func() error {
		vm := &virtkit.VirtualMachine{}
		if err := r.o.Store.Get(ctx, store.Key{Namespace: cl.Namespace, Name: *cl.Status.TargetName}, vm); err != nil {
			return fmt.Errorf("target VM of clone %s: %w", cl.Name, err)
		}
		CloneTargetVM(cl, src, vm)
		patched, err := virtkit.ApplyVMPatches(vm, cl.Spec.Patches)
		if err != nil {
			return fmt.Errorf("spec.patches: %w", err)
		}
		return r.o.Store.Update(ctx, patched)
	})
}

// collect deletes the snapshot and restore a clone that is gone left
// behind (deleted before it finished): the objects in its namespace whose
// controller is a VirtualMachineClone of its name.
func (r *CloneReconciler) collect(ctx context.Context, req Request) error {
	var snaps virtkit.VirtualMachineSnapshotList
	if err := r.o.Store.List(ctx, &snaps, store.ListOptions{Namespace: req.Namespace}); err != nil {
		return err
	}
	var restores virtkit.VirtualMachineRestoreList
	if err := r.o.Store.List(ctx, &restores, store.ListOptions{Namespace: req.Namespace}); err != nil {
		return err
	}
	var left []virtkit.Object
	for i := range restores.Items {
		left = append(left, &restores.Items[i])
	}
	for i := range snaps.Items {
		left = append(left, &snaps.Items[i])
	}
	for _, obj := range left {
		ref := controllerOf(obj)
		if ref == nil || ref.Kind != virtkit.KindVirtualMachineClone || ref.Name != req.Name {
			continue
		}
		if err := r.o.Store.Delete(ctx, obj, store.DeleteOptions{}); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	return nil
}

// CloneTargetVM makes a clone's changes to target, the VM restored from
// src: src's labels and annotations (and its template's) through the
// clone's filters, the clone's MAC addresses (none for an interface it
// does not name: its host assigns one), its SMBIOS serial (the clone's uid
// when unset) and the firmware
// UUID that defaulting derives from the target's name. The target's
// last-restore annotation stays.
func CloneTargetVM(cl *virtkit.VirtualMachineClone, src, target *virtkit.VirtualMachine) {
	target.Labels = virtkit.FilterCloneMap(src.Labels, cl.Spec.LabelFilters)
	annotations := virtkit.FilterCloneMap(src.Annotations, cl.Spec.AnnotationFilters)
	delete(annotations, virtkit.LastRestoreUIDAnnotation)
	if mark, ok := target.Annotations[virtkit.LastRestoreUIDAnnotation]; ok {
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[virtkit.LastRestoreUIDAnnotation] = mark
	}
	target.Annotations = annotations
	if target.Spec.Template == nil || src.Spec.Template == nil {
		return
	}
	tm := &target.Spec.Template.ObjectMeta
	tm.Labels = virtkit.FilterCloneMap(src.Spec.Template.ObjectMeta.Labels, cl.Spec.Template.LabelFilters)
	tm.Annotations = virtkit.FilterCloneMap(src.Spec.Template.ObjectMeta.Annotations, cl.Spec.Template.AnnotationFilters)
	d := &target.Spec.Template.Spec.Domain
	for i := range d.Devices.Interfaces {
		d.Devices.Interfaces[i].MacAddress = cl.Spec.NewMacAddresses[d.Devices.Interfaces[i].Name]
	}
	if d.Firmware == nil && cl.Spec.NewSMBiosSerial != nil {
		d.Firmware = &virtkit.Firmware{}
	}
	if d.Firmware != nil {
		d.Firmware.UUID = virtkit.FirmwareUUIDForVM(target.Name)
		// KubeVirt generates a new serial when none is given: the
		// clone's uid is one no other VM has.
		d.Firmware.Serial = string(cl.UID)
		if cl.Spec.NewSMBiosSerial != nil {
			d.Firmware.Serial = *cl.Spec.NewSMBiosSerial
		}
	}
}

// chooseTarget records the target's name (spec.target.name, or
// <source>-clone-<5 characters of the clone's uid>) after checking no VM
// has it.
func (r *CloneReconciler) chooseTarget(ctx context.Context, cl *virtkit.VirtualMachineClone, source string) error {
	name := ""
	if cl.Spec.Target != nil {
		name = cl.Spec.Target.Name
	}
	if name == "" {
		name = CloneTargetName(source, string(cl.UID))
	}
	if err := r.targetFree(ctx, cl, name); err != nil {
		return err
	}
	cl.Status.TargetName = ptrTo(name)
	return nil
}

// targetFree fails the clone when a VM named target exists and is not
// the one its restore made (a restore's mark is <restore>-<uid>).
func (r *CloneReconciler) targetFree(ctx context.Context, cl *virtkit.VirtualMachineClone, target string) error {
	vm := &virtkit.VirtualMachine{}
	ok, err := getOptional(ctx, r.o.Store, store.Key{Namespace: cl.Namespace, Name: target}, vm)
	if err != nil || !ok || strings.HasPrefix(vm.Annotations[virtkit.LastRestoreUIDAnnotation], CloneRestoreName(cl)+"-") {
		return err
	}
	return r.fail(ctx, cl, EventReasonCloneTargetExists,
		fmt.Sprintf("target VirtualMachine %s already exists in namespace %s: a clone does not overwrite a VM", target, cl.Namespace))
}

// fail ends the clone in phase Failed with msg in its conditions and an
// event; the returned error wraps ErrClone.
func (r *CloneReconciler) fail(ctx context.Context, cl *virtkit.VirtualMachineClone, reason, msg string) error {
	RecordEvent(ctx, r.o.Events, cl, virtkit.EventTypeWarning, reason, "Clone", "%s", msg)
	cl.Status.Phase = virtkit.CloneFailed
	r.setConditions(cl, virtkit.ConditionFalse, virtkit.ConditionFalse, msgCloneFailed, msg)
	if err := r.o.Store.UpdateStatus(ctx, cl); err != nil {
		return err
	}
	return fmt.Errorf("%w %s: %s", ErrClone, cl.Name, msg)
}

func (r *CloneReconciler) setConditions(cl *virtkit.VirtualMachineClone, progressing, ready virtkit.ConditionStatus, reason, msg string) {
	now := r.o.now()
	virtkit.SetCondition(&cl.Status.Conditions, virtkit.Condition{Type: virtkit.ConditionProgressing, Status: progressing, Reason: reason, Message: msg}, now)
	virtkit.SetCondition(&cl.Status.Conditions, virtkit.Condition{Type: virtkit.ConditionReady, Status: ready, Reason: reason, Message: msg}, now)
}

// CloneSnapshotName is the snapshot a clone of a VM takes
// (tmp-snapshot-<clone uid>, as KubeVirt names it).
func CloneSnapshotName(cl *virtkit.VirtualMachineClone) string {
	return "tmp-snapshot-" + string(cl.UID)
}

// CloneRestoreName is the restore a clone makes (tmp-restore-<clone uid>).
func CloneRestoreName(cl *virtkit.VirtualMachineClone) string {
	return "tmp-restore-" + string(cl.UID)
}

// CloneTargetName is the target name of a clone that names none:
// <source>-clone-<suffix>, as KubeVirt generates it, the five-character
// suffix derived from the clone's uid so every reconcile agrees on it.
func CloneTargetName(source, cloneUID string) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	base := source + "-clone"
	if len(base) > 252 {
		base = "clone-object"
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(cloneUID))
	n := h.Sum64()
	suffix := make([]byte, 5)
	for i := range suffix {
		suffix[i] = alphabet[n%uint64(len(alphabet))]
		n /= uint64(len(alphabet))
	}
	return base + "-" + string(suffix)
}

// cloneOwnerRef makes the clone the controller of its snapshot and
// restore.
func cloneOwnerRef(cl *virtkit.VirtualMachineClone) metav1.OwnerReference {
	ref := newControllerRef(cl, virtkit.KindVirtualMachineClone)
	ref.APIVersion = virtkit.CloneSchemeGroupVersion.String()
	return ref
}
