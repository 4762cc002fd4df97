package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// Event reasons and messages of the snapshot and restore reconcilers
// (KubeVirt's snapshot controller's strings).
const (
	EventReasonSnapshotContentCreated = "SuccessfulVirtualMachineSnapshotContentCreate"
	EventReasonVolumeSnapshotCreated  = "SuccessfulVolumeSnapshotCreate"
	EventReasonVolumeSnapshotMissing  = "VolumeSnapshotMissing"
	EventReasonRestoreComplete        = "VirtualMachineRestoreComplete"
	EventReasonRestoreError           = "VirtualMachineRestoreError"

	snapshotDeadlineExceeded = "snapshot deadline exceeded"
	msgInProgress            = "Source locked and operation in progress"
	msgNotReady              = "Not ready"
	msgComplete              = "Operation complete"
	msgFailed                = "Operation failed"
)

// Finalizers of the snapshot kinds (KubeVirt's names).
const (
	SnapshotFinalizer        = "snapshot.kubevirt.io/vmsnapshot-protection"
	SnapshotContentFinalizer = "snapshot.kubevirt.io/vmsnapshotcontent-protection"
)

// snapshotRetry is how soon a snapshot waiting for its source (a missing
// VM, a DataVolume still importing) is looked at again.
const snapshotRetry = 5 * time.Second

// SnapshotOptions configure the snapshot reconcilers.
type SnapshotOptions struct {
	// Volumes copies the VM's DataVolumes; nil refuses to snapshot a VM
	// that has any (a VM without claims can still be snapshotted).
	Volumes VolumeSnapshotter
	// Freezer freezes a running guest with a connected agent while its
	// volumes are copied; nil takes online snapshots without freezing,
	// indicated as NoGuestAgent.
	Freezer GuestFreezer
}

// SnapshotReconciler is KubeVirt's VirtualMachineSnapshot controller: it
// copies the source VM's spec and DataVolumes into a
// VirtualMachineSnapshotContent and reports the snapshot's phase,
// readiness, indications and conditions. A running VM is snapshotted
// online: its guest's filesystems are frozen through the guest agent
// for the copy (indications Online and GuestAgent), or, without a
// connected agent, copied as they are (Online and NoGuestAgent); a paused
// VM is copied unfrozen (Online and Paused). A
// snapshot that has not succeeded within spec.failureDeadline fails.
// Deleting a snapshot deletes its content unless deletionPolicy is Retain.
type SnapshotReconciler struct {
	o  ReconcilerOptions
	so SnapshotOptions
}

var _ Reconciler = (*SnapshotReconciler)(nil)

// NewSnapshotReconciler returns the VirtualMachineSnapshot reconciler.
func NewSnapshotReconciler(o ReconcilerOptions, so SnapshotOptions) (*SnapshotReconciler, error) {
	o, err := o.withDefaults("snapshot")
	if err != nil {
		return nil, err
	}
	return &SnapshotReconciler{o: o, so: so}, nil
}

// Watches returns every VirtualMachineSnapshot, and DataVolumes (one
// that finishes importing lets the snapshots waiting in its namespace go
// on).
func (r *SnapshotReconciler) Watches() []Watch {
	return []Watch{
		{NewList: func() virtkit.ObjectList { return &virtkit.VirtualMachineSnapshotList{} }, Map: ObjectKey},
		{NewList: dataVolumeList, Map: r.waitingSnapshots},
	}
}

// waitingSnapshots enqueues the snapshots in progress in obj's namespace.
func (r *SnapshotReconciler) waitingSnapshots(ctx context.Context, obj virtkit.Object) []Request {
	if dv, ok := obj.(*virtkit.DataVolume); ok && dv.Status.Phase != virtkit.DataVolumeSucceeded {
		return nil
	}
	var list virtkit.VirtualMachineSnapshotList
	if err := r.o.Store.List(ctx, &list, store.ListOptions{Namespace: obj.GetNamespace()}); err != nil {
		return nil
	}
	var reqs []Request
	for i := range list.Items {
		if s := &list.Items[i]; s.Status == nil || s.Status.Phase == virtkit.SnapshotInProgress {
			reqs = append(reqs, Request{Namespace: s.Namespace, Name: s.Name})
		}
	}
	return reqs
}

