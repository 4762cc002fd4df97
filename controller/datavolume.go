package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// DataVolumeReconciler is the control-plane half of CDI's DataVolume
// controller: it moves a new DataVolume from Pending to ImportScheduled
// (or CloneScheduled) by binding its claim and choosing the node whose
// import worker fills it (virtkit.DataVolumeImportNodeAnnotation). The
// import workers (package cdi/importer) take it from there.
//
// A clone is scheduled once its source DataVolume has succeeded, on the
// node holding the source when that is node-local.
type DataVolumeReconciler struct {
	o ReconcilerOptions
}

var _ reconcile.Reconciler = (*DataVolumeReconciler)(nil)

// NewDataVolumeReconciler returns the DataVolume reconciler.
func NewDataVolumeReconciler(o ReconcilerOptions) (*DataVolumeReconciler, error) {
	o, err := o.withDefaults("datavolume")
	if err != nil {
		return nil, err
	}
	return &DataVolumeReconciler{o: o}, nil
}

func dataVolumeList() virtkit.ObjectList { return &virtkit.DataVolumeList{} }

// Watches returns every DataVolume, and every Node (a node that becomes
// ready schedules the DataVolumes waiting for one).
func (r *DataVolumeReconciler) Watches() []reconcile.Watch {
	return []reconcile.Watch{
		{NewList: dataVolumeList, Map: reconcile.ObjectKey},
		{NewList: nodeList, Map: r.pendingDataVolumes},
	}
}

func (r *DataVolumeReconciler) pendingDataVolumes(ctx context.Context, _ virtkit.Object) []reconcile.Request {
	var list virtkit.DataVolumeList
	if err := r.o.Store.List(ctx, &list, store.ListOptions{}); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if dv := &list.Items[i]; dv.Status.Phase == virtkit.DataVolumePending || dv.Status.Phase == virtkit.DataVolumePhaseUnset ||
			dv.Status.Phase == virtkit.DataVolumeImportScheduled || dv.Status.Phase == virtkit.DataVolumeCloneScheduled ||
			dv.Status.Phase == virtkit.DataVolumeUploadReady {
			reqs = append(reqs, reconcile.Request{Namespace: dv.Namespace, Name: dv.Name})
		}
	}
	return reqs
}

// dataVolumeRetry is how soon a DataVolume waiting for a node or a clone
// source is looked at again.
const dataVolumeRetry = 2 * time.Second

