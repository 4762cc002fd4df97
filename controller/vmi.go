package controller

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/scheduler"
	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/tracing"
)

// VMIReconciler places VirtualMachineInstances on nodes and owns their
// lifecycle up to the hand-off to a node agent (phases "" -> Pending ->
// Scheduling -> Scheduled), plus the clean-up of deleted and final VMIs.
// See the package documentation for the protocol.
//
// Placement decisions are serialised inside one reconciler, and each
// decision is remembered at once, so two VMIs reconciled in parallel never
// both take the last free slot of a node.
type VMIReconciler struct {
	o     ReconcilerOptions
	cache placementCache
	own   *ownWrites // the VMIs this reconciler wrote
}

var _ reconcile.Reconciler = (*VMIReconciler)(nil)

// NewVMIReconciler returns the VMI placement reconciler.
func NewVMIReconciler(o ReconcilerOptions) (*VMIReconciler, error) {
	o, err := o.withDefaults("vmi")
	if err != nil {
		return nil, err
	}
	own := newOwnWrites()
	o.Store = recordingStore{Store: o.Store, own: own, cache: o.Cache}
	r := &VMIReconciler{o: o, own: own, cache: placementCache{vmis: map[store.Key]*virtkit.VirtualMachineInstance{}, waiting: map[store.Key]bool{}}}
	if inc, ok := o.Scheduler.(incrementalScheduler); ok {
		r.cache.placements = inc.NewPlacements()
	}
	return r, nil
}

// incrementalScheduler is a Scheduler that keeps placement state between
// decisions ([scheduler.Default] does): the reconciler feeds it every VMI
// it sees and a decision no longer walks every placed VMI.
type incrementalScheduler interface {
	NewPlacements() *scheduler.Placements
}

// Watches returns what the reconciler must be fed: every VMI, and every
// Node (a node that appears or changes retries the VMIs waiting for one).
func (r *VMIReconciler) Watches() []reconcile.Watch {
	return []reconcile.Watch{
		{NewList: vmiList, Map: r.own.skipOwn(r.mapVMI)},
		{NewList: nodeList, Map: func(context.Context, virtkit.Object) []reconcile.Request { return r.cache.waitingRequests() }},
		{NewList: dataVolumeList, Map: dataVolumeMapper(r.o.Store)},
	}
}

// mapVMI enqueues a VMI unless it is settled: placed, labelled for its
// node, carrying the finalizer, neither deleted nor final, and already
// known to the placement state as it is. A reconcile of such a VMI reads it
// and does nothing (the node agents' writes after the hand-off are such).
func (r *VMIReconciler) mapVMI(ctx context.Context, obj virtkit.Object) []reconcile.Request {
	if vmi, ok := obj.(*virtkit.VirtualMachineInstance); ok && r.cache.settled(vmi) {
		return nil
	}
	return reconcile.ObjectKey(ctx, obj)
}

// Reconcile implements Reconciler.
func (r *VMIReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	key := keyOf(req)
	vmi := &virtkit.VirtualMachineInstance{}
	found, err := getOptional(ctx, r.o.Store, key, vmi)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !found {
		r.cache.forget(key)
		r.own.forget(virtkit.KindVirtualMachineInstance, key)
		return reconcile.Result{}, nil
	}
	r.cache.observe(key, vmi)

	switch {
	case vmi.DeletionTimestamp != nil:
		return reconcile.Result{}, r.finishDeleted(ctx, key, vmi)
	case vmi.IsFinal():
		return reconcile.Result{}, r.releaseFinal(ctx, vmi)
	case vmi.Status.NodeName == "" && (vmi.IsUnprocessed() || vmi.IsScheduling()):
		return reconcile.Result{}, r.place(ctx, key, vmi)
	case vmi.Status.NodeName != "" && vmi.Labels[virtkit.NodeNameLabel] != vmi.Status.NodeName:
		// The label write after placement failed, or the VMI moved (a
		// migration): node agents find their VMIs by this label.
		return reconcile.Result{}, r.setNodeLabel(ctx, vmi)
	}
	return reconcile.Result{}, nil
}

func (r *VMIReconciler) setNodeLabel(ctx context.Context, vmi *virtkit.VirtualMachineInstance) error {
	if vmi.Labels == nil {
		vmi.Labels = map[string]string{}
	}
	vmi.Labels[virtkit.NodeNameLabel] = vmi.Status.NodeName
	return r.o.Store.Update(ctx, vmi)
}

// finishDeleted fails a VMI that was deleted before a node agent took it and
// releases the controller's finalizer once nobody runs it any more.
func (r *VMIReconciler) finishDeleted(ctx context.Context, key store.Key, vmi *virtkit.VirtualMachineInstance) error {
	taken := hasFinalizer(vmi, virtkit.NodeAgentFinalizer) && vmi.Status.NodeName != ""
	notTaken := vmi.IsUnprocessed() || vmi.IsScheduling() || (vmi.IsScheduled() && !taken)
	if notTaken {
		vmi.SetPhase(virtkit.Failed, r.o.now())
		if err := r.o.Store.UpdateStatus(ctx, vmi); err != nil {
			return err
		}
		r.cache.observe(key, vmi)
	}
	if vmi.IsFinal() {
		return r.releaseFinal(ctx, vmi)
	}
	return nil
}