// Reconcile implements Reconciler.
func (r *SnapshotReconciler) Reconcile(ctx context.Context, req Request) (Result, error) {
	snap := &virtkit.VirtualMachineSnapshot{}
	found, err := getOptional(ctx, r.o.Store, keyOf(req), snap)
	if err != nil || !found {
		return Result{}, err
	}
	if snap.DeletionTimestamp != nil {
		return Result{}, r.finalize(ctx, snap)
	}
	if addFinalizer(snap, SnapshotFinalizer) {
		if err := r.o.Store.Update(ctx, snap); err != nil {
			return Result{}, err
		}
	}
	now := r.o.now()
	if snap.Status == nil {
		snap.Status = &virtkit.VirtualMachineSnapshotStatus{}
	}
	st := snap.Status
	if st.Phase == virtkit.SnapshotSucceeded || st.Phase == virtkit.SnapshotFailed {
		return Result{}, nil
	}
	if st.Phase == virtkit.SnapshotPhaseUnset {
		st.Phase = virtkit.SnapshotInProgress
		st.ReadyToUse = ptrTo(false)
		virtkit.SetCondition(&st.Conditions, virtkit.Condition{Type: virtkit.ConditionProgressing, Status: virtkit.ConditionTrue, Reason: msgInProgress}, now)
		virtkit.SetCondition(&st.Conditions, virtkit.Condition{Type: virtkit.ConditionReady, Status: virtkit.ConditionFalse, Reason: msgNotReady}, now)
		if err := r.o.Store.UpdateStatus(ctx, snap); err != nil {
			return Result{}, err
		}
	}
	if left, ok := r.deadlineLeft(snap); ok && left <= 0 {
		return Result{}, r.fail(ctx, snap, snapshotDeadlineExceeded)
	}
	res, err := r.take(ctx, snap)
	// A write replaces snap's status: read it afresh.
	st = snap.Status
	if err != nil && !errors.Is(err, store.ErrConflict) && ctx.Err() == nil {
		// Recorded on the snapshot, retried with backoff until the
		// deadline.
		msg := err.Error()
		if st.Error == nil || st.Error.Message == nil || *st.Error.Message != msg {
			st.Error = &virtkit.SnapshotError{Time: &now, Message: &msg}
			if uerr := r.o.Store.UpdateStatus(ctx, snap); uerr != nil {
				return Result{}, uerr
			}
		}
	}
	if errors.Is(err, ErrSnapshot) {
		// The user must act (create the VM, fix its volumes): look
		// again later, not with a backoff that outgrows the deadline.
		err = nil
	}
	if left, ok := r.deadlineLeft(snap); ok && st.Phase == virtkit.SnapshotInProgress && (res.RequeueAfter == 0 || left < res.RequeueAfter) {
		res.RequeueAfter = max(left, time.Millisecond)
	}
	return res, err
}

// deadlineLeft is how long the snapshot has before its failure deadline;
// ok is false when it has none (failureDeadline 0).
func (r *SnapshotReconciler) deadlineLeft(snap *virtkit.VirtualMachineSnapshot) (time.Duration, bool) {
	d := time.Duration(virtkit.DefaultSnapshotFailureDeadline) * time.Second
	if fd := snap.Spec.FailureDeadline; fd != nil {
		d = fd.Duration
	}
	if d == 0 {
		return 0, false
	}
	return snap.CreationTimestamp.Add(d).Sub(r.o.Clock.Now()), true
}