// Reconcile implements Reconciler.
func (r *DataVolumeReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	dv := &virtkit.DataVolume{}
	found, err := getOptional(ctx, r.o.Store, keyOf(req), dv)
	if err != nil || !found || dv.DeletionTimestamp != nil {
		return reconcile.Result{}, err
	}
	now := r.o.now()
	st := &dv.Status
	if st.Phase == virtkit.DataVolumePhaseUnset {
		st.Phase = virtkit.DataVolumePending
		st.Progress = virtkit.ProgressNotAvailable
		st.SetCondition(virtkit.DataVolumeCondition{Type: virtkit.DataVolumeBound, Status: virtkit.ConditionFalse,
			Reason: virtkit.DataVolumeReasonPending, Message: "claim " + dv.Name + " pending"}, now)
		st.SetCondition(virtkit.DataVolumeCondition{Type: virtkit.DataVolumeReady, Status: virtkit.ConditionFalse}, now)
		st.SetCondition(virtkit.DataVolumeCondition{Type: virtkit.DataVolumeRunning, Status: virtkit.ConditionFalse}, now)
		if err := r.o.Store.UpdateStatus(ctx, dv); err != nil {
			return reconcile.Result{}, err
		}
	}
	if st.Phase == virtkit.DataVolumeImportScheduled || st.Phase == virtkit.DataVolumeCloneScheduled || st.Phase == virtkit.DataVolumeUploadReady {
		if err := r.rescheduleIfNodeLost(ctx, dv); err != nil {
			return reconcile.Result{}, err
		}
		st = &dv.Status
	}
	if st.Phase != virtkit.DataVolumePending {
		return reconcile.Result{}, nil
	}
	if dv.Spec.Source == nil {
		return reconcile.Result{}, reconcile.TerminalError(fmt.Errorf("datavolume %s: %w: spec.source: only source is supported (sourceRef is not)", req, store.ErrInvalid))
	}
	scheduled := virtkit.DataVolumeImportScheduled
	if dv.Spec.Source.Upload != nil {
		scheduled = virtkit.DataVolumeUploadReady
	}
	var node string
	if src := dv.Spec.Source.PVC; src != nil {
		scheduled = virtkit.DataVolumeCloneScheduled
		ns := src.Namespace
		if ns == "" {
			ns = dv.Namespace
		}
		source := &virtkit.DataVolume{}
		ok, err := getOptional(ctx, r.o.Store, store.Key{Namespace: ns, Name: src.Name}, source)
		if err != nil {
			return reconcile.Result{}, err
		}
		if !ok || source.Status.Phase != virtkit.DataVolumeSucceeded {
			msg := fmt.Sprintf("clone source %s/%s not found", ns, src.Name)
			reason := virtkit.DataVolumeReasonNotFound
			if ok {
				msg, reason = fmt.Sprintf("clone source %s/%s is not ready (phase %q)", ns, src.Name, source.Status.Phase), virtkit.DataVolumeReasonPending
			}
			if st.SetCondition(virtkit.DataVolumeCondition{Type: virtkit.DataVolumeBound, Status: virtkit.ConditionFalse, Reason: reason, Message: msg}, now) {
				if err := r.o.Store.UpdateStatus(ctx, dv); err != nil {
					return reconcile.Result{}, err
				}
			}
			return reconcile.Result{RequeueAfter: dataVolumeRetry}, nil
		}
		node = source.Annotations[virtkit.DataVolumeVolumeNodeAnnotation]
	}
	if dv.Spec.Source.Snapshot != nil {
		scheduled = virtkit.DataVolumeCloneScheduled
		var wait bool
		node, wait, err = r.snapshotSourceNode(ctx, dv)
		if err != nil || wait {
			return reconcile.Result{RequeueAfter: dataVolumeRetry}, err
		}
	}
	if node == "" {
		node, err = r.chooseNode(ctx)
		if err != nil {
			return reconcile.Result{}, err
		}
		if node == "" {
			if st.SetCondition(virtkit.DataVolumeCondition{Type: virtkit.DataVolumeBound, Status: virtkit.ConditionFalse,
				Reason: virtkit.DataVolumeReasonPending, Message: "no ready node to provision the claim on"}, now) {
				if err := r.o.Store.UpdateStatus(ctx, dv); err != nil {
					return reconcile.Result{}, err
				}
			}
			return reconcile.Result{RequeueAfter: dataVolumeRetry}, nil
		}
	}
	if dv.Annotations[virtkit.DataVolumeImportNodeAnnotation] != node {
		if dv.Annotations == nil {
			dv.Annotations = map[string]string{}
		}
		dv.Annotations[virtkit.DataVolumeImportNodeAnnotation] = node
		if err := r.o.Store.Update(ctx, dv); err != nil {
			return reconcile.Result{}, err
		}
	}
	st = &dv.Status
	st.Phase = scheduled
	st.ClaimName = dv.Name
	st.SetCondition(virtkit.DataVolumeCondition{Type: virtkit.DataVolumeBound, Status: virtkit.ConditionTrue,
		Reason: virtkit.DataVolumeReasonBound, Message: "PVC " + dv.Name + " Bound"}, now)
	if scheduled == virtkit.DataVolumeUploadReady {
		// The node's upload endpoint takes the data from here on (CDI's
		// upload server pod is running).
		st.SetCondition(virtkit.DataVolumeCondition{Type: virtkit.DataVolumeRunning, Status: virtkit.ConditionTrue,
			Reason: virtkit.DataVolumeReasonImportRunning, Message: "upload ready on node " + node}, now)
	} else {
		st.SetCondition(virtkit.DataVolumeCondition{Type: virtkit.DataVolumeRunning, Status: virtkit.ConditionFalse,
			Reason: virtkit.DataVolumeReasonTransferScheduled, Message: "scheduled on node " + node}, now)
	}
	if err := r.o.Store.UpdateStatus(ctx, dv); err != nil {
		return reconcile.Result{}, err
	}
	r.o.event(ctx, dv, virtkit.EventTypeNormal, string(scheduled), "Schedule", "%s scheduled on node %s", scheduled, node)
	return reconcile.Result{}, nil
}

