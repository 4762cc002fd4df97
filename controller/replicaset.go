package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// BurstReplicas caps the VMIs a ReplicaSet creates or deletes per
// reconcile (KubeVirt's BurstReplicas).
const BurstReplicas = 250

// ReplicaSetReconciler keeps spec.replicas active VMIs for every
// VirtualMachineInstanceReplicaSet: it adopts matching orphans,
// creates from the template and deletes surplus VMIs at most
// [BurstReplicas] at a time, replaces final VMIs, stops scaling while
// paused, and reports replicas, readyReplicas, labelSelector and the
// ReplicaFailure / ReplicaPaused conditions.
type ReplicaSetReconciler struct {
	o ReconcilerOptions
}

var _ reconcile.Reconciler = (*ReplicaSetReconciler)(nil)

// NewReplicaSetReconciler returns the ReplicaSet reconciler.
func NewReplicaSetReconciler(o ReconcilerOptions) (*ReplicaSetReconciler, error) {
	o, err := o.withDefaults("replicaset")
	if err != nil {
		return nil, err
	}
	return &ReplicaSetReconciler{o: o}, nil
}

// Watches returns what the reconciler must be fed: ReplicaSets, and VMIs
// mapped to their controlling ReplicaSet (orphans are found on the
// ReplicaSet's next reconcile or resync).
func (r *ReplicaSetReconciler) Watches() []reconcile.Watch {
	return []reconcile.Watch{
		{NewList: rsList},
		{NewList: vmiList, Map: reconcile.ControllerOwner(virtkit.KindVirtualMachineInstanceReplicaSet)},
	}
}

// Reconcile implements Reconciler.
func (r *ReplicaSetReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	key := keyOf(req)
	rs := &virtkit.VirtualMachineInstanceReplicaSet{}
	found, err := getOptional(ctx, r.o.Store, key, rs)
	if err != nil {
		return reconcile.Result{}, err
	}
	vmis := &virtkit.VirtualMachineInstanceList{}
	if err := r.o.Store.List(ctx, vmis, store.ListOptions{Namespace: req.Namespace}); err != nil {
		return reconcile.Result{}, err
	}
	if found && rs.DeletionTimestamp != nil && hasFinalizer(rs, store.FinalizerOrphanDependents) {
		return reconcile.Result{}, nil // the garbage collector orphans its VMIs
	}
	if !found || rs.DeletionTimestamp != nil {
		// Delete what the ReplicaSet controlled (without waiting for a
		// garbage collector).
		return reconcile.Result{}, r.deleteOwned(ctx, req.Name, rs, vmis.Items)
	}
	now := r.o.now()
	orig := rs.Status.DeepCopy()

	if rs.Spec.Selector == nil {
		return reconcile.Result{}, reconcile.TerminalError(fmt.Errorf("replicaset %s: spec.selector: required", key))
	}
	sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		return reconcile.Result{}, reconcile.TerminalError(fmt.Errorf("replicaset %s: spec.selector: %w", key, err))
	}

	var active, finished []*virtkit.VirtualMachineInstance
	for i := range vmis.Items {
		vmi := &vmis.Items[i]
		owned, err := r.claim(ctx, rs, sel, vmi)
		if err != nil {
			return reconcile.Result{}, err
		}
		if !owned || vmi.DeletionTimestamp != nil {
			continue
		}
		if vmi.IsFinal() || virtkit.HasCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstanceReady, virtkit.ConditionFalse, virtkit.PodTerminatingReason) {
			finished = append(finished, vmi)
			continue
		}
		active = append(active, vmi)
	}

	var scaleErr error
	failReason := ""
	if !rs.Spec.Paused {
		want := int32(1)
		if rs.Spec.Replicas != nil {
			want = *rs.Spec.Replicas
		}
		diff := len(active) - int(want)
		switch {
		case diff < 0:
			n := min(-diff, BurstReplicas)
			for range n {
				vmi, err := r.create(ctx, rs)
				if err != nil {
					scaleErr, failReason = err, virtkit.FailedCreateVirtualMachineReason
					break
				}
				active = append(active, vmi)
			}
		case diff > 0:
			deleted := 0
			for _, vmi := range active[:min(diff, BurstReplicas)] {
				if err := r.deleteVMI(ctx, vmi); err != nil {
					scaleErr, failReason = err, virtkit.FailedDeleteVirtualMachineReason
					break
				}
				deleted++
			}
			active = active[deleted:]
		}
		if scaleErr == nil {
			for _, vmi := range finished {
				if err := r.deleteVMI(ctx, vmi); err != nil {
					scaleErr, failReason = err, virtkit.FailedDeleteVirtualMachineReason
					break
				}
			}
		}
	}

	st := &rs.Status
	st.Replicas = int32(len(active))
	st.ReadyReplicas = 0
	for _, vmi := range active {
		if vmi.IsReady() {
			st.ReadyReplicas++
		}
	}
	st.LabelSelector = sel.String()
	if scaleErr != nil {
		virtkit.SetCondition(&st.Conditions, virtkit.Condition{
			Type: virtkit.VirtualMachineInstanceReplicaSetReplicaFailure, Status: virtkit.ConditionTrue,
			Reason: failReason, Message: scaleErr.Error(),
		}, now)
	} else {
		virtkit.RemoveCondition(&st.Conditions, virtkit.VirtualMachineInstanceReplicaSetReplicaFailure)
	}
	if rs.Spec.Paused {
		virtkit.SetCondition(&st.Conditions, virtkit.Condition{
			Type: virtkit.VirtualMachineInstanceReplicaSetReplicaPaused, Status: virtkit.ConditionTrue,
			Reason: virtkit.PausedReplicaSetReason, Message: "Controller got paused",
		}, now)
	} else {
		virtkit.RemoveCondition(&st.Conditions, virtkit.VirtualMachineInstanceReplicaSetReplicaPaused)
	}
	if !equality.Semantic.DeepEqual(orig, st) {
		if err := r.o.Store.UpdateStatus(ctx, rs); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{}, scaleErr
}