func (r *SnapshotReconciler) fail(ctx context.Context, snap *virtkit.VirtualMachineSnapshot, msg string) error {
	now := r.o.now()
	st := snap.Status
	st.Phase = virtkit.SnapshotFailed
	st.ReadyToUse = ptrTo(false)
	st.Error = &virtkit.SnapshotError{Time: &now, Message: &msg}
	virtkit.SetCondition(&st.Conditions, virtkit.Condition{Type: virtkit.ConditionProgressing, Status: virtkit.ConditionFalse, Reason: msgFailed}, now)
	virtkit.SetCondition(&st.Conditions, virtkit.Condition{Type: virtkit.ConditionReady, Status: virtkit.ConditionFalse, Reason: msgNotReady}, now)
	virtkit.SetCondition(&st.Conditions, virtkit.Condition{Type: virtkit.ConditionFailure, Status: virtkit.ConditionTrue, Reason: msg}, now)
	return r.o.Store.UpdateStatus(ctx, snap)
}

// take copies the VM and its volumes into the content and completes the
// snapshot.
func (r *SnapshotReconciler) take(ctx context.Context, snap *virtkit.VirtualMachineSnapshot) (Result, error) {
	st := snap.Status
	contentName := virtkit.SnapshotContentName(string(snap.UID))
	content := &virtkit.VirtualMachineSnapshotContent{}
	have, err := getOptional(ctx, r.o.Store, store.Key{Namespace: snap.Namespace, Name: contentName}, content)
	if err != nil {
		return Result{}, err
	}
	if !have {
		vm := &virtkit.VirtualMachine{}
		ok, err := getOptional(ctx, r.o.Store, store.Key{Namespace: snap.Namespace, Name: snap.Spec.Source.Name}, vm)
		if err != nil {
			return Result{}, err
		}
		if !ok {
			return Result{RequeueAfter: snapshotRetry}, fmt.Errorf("%w: VirtualMachine %s/%s does not exist", ErrSnapshot, snap.Namespace, snap.Spec.Source.Name)
		}
		uid := string(vm.UID)
		st.SourceUID = &uid
		content, err = r.copyVM(ctx, snap, vm)
		if err != nil {
			return Result{RequeueAfter: snapshotRetry}, err
		}
		if content == nil {
			return Result{RequeueAfter: snapshotRetry}, nil
		}
	}
	now := r.o.now()
	st.VirtualMachineSnapshotContentName = &contentName
	if content.Status != nil && content.Status.ReadyToUse != nil && *content.Status.ReadyToUse {
		st.Phase = virtkit.SnapshotSucceeded
		st.ReadyToUse = ptrTo(true)
		st.CreationTime = content.Status.CreationTime
		st.Error = nil
		virtkit.SetCondition(&st.Conditions, virtkit.Condition{Type: virtkit.ConditionProgressing, Status: virtkit.ConditionFalse, Reason: msgComplete}, now)
		virtkit.SetCondition(&st.Conditions, virtkit.Condition{Type: virtkit.ConditionReady, Status: virtkit.ConditionTrue, Reason: msgComplete}, now)
	}
	return Result{}, r.o.Store.UpdateStatus(ctx, snap)
}