// rescheduleIfNodeLost puts a DataVolume whose import has not started (or
// that waits for an upload) back to Pending when its node is gone or not
// ready (a clone stays: its source disk, or volume snapshot, lives there).
func (r *DataVolumeReconciler) rescheduleIfNodeLost(ctx context.Context, dv *virtkit.DataVolume) error {
	if dv.Spec.Source != nil && (dv.Spec.Source.PVC != nil || dv.Spec.Source.Snapshot != nil) {
		return nil
	}
	name := dv.Annotations[virtkit.DataVolumeImportNodeAnnotation]
	n := &virtkit.Node{}
	found, err := getOptional(ctx, r.o.Store, store.Key{Name: name}, n)
	if err != nil {
		return err
	}
	if found && virtkit.IsConditionTrue(n.Status.Conditions, virtkit.NodeReady) {
		return nil
	}
	dv.Status.Phase = virtkit.DataVolumePending
	dv.Status.SetCondition(virtkit.DataVolumeCondition{Type: virtkit.DataVolumeBound, Status: virtkit.ConditionFalse,
		Reason: virtkit.DataVolumeReasonPending, Message: "node " + name + " is not ready: scheduling again"}, r.o.now())
	r.o.Logger.Info("rescheduling datavolume", "datavolume", dv.Namespace+"/"+dv.Name, "lostNode", name)
	return r.o.Store.UpdateStatus(ctx, dv)
}

// chooseNode picks the ready node holding the fewest scheduled imports;
// "" when no node is ready.
func (r *DataVolumeReconciler) chooseNode(ctx context.Context) (string, error) {
	var nodes virtkit.NodeList
	if err := r.o.Store.List(ctx, &nodes, store.ListOptions{}); err != nil {
		return "", err
	}
	var ready []string
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if virtkit.IsConditionTrue(n.Status.Conditions, virtkit.NodeReady) && !n.Spec.Unschedulable {
			ready = append(ready, n.Name)
		}
	}
	if len(ready) == 0 {
		return "", nil
	}
	sort.Strings(ready)
	var dvs virtkit.DataVolumeList
	if err := r.o.Store.List(ctx, &dvs, store.ListOptions{}); err != nil {
		return "", err
	}
	load := map[string]int{}
	for i := range dvs.Items {
		load[dvs.Items[i].Annotations[virtkit.DataVolumeImportNodeAnnotation]]++
	}
	best := ready[0]
	for _, n := range ready[1:] {
		if load[n] < load[best] {
			best = n
		}
	}
	return best, nil
}

// vmiDataVolumes returns the names of the DataVolumes a VMI's volumes use
// (dataVolume volumes, and persistentVolumeClaim volumes whose claim is a
// DataVolume's).
func vmiDataVolumeNames(vmi *virtkit.VirtualMachineInstance) []string {
	var names []string
	for _, v := range vmi.Spec.Volumes {
		switch {
		case v.DataVolume != nil:
			names = append(names, v.DataVolume.Name)
		case v.PersistentVolumeClaim != nil:
			names = append(names, v.PersistentVolumeClaim.ClaimName)
		}
	}
	return names
}

// dataVolumeGate tells whether a VMI's DataVolumes are ready and, for
// node-local ones, the node they pin it to. A persistentVolumeClaim volume
// with no DataVolume of its name is not a DataVolume and does not gate.
type dataVolumeGate struct {
	has     bool   // the VMI uses at least one DataVolume
	ready   bool   // all succeeded
	node    string // "" unless a node-local volume pins the VMI
	message string
	failed  bool // some DataVolume failed
}