// claim adopts a matching orphan and releases an owned VMI whose labels
// no longer match; it reports whether the VMI belongs to rs afterwards.
func (r *ReplicaSetReconciler) claim(ctx context.Context, rs *virtkit.VirtualMachineInstanceReplicaSet, sel labels.Selector, vmi *virtkit.VirtualMachineInstance) (bool, error) {
	ref := controllerOf(vmi)
	matches := sel.Matches(labels.Set(vmi.Labels))
	switch {
	case ref != nil && ref.UID == rs.UID:
		if matches {
			return true, nil
		}
		refs := vmi.OwnerReferences
		vmi.OwnerReferences = nil
		for _, o := range refs {
			if o.UID != rs.UID {
				vmi.OwnerReferences = append(vmi.OwnerReferences, o)
			}
		}
		return false, ignoreNotFound(r.o.Store.Update(ctx, vmi))
	case ref == nil && matches && vmi.DeletionTimestamp == nil:
		vmi.OwnerReferences = append(vmi.OwnerReferences, newControllerRef(rs, virtkit.KindVirtualMachineInstanceReplicaSet))
		if err := r.o.Store.Update(ctx, vmi); err != nil {
			return false, ignoreNotFound(err)
		}
		return true, nil
	}
	return false, nil
}

func (r *ReplicaSetReconciler) create(ctx context.Context, rs *virtkit.VirtualMachineInstanceReplicaSet) (*virtkit.VirtualMachineInstance, error) {
	tmpl := rs.Spec.Template
	if tmpl == nil {
		return nil, reconcile.TerminalError(fmt.Errorf("replicaset %s/%s: spec.template: required", rs.Namespace, rs.Name))
	}
	base := tmpl.ObjectMeta.Name
	if base == "" {
		base = tmpl.ObjectMeta.GenerateName
	}
	if base == "" {
		base = rs.Name
	}
	vmi := &virtkit.VirtualMachineInstance{
		TypeMeta: metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstance},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       rs.Namespace,
			GenerateName:    base,
			Labels:          maps.Clone(tmpl.ObjectMeta.Labels),
			Annotations:     maps.Clone(tmpl.ObjectMeta.Annotations),
			OwnerReferences: []metav1.OwnerReference{newControllerRef(rs, virtkit.KindVirtualMachineInstanceReplicaSet)},
			// The VMI controller's finalizer at create saves it a write.
			Finalizers: []string{virtkit.VirtualMachineInstanceFinalizer},
		},
		Spec: *tmpl.Spec.DeepCopy(),
	}
	// Each VMI is defaulted on its own (its own random firmware UUID), as
	// KubeVirt's webhook does when the ReplicaSet controller creates it.
	r.o.Defaults.SetDefaults(vmi)
	if err := r.o.createVMI(ctx, rs, virtkit.KindVirtualMachineInstanceReplicaSet, vmi); err != nil {
		r.o.event(ctx, rs, virtkit.EventTypeWarning, virtkit.EventReasonFailedCreate, "Create", "Error creating virtual machine instance: %v", err)
		return nil, fmt.Errorf("create vmi for replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	r.o.event(ctx, rs, virtkit.EventTypeNormal, virtkit.EventReasonSuccessfulCreate, "Create", "Created virtual machine instance %s", vmi.Name)
	return vmi, nil
}

func (r *ReplicaSetReconciler) deleteVMI(ctx context.Context, vmi *virtkit.VirtualMachineInstance) error {
	uid := vmi.UID
	err := r.o.Store.Delete(ctx, vmi, store.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		r.recordVMIDelete(ctx, vmi, err)
		return fmt.Errorf("delete vmi %s/%s: %w", vmi.Namespace, vmi.Name, err)
	}
	if err == nil {
		r.recordVMIDelete(ctx, vmi, nil)
	}
	return nil
}

// deleteOwned deletes the VMIs controlled by a deleted ReplicaSet (rs may
// be empty when it is already gone: then ownership is by name).
func (r *ReplicaSetReconciler) deleteOwned(ctx context.Context, name string, rs *virtkit.VirtualMachineInstanceReplicaSet, vmis []virtkit.VirtualMachineInstance) error {
	for i := range vmis {
		vmi := &vmis[i]
		ref := controllerOf(vmi)
		if ref == nil || ref.Kind != virtkit.KindVirtualMachineInstanceReplicaSet || ref.Name != name {
			continue
		}
		if rs.UID != "" && ref.UID != rs.UID {
			continue
		}
		if vmi.DeletionTimestamp == nil {
			if err := r.deleteVMI(ctx, vmi); err != nil {
				return err
			}
		}
	}
	return nil
}

func ignoreNotFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}