// copyVM takes the snapshot of vm: it freezes a running guest with an
// agent, copies each DataVolume, thaws, and creates the content (ready to
// use). It returns nil content when a DataVolume is not ready yet.
func (r *SnapshotReconciler) copyVM(ctx context.Context, snap *virtkit.VirtualMachineSnapshot, vm *virtkit.VirtualMachine) (*virtkit.VirtualMachineSnapshotContent, error) {
	st := snap.Status
	backups, included, excluded, err := r.volumeBackups(ctx, snap, vm)
	if err != nil || backups == nil && len(included) > 0 {
		return nil, err
	}
	if len(backups) > 0 && r.so.Volumes == nil {
		return nil, fmt.Errorf("%w: VirtualMachine %s has DataVolumes and no volume snapshotter is configured: volume snapshots are not supported", ErrSnapshot, vm.Name)
	}
	// Online when the VM's VMI runs; frozen when its agent is connected.
	vmi := &virtkit.VirtualMachineInstance{}
	running, err := getOptional(ctx, r.o.Store, store.Key{Namespace: vm.Namespace, Name: vm.Name}, vmi)
	if err != nil {
		return nil, err
	}
	running = running && vmi.Status.Phase == virtkit.Running
	var indications []virtkit.Indication
	freeze := false
	if running {
		indications = append(indications, virtkit.SnapshotIndicationOnline)
		if virtkit.IsConditionTrue(vmi.Status.Conditions, virtkit.VirtualMachineInstancePaused) {
			// A paused guest writes nothing and cannot answer a freeze.
			indications = append(indications, virtkit.SnapshotIndicationPaused)
		} else if virtkit.IsConditionTrue(vmi.Status.Conditions, virtkit.VirtualMachineInstanceAgentConnected) && r.so.Freezer != nil {
			indications = append(indications, virtkit.SnapshotIndicationGuestAgent)
			freeze = true
		} else {
			indications = append(indications, virtkit.SnapshotIndicationNoGuestAgent)
		}
	}
	st.Indications = indications
	st.SnapshotVolumes = &virtkit.SnapshotVolumesLists{IncludedVolumes: included, ExcludedVolumes: excluded}
	if freeze && len(backups) > 0 {
		if err := r.so.Freezer.Freeze(ctx, vm.Namespace, vm.Name); err != nil {
			return nil, fmt.Errorf("%w: freezing the guest of %s: %w", ErrSnapshot, vm.Name, err)
		}
		defer func() {
			// Thawed even when ctx ended: a guest must not stay frozen.
			tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			if err := r.so.Freezer.Unfreeze(tctx, vm.Namespace, vm.Name); err != nil {
				r.o.Logger.WarnContext(ctx, "thawing the guest failed", "vm", vm.Namespace+"/"+vm.Name, "error", err)
			}
		}()
	}
	now := r.o.now()
	var vols []virtkit.VolumeSnapshotStatus
	for _, b := range backups {
		name := *b.VolumeSnapshotName
		if err := r.so.Volumes.Snapshot(ctx, backupVolume(vm.Namespace, &b), name); err != nil {
			return nil, fmt.Errorf("volume %s: %w", b.VolumeName, err)
		}
		RecordEvent(ctx, r.o.Events, snap, virtkit.EventTypeNormal, EventReasonVolumeSnapshotCreated, "Snapshot",
			"Successfully created VolumeSnapshot %s", name)
		vols = append(vols, virtkit.VolumeSnapshotStatus{VolumeSnapshotName: name, CreationTime: &now, ReadyToUse: ptrTo(true)})
	}
	content := &virtkit.VirtualMachineSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: virtkit.SnapshotContentName(string(snap.UID)), Namespace: snap.Namespace,
			Finalizers: []string{SnapshotContentFinalizer},
			Labels:     map[string]string{virtkit.SnapshotSourceNameLabel: vm.Name, virtkit.SnapshotSourceNamespaceLabel: vm.Namespace}},
		Spec: virtkit.VirtualMachineSnapshotContentSpec{
			VirtualMachineSnapshotName: ptrTo(snap.Name),
			Source:                     virtkit.SourceSpec{VirtualMachine: sourceCopy(vm)},
			VolumeBackups:              backups,
		},
		Status: &virtkit.VirtualMachineSnapshotContentStatus{CreationTime: &now, ReadyToUse: ptrTo(true), VolumeSnapshotStatus: vols},
	}
	if err := r.o.Store.Create(ctx, content); err != nil && !errors.Is(err, store.ErrAlreadyExists) {
		return nil, err
	}
	RecordEvent(ctx, r.o.Events, snap, virtkit.EventTypeNormal, EventReasonSnapshotContentCreated, "Snapshot",
		"Successfully created VirtualMachineSnapshotContent %s", content.Name)
	return content, nil
}