// releaseFinal removes the VMI finalizer once the node agent released its.
// A node agent's finalizer on a VMI whose status names no node has no agent
// to release it (agents act only on VMIs placed on them): it goes too.
func (r *VMIReconciler) releaseFinal(ctx context.Context, vmi *virtkit.VirtualMachineInstance) error {
	orphaned := hasFinalizer(vmi, virtkit.NodeAgentFinalizer) && vmi.Status.NodeName == ""
	if hasFinalizer(vmi, virtkit.NodeAgentFinalizer) && !orphaned {
		return nil
	}
	if orphaned {
		r.o.Logger.Warn("releasing the node agent's finalizer of a VMI placed on no node", "vmi", store.KeyOf(vmi).String())
	}
	if !removeFinalizers(vmi, virtkit.VirtualMachineInstanceFinalizer, virtkit.DeprecatedVirtualMachineInstanceFinalizer, virtkit.NodeAgentFinalizer) {
		return nil
	}
	err := r.o.Store.Update(ctx, vmi)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

// place runs the scheduler and records the outcome.
func (r *VMIReconciler) place(ctx context.Context, key store.Key, vmi *virtkit.VirtualMachineInstance) error {
	changed := addFinalizer(vmi, virtkit.VirtualMachineInstanceFinalizer)
	if r.o.traceVMIRoot(ctx, vmi) || changed {
		if err := r.o.Store.Update(ctx, vmi); err != nil {
			return err
		}
	}
	pin, wait, err := r.waitForDataVolumes(ctx, vmi)
	if err != nil || wait {
		return err
	}
	ctx, span := r.o.startVMISpan(ctx, vmi, "vmi.schedule")
	err = r.schedule(ctx, key, vmi, pin)
	if err == nil {
		span.SetAttributes(tracing.AttrNode.String(vmi.Status.NodeName))
	}
	tracing.EndSpan(span, err)
	return err
}

// schedule picks the VMI's node and records it in the status.
func (r *VMIReconciler) schedule(ctx context.Context, key store.Key, vmi *virtkit.VirtualMachineInstance, pin string) error {
	now := r.o.now()
	nodes, err := r.readNodes(ctx, pin)
	if err != nil {
		return err
	}
	if err := r.cache.prime(ctx, r.o.Store); err != nil {
		return err
	}

	sel, err := clusterNodeSelectors(ctx, r.o.Store)
	if err != nil {
		return err
	}

	// One decision at a time: choose, then assume the VMI is there before
	// the next decision, so concurrent workers cannot overcommit a node.
	nodeName, schedErr := r.cache.schedule(ctx, r.o.Scheduler, key, withNodeSelectors(vmi, sel), nodes)

	if vmi.Status.Phase == virtkit.VmPhaseUnset {
		vmi.SetPhase(virtkit.Pending, now)
	}
	vmi.SetPhase(virtkit.Scheduling, now)
	if schedErr != nil {
		if !errors.Is(schedErr, scheduler.ErrUnschedulable) {
			// Constraints that cannot be evaluated will not improve by waiting.
			schedErr = reconcile.TerminalError(schedErr)
		}
		virtkit.SetCondition(&vmi.Status.Conditions, virtkit.Condition{
			Type: virtkit.VirtualMachineInstancePodScheduled, Status: virtkit.ConditionFalse,
			Reason: virtkit.PodReasonUnschedulable, Message: schedErr.Error(),
		}, now)
		setVMIReadyFalse(vmi, virtkit.PodNotExistsReason, "virt-launcher pod has not yet been scheduled", now)
		r.cache.wait(key)
		if err := r.o.Store.UpdateStatus(ctx, vmi); err != nil {
			return err
		}
		r.o.event(ctx, vmi, virtkit.EventTypeWarning, virtkit.EventReasonFailedScheduling, "Schedule", "%v", schedErr)
		return fmt.Errorf("vmi %s: %w", key, schedErr)
	}

	vmi.Status.NodeName = nodeName
	vmi.SetPhase(virtkit.Scheduled, now)
	virtkit.SetCondition(&vmi.Status.Conditions, virtkit.Condition{
		Type: virtkit.VirtualMachineInstancePodScheduled, Status: virtkit.ConditionTrue,
	}, now)
	setVMIReadyFalse(vmi, virtkit.GuestNotRunningReason, "Guest VM is not reported as running", now)
	// The node label (node agents select their VMIs by it) and the status
	// naming the node in one write where the store allows it, so an agent
	// never sees one without the other. On a store without
	// store.StatusWriter these are two writes, the label first; an agent
	// takes the VMI only once the status names its node.
	if vmi.Labels == nil {
		vmi.Labels = map[string]string{}
	}
	vmi.Labels[virtkit.NodeNameLabel] = nodeName
	// The node agent's finalizer comes with the hand-off: the agent then
	// has nothing to add before it defines the domain, and a deleted VMI
	// it never started is released by the agent (or, for a silent node,
	// by the node health reconciler).
	addFinalizer(vmi, virtkit.NodeAgentFinalizer)
	if err := store.UpdateWithStatus(ctx, r.o.Store, vmi); err != nil {
		r.cache.forget(key) // re-read next time; the assumption may be wrong
		return err
	}
	r.cache.observe(key, vmi)
	r.o.event(ctx, vmi, virtkit.EventTypeNormal, virtkit.EventReasonScheduled, "Schedule", "Successfully assigned %s/%s to %s", vmi.Namespace, vmi.Name, nodeName)
	r.o.Logger.Debug("scheduled", "vmi", key.String(), "node", nodeName)
	return nil
}

func setVMIReadyFalse(vmi *virtkit.VirtualMachineInstance, reason, msg string, now metav1.Time) {
	virtkit.SetCondition(&vmi.Status.Conditions, virtkit.Condition{
		Type: virtkit.VirtualMachineInstanceReady, Status: virtkit.ConditionFalse, Reason: reason, Message: msg,
	}, now)
}