var errDataVolumeConflict = errors.New("node-local DataVolumes of the VMI live on different nodes")

func dataVolumesOf(ctx context.Context, st store.Store, vmi *virtkit.VirtualMachineInstance) (dataVolumeGate, error) {
	g := dataVolumeGate{ready: true}
	for _, name := range vmiDataVolumeNames(vmi) {
		dv := &virtkit.DataVolume{}
		ok, err := getOptional(ctx, st, store.Key{Namespace: vmi.Namespace, Name: name}, dv)
		if err != nil {
			return g, err
		}
		isDVVolume := false
		for _, v := range vmi.Spec.Volumes {
			isDVVolume = isDVVolume || v.DataVolume != nil && v.DataVolume.Name == name
		}
		if !ok {
			if isDVVolume {
				g.has, g.ready = true, false
				g.message = fmt.Sprintf("DataVolume %s does not exist", name)
			}
			continue
		}
		g.has = true
		switch dv.Status.Phase {
		case virtkit.DataVolumeSucceeded:
		case virtkit.DataVolumeFailed:
			g.ready, g.failed = false, true
			g.message = fmt.Sprintf("DataVolume %s failed", name)
			continue
		default:
			g.ready = false
			if g.message == "" {
				g.message = fmt.Sprintf("DataVolume %s is in phase %s", name, dv.Status.Phase)
			}
			continue
		}
		if n := dv.Annotations[virtkit.DataVolumeVolumeNodeAnnotation]; n != "" {
			if g.node != "" && g.node != n {
				return g, fmt.Errorf("%w: %s and %s", errDataVolumeConflict, g.node, n)
			}
			g.node = n
		}
	}
	return g, nil
}

// dataVolumeMapper maps a DataVolume that succeeded or failed to the
// unplaced VMIs of its namespace that use it (progress updates wake
// nobody: only a final phase changes what a waiting VMI does).
func dataVolumeMapper(st store.Store) reconcile.MapFunc {
	return func(ctx context.Context, obj virtkit.Object) []reconcile.Request {
		dv, ok := obj.(*virtkit.DataVolume)
		if !ok || !dv.Status.Phase.IsFinal() {
			return nil
		}
		var vmis virtkit.VirtualMachineInstanceList
		if err := st.List(ctx, &vmis, store.ListOptions{Namespace: dv.Namespace}); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		for i := range vmis.Items {
			v := &vmis.Items[i]
			if v.Status.NodeName != "" || v.IsFinal() {
				continue
			}
			for _, n := range vmiDataVolumeNames(v) {
				if n == dv.Name {
					reqs = append(reqs, reconcile.Request{Namespace: v.Namespace, Name: v.Name})
					break
				}
			}
		}
		return reqs
	}
}

// templateDataVolumeFacts reads a VM's template DataVolumes for its
// printable status: an error, still provisioning, or waiting for binding.
func templateDataVolumeFacts(ctx context.Context, st store.Store, vm *virtkit.VirtualMachine) (dvErr, provisioning, binding bool) {
	for i := range vm.Spec.DataVolumeTemplates {
		dv := &virtkit.DataVolume{}
		ok, err := getOptional(ctx, st, store.Key{Namespace: vm.Namespace, Name: vm.Spec.DataVolumeTemplates[i].ObjectMeta.Name}, dv)
		if err != nil || !ok {
			continue
		}
		running := dv.Status.Condition(virtkit.DataVolumeRunning)
		switch {
		case dv.Status.Phase == virtkit.DataVolumeFailed,
			running != nil && running.Status == virtkit.ConditionFalse && running.Reason == virtkit.DataVolumeReasonError:
			dvErr = true
		case dv.Status.Phase == virtkit.DataVolumePhaseUnset || dv.Status.Phase == virtkit.DataVolumePending ||
			dv.Status.Phase == virtkit.DataVolumeWaitForFirstConsumer:
			binding = true
		case dv.Status.Phase != virtkit.DataVolumeSucceeded:
			provisioning = true
		}
	}
	return dvErr, provisioning, binding
}