// volumeBackups lists the VM's volumes backed by a DataVolume (included)
// and its other claims (excluded: no storage virtkit can copy). backups
// is nil while an included DataVolume does not exist yet or has not
// finished importing.
func (r *SnapshotReconciler) volumeBackups(ctx context.Context, snap *virtkit.VirtualMachineSnapshot, vm *virtkit.VirtualMachine) (backups []virtkit.VolumeBackup, included, excluded []string, err error) {
	if vm.Spec.Template == nil {
		return nil, nil, nil, nil
	}
	waiting := false
	for _, v := range vm.Spec.Template.Spec.Volumes {
		claim := claimOf(&v)
		if claim == "" {
			continue
		}
		dv := &virtkit.DataVolume{}
		ok, err := getOptional(ctx, r.o.Store, store.Key{Namespace: vm.Namespace, Name: claim}, dv)
		if err != nil {
			return nil, nil, nil, err
		}
		if !ok && v.DataVolume == nil && !hasTemplate(vm, claim) {
			// A plain claim: no storage virtkit can copy.
			excluded = append(excluded, v.Name)
			continue
		}
		included = append(included, v.Name)
		if !ok {
			// The DataVolume is still to be made from its template.
			waiting = true
			continue
		}
		if dv.Status.Phase != virtkit.DataVolumeSucceeded {
			waiting = true
			continue
		}
		spec := dv.Spec.Storage
		if spec == nil {
			spec = dv.Spec.PVC
		}
		b := virtkit.VolumeBackup{VolumeName: v.Name, VolumeSnapshotName: ptrTo(virtkit.VolumeSnapshotName(string(snap.UID), v.Name)),
			PersistentVolumeClaim: virtkit.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: dv.Name, Namespace: dv.Namespace,
				Labels: dv.Labels, Annotations: dv.Annotations}}}
		if spec != nil {
			b.PersistentVolumeClaim.Spec = *spec.DeepCopy()
		}
		backups = append(backups, b)
	}
	if waiting {
		return nil, included, excluded, nil
	}
	return backups, included, excluded, nil
}

func hasTemplate(vm *virtkit.VirtualMachine, name string) bool {
	for _, t := range vm.Spec.DataVolumeTemplates {
		if t.ObjectMeta.Name == name {
			return true
		}
	}
	return false
}

// claimOf is the DataVolume or claim a volume uses, or "".
func claimOf(v *virtkit.Volume) string {
	switch {
	case v.DataVolume != nil:
		return v.DataVolume.Name
	case v.PersistentVolumeClaim != nil:
		return v.PersistentVolumeClaim.ClaimName
	}
	return ""
}

// sourceCopy is the VM as a snapshot records it: metadata and spec, no
// status.
func sourceCopy(vm *virtkit.VirtualMachine) *virtkit.VirtualMachine {
	return &virtkit.VirtualMachine{
		TypeMeta: metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachine},
		ObjectMeta: metav1.ObjectMeta{Name: vm.Name, Namespace: vm.Namespace, UID: vm.UID, Generation: vm.Generation,
			Labels: vm.Labels, Annotations: vm.Annotations},
		Spec: *vm.Spec.DeepCopy(),
	}
}

// finalize deletes the content of a deleted snapshot (unless its
// deletionPolicy is Retain) and releases the snapshot.
func (r *SnapshotReconciler) finalize(ctx context.Context, snap *virtkit.VirtualMachineSnapshot) error {
	if !hasFinalizer(snap, SnapshotFinalizer) {
		return nil
	}
	retain := snap.Spec.DeletionPolicy != nil && *snap.Spec.DeletionPolicy == virtkit.VirtualMachineSnapshotContentRetain
	if !retain {
		content := &virtkit.VirtualMachineSnapshotContent{}
		ok, err := getOptional(ctx, r.o.Store, store.Key{Namespace: snap.Namespace, Name: virtkit.SnapshotContentName(string(snap.UID))}, content)
		if err != nil {
			return err
		}
		if ok && content.DeletionTimestamp == nil {
			if err := r.o.Store.Delete(ctx, content, store.DeleteOptions{}); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
	}
	removeFinalizers(snap, SnapshotFinalizer)
	return r.o.Store.Update(ctx, snap)
}
