package controller

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

const (
	migrationDefaultKeepFinished    = 5
	migrationDefaultUnschedTimeout  = 5 * time.Minute
	migrationInFlightRecheckDefault = 5 * time.Second
)

// MigrationOptions configure the [MigrationReconciler]; the zero value is
// KubeVirt's behaviour.
type MigrationOptions struct {
	// Config is the cluster migration configuration (KubeVirt CR
	// spec.configuration.migrations): the fields it sets replace KubeVirt's
	// defaults ([virtkit.DefaultMigrationConfiguration]), the rest keep them.
	Config *virtkit.MigrationConfiguration
	// NamespaceLabels returns the labels of a namespace, for
	// MigrationPolicy namespaceSelectors. virtkit stores no Namespace
	// objects; nil means every namespace has no labels.
	NamespaceLabels func(ctx context.Context, namespace string) (map[string]string, error)
	// UnschedulableTimeout fails a migration whose target cannot be placed
	// for this long; 0 = 5 minutes (KubeVirt's unschedulable pod timeout).
	UnschedulableTimeout time.Duration
	// KeepFinished is how many finished migrations are kept per VMI (the
	// newest); 0 = 5.
	KeepFinished int
	// InFlightRecheck is how often a handed-off migration is looked at
	// when nothing changes (to notice a target node that went away);
	// 0 = 5 s.
	InFlightRecheck time.Duration
}

// MigrationReconciler drives VirtualMachineInstanceMigrations through
// KubeVirt's phase machine. It never touches a hypervisor:
// it admits the migration, waits for a free slot, places the target
// through the Scheduler, and hands the migration to the node agents by
// writing the VMI's status.migrationState and the label
// kubevirt.io/migrationTargetNodeName. From there the agents report
// through status.migrationState and the reconciler follows:
//
//	""              admission: the VMI exists, is Running, LiveMigratable=True,
//	                and no other migration of it is in flight (a cancelled
//	                one still finalizing does not count); else Failed
//	Pending         waiting for a slot: at most parallelMigrationsPerCluster
//	                running migrations, parallelOutboundMigrationsPerNode per
//	                source node, the VMI on one node only, and the VMI's
//	                previous migration ended (a new one queues behind a
//	                cancelled one)
//	Scheduling      the Scheduler chooses a target: the VMI's placement rules,
//	                spec.addedNodeSelector, never the source node
//	Scheduled       hand-off: VMI migrationState {migrationUid, sourceNode,
//	                targetNode, migrationPolicyName, migrationConfiguration}
//	PreparingTarget until the target agent published targetNodeAddress
//	TargetReady     until the source agent wrote startTimestamp
//	Running         until completed (Succeeded) or failed (Failed); a
//	                target that has not taken the VMI over within the
//	                progress timeout after the source finished fails it
//
// A migration deleted before the hand-off fails at once; after it, the
// reconciler sets migrationState.abortRequested and the source agent
// aborts (the guest keeps running on the source). A finished migration gets
// a copy of the VMI's final migrationState, loses its finalizer
// kubevirt.io/migrationJobFinalize, and only the newest KeepFinished
// finished migrations of a VMI are kept.
type MigrationReconciler struct {
	o   ReconcilerOptions
	m   MigrationOptions
	cfg *virtkit.MigrationConfiguration

	// slotMu serialises admission and slot decisions, so two migrations
	// reconciled in parallel never both take the last slot.
	slotMu sync.Mutex

	// index finds a VMI's migrations for the VMI watch.
	index *migrationIndex
}

var _ reconcile.Reconciler = (*MigrationReconciler)(nil)

// NewMigrationReconciler returns the migration reconciler. Requests are
// VirtualMachineInstanceMigration keys.
func NewMigrationReconciler(o ReconcilerOptions, m MigrationOptions) (*MigrationReconciler, error) {
	o, err := o.withDefaults("migration")
	if err != nil {
		return nil, err
	}
	if m.UnschedulableTimeout <= 0 {
		m.UnschedulableTimeout = migrationDefaultUnschedTimeout
	}
	if m.KeepFinished <= 0 {
		m.KeepFinished = migrationDefaultKeepFinished
	}
	if m.InFlightRecheck <= 0 {
		m.InFlightRecheck = migrationInFlightRecheckDefault
	}
	cfg := virtkit.ClusterMigrationConfiguration(m.Config)
	if *cfg.ParallelMigrationsPerCluster == 0 {
		return nil, fmt.Errorf("%w: migration: Config.parallelMigrationsPerCluster: must be > 0", errInvalidOptions)
	}
	if *cfg.ParallelOutboundMigrationsPerNode == 0 {
		return nil, fmt.Errorf("%w: migration: Config.parallelOutboundMigrationsPerNode: must be > 0", errInvalidOptions)
	}
	return &MigrationReconciler{o: o, m: m, cfg: cfg, index: newMigrationIndex()}, nil
}

// Configuration returns the effective cluster migration configuration.
func (r *MigrationReconciler) Configuration() *virtkit.MigrationConfiguration {
	return r.cfg.DeepCopy()
}

func migrationList() virtkit.ObjectList { return &virtkit.VirtualMachineInstanceMigrationList{} }

// Watches returns what the reconciler must be fed: migrations (a finished
// or deleted one also wakes the migrations waiting for a slot) and VMIs
// (mapped to their migrations).
func (r *MigrationReconciler) Watches() []reconcile.Watch {
	return []reconcile.Watch{
		{NewList: migrationList, Map: func(ctx context.Context, obj virtkit.Object) []reconcile.Request {
			out := []reconcile.Request{{Namespace: obj.GetNamespace(), Name: obj.GetName()}}
			mig, ok := obj.(*virtkit.VirtualMachineInstanceMigration)
			if ok {
				r.index.observe(mig)
			}
			if !ok || !(mig.IsFinal() || mig.DeletionTimestamp != nil) {
				return out
			}
			return append(out, r.waitingRequests(ctx)...)
		}},
		{NewList: vmiList, Map: func(_ context.Context, obj virtkit.Object) []reconcile.Request {
			return r.index.requests(obj.GetNamespace(), obj.GetName())
		}},
	}
}

// waitingRequests lists the migrations still waiting in Pending.
func (r *MigrationReconciler) waitingRequests(ctx context.Context) []reconcile.Request {
	migs := &virtkit.VirtualMachineInstanceMigrationList{}
	if err := r.o.Store.List(ctx, migs, store.ListOptions{}); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range migs.Items {
		if migs.Items[i].Status.Phase == virtkit.MigrationPending {
			out = append(out, reconcile.Request{Namespace: migs.Items[i].Namespace, Name: migs.Items[i].Name})
		}
	}
	return out
}

// Reconcile implements Reconciler.
func (r *MigrationReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	key := keyOf(req)
	mig := &virtkit.VirtualMachineInstanceMigration{}
	found, err := getOptional(ctx, r.o.Store, key, mig)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !found {
		r.index.forget(key)
		return reconcile.Result{}, nil
	}
	r.index.observe(mig)
	if mig.Spec.VMIName == "" {
		// Validation rejects this; an object written around it fails.
		if !mig.IsFinal() {
			return reconcile.Result{}, r.fail(ctx, mig, nil, "spec.vmiName: required")
		}
		return reconcile.Result{}, r.finalize(ctx, mig, nil)
	}
	vmi := &virtkit.VirtualMachineInstance{}
	vmiFound, err := getOptional(ctx, r.o.Store, store.Key{Namespace: mig.Namespace, Name: mig.Spec.VMIName}, vmi)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !vmiFound {
		vmi = nil
	}
	if mig.IsFinal() {
		return reconcile.Result{}, r.finalize(ctx, mig, vmi)
	}
	if mig.DeletionTimestamp == nil {
		if err := r.ensureMetadata(ctx, mig); err != nil {
			return reconcile.Result{}, err
		}
	}
	res, err := r.advance(ctx, mig, vmi)
	if err != nil {
		return reconcile.Result{}, err
	}
	if mig.IsFinal() {
		return reconcile.Result{}, r.finalize(ctx, mig, vmi)
	}
	return res, nil
}

// ensureMetadata adds the finalizer and the kubevirt.io/vmi-name label.
func (r *MigrationReconciler) ensureMetadata(ctx context.Context, mig *virtkit.VirtualMachineInstanceMigration) error {
	changed := addFinalizer(mig, virtkit.VirtualMachineInstanceMigrationFinalizer)
	changed = r.traceRoot(ctx, mig) || changed
	if mig.Labels[virtkit.MigrationSelectorLabel] != mig.Spec.VMIName {
		if mig.Labels == nil {
			mig.Labels = map[string]string{}
		}
		mig.Labels[virtkit.MigrationSelectorLabel] = mig.Spec.VMIName
		changed = true
	}
	if !changed {
		return nil
	}
	status := mig.Status.DeepCopy()
	if err := r.o.Store.Update(ctx, mig); err != nil {
		return err
	}
	mig.Status = *status
	return nil
}

// ownState returns the VMI's migrationState if it belongs to mig.
func ownState(mig *virtkit.VirtualMachineInstanceMigration, vmi *virtkit.VirtualMachineInstance) *virtkit.VirtualMachineInstanceMigrationState {
	if vmi == nil || vmi.Status.MigrationState == nil || vmi.Status.MigrationState.MigrationUID != mig.UID {
		return nil
	}
	return vmi.Status.MigrationState
}

// handedOff reports whether the VMI's migrationState was written for mig.
func handedOff(mig *virtkit.VirtualMachineInstanceMigration) bool {
	return mig.TargetIsHandedOff()
}

// advance runs the failure checks and then the phase machine as far as the
// current state allows, writing the migration's status once.
func (r *MigrationReconciler) advance(ctx context.Context, mig *virtkit.VirtualMachineInstanceMigration, vmi *virtkit.VirtualMachineInstance) (reconcile.Result, error) {
	before := mig.Status.DeepCopy()
	now := r.o.now()
	ms := ownState(mig, vmi)

	// Failure rules first (KubeVirt's updateStatus order).
	switch {
	case vmi == nil:
		return reconcile.Result{}, r.fail(ctx, mig, nil, virtkit.MigrationReasonVMIMissing)
	case mig.DeletionTimestamp != nil && !handedOff(mig):
		virtkit.SetCondition(&mig.Status.Conditions, virtkit.Condition{
			Type: virtkit.VirtualMachineInstanceMigrationAbortRequested, Status: virtkit.ConditionTrue,
		}, now)
		return reconcile.Result{}, r.fail(ctx, mig, vmi, virtkit.MigrationReasonDeletedEarly)
	case vmi.IsFinal() && ms == nil:
		return reconcile.Result{}, r.fail(ctx, mig, vmi, virtkit.MigrationReasonVMIFinal)
	case handedOff(mig) && ms == nil:
		return reconcile.Result{}, r.fail(ctx, mig, vmi, virtkit.MigrationReasonStateTakenOver)
	case ms != nil && ms.Failed:
		reason := ms.FailureReason
		if reason == "" {
			reason = "migration failed"
		}
		return reconcile.Result{}, r.fail(ctx, mig, vmi, reason)
	case vmi.IsFinal() && !ms.Completed:
		return reconcile.Result{}, r.fail(ctx, mig, vmi, virtkit.MigrationReasonVMIFinal)
	case sourceMoved(mig, vmi, ms):
		return reconcile.Result{}, r.fail(ctx, mig, vmi, virtkit.MigrationReasonSourceMoved)
	}

	res := reconcile.Result{}
	for step := 0; step < 10; step++ {
		prev := mig.Status.Phase
		var next virtkit.VirtualMachineInstanceMigrationPhase
		var err error
		switch mig.Status.Phase {
		case virtkit.MigrationPhaseUnset:
			var reason string
			if reason, err = r.admit(ctx, mig, vmi); err == nil && reason != "" {
				return reconcile.Result{}, r.fail(ctx, mig, vmi, reason)
			}
		case virtkit.MigrationPending:
			next, res, err = r.takeSlot(ctx, mig, vmi)
		case virtkit.MigrationScheduling:
			next, res, err = r.schedule(ctx, mig, vmi, now)
		case virtkit.MigrationScheduled:
			err = r.handOff(ctx, mig, vmi)
			next = virtkit.MigrationPreparingTarget
			ms = ownState(mig, vmi)
		case virtkit.MigrationPreparingTarget:
			if ms != nil && ms.TargetNode != "" && ms.TargetNodeAddress != "" {
				next = virtkit.MigrationTargetReady
			}
		case virtkit.MigrationTargetReady:
			if ms != nil && ms.StartTimestamp != nil {
				next = virtkit.MigrationRunning
			}
		case virtkit.MigrationRunning:
			if ms != nil && ms.Completed && !ms.Failed {
				next = virtkit.MigrationSucceeded
			}
		}
		if err != nil {
			if !reflect.DeepEqual(before, &mig.Status) {
				// Keep what was decided (e.g. the chosen target).
				_ = r.o.Store.UpdateStatus(ctx, mig)
			}
			return reconcile.Result{}, err
		}
		if next != "" {
			mig.SetPhase(next, now)
		}
		if mig.Status.Phase == prev {
			break
		}
	}

	if handedOff(mig) && !mig.IsFinal() {
		if err := r.inFlight(ctx, mig, vmi, ms, now); err != nil {
			return reconcile.Result{}, err
		}
		if mig.IsFinal() {
			return reconcile.Result{}, nil
		}
		res = reconcile.Result{RequeueAfter: r.m.InFlightRecheck}
	}
	if ms != nil {
		mig.Status.MigrationState = ms.DeepCopy()
	}
	if !reflect.DeepEqual(before, &mig.Status) {
		if err := r.o.Store.UpdateStatus(ctx, mig); err != nil {
			return reconcile.Result{}, err
		}
		if mig.Status.Phase != before.Phase {
			r.o.Logger.Info("migration phase", "migration", store.KeyOf(mig).String(), "vmi", mig.Spec.VMIName, "phase", mig.Status.Phase)
			r.recordMigrationPhase(ctx, mig, before.Phase)
		}
	}
	return res, nil
}

func (r *MigrationReconciler) migrationsOf(ctx context.Context, namespace, vmiName string) ([]virtkit.VirtualMachineInstanceMigration, error) {
	// From the store, not the cache: the migrations of one VMI decide
	// which one may run, and a cache may not show a write just made.
	migs := &virtkit.VirtualMachineInstanceMigrationList{}
	if err := r.o.Store.List(ctx, migs, store.ListOptions{
		Namespace:     namespace,
		LabelSelector: labels.SelectorFromSet(labels.Set{virtkit.MigrationSelectorLabel: vmiName}),
	}); err != nil {
		return nil, err
	}
	return migs.Items, nil
}

// sourceMoved reports whether the VMI runs elsewhere than the node the
// migration was admitted to move it from, before the migration completed:
// the VMI it was admitted for was deleted and created again on another
// node, or failed over. No node would ever act on it (the recorded source
// does not run the VMI, the VMI's node is not the source), so it fails.
func sourceMoved(mig *virtkit.VirtualMachineInstanceMigration, vmi *virtkit.VirtualMachineInstance, ms *virtkit.VirtualMachineInstanceMigrationState) bool {
	src := sourceOf(mig)
	if ms != nil && ms.SourceNode != "" {
		src = ms.SourceNode
	}
	return src != "" && vmi.Status.NodeName != "" && vmi.Status.NodeName != src && (ms == nil || !ms.Completed)
}

// sourceOf is the node a migration moves away from.
func sourceOf(mig *virtkit.VirtualMachineInstanceMigration) string {
	if mig.Status.MigrationState != nil {
		return mig.Status.MigrationState.SourceNode
	}
	return ""
}

func phaseSince(mig *virtkit.VirtualMachineInstanceMigration, phase virtkit.VirtualMachineInstanceMigrationPhase) *metav1.Time {
	for i := len(mig.Status.PhaseTransitionTimestamps) - 1; i >= 0; i-- {
		if t := mig.Status.PhaseTransitionTimestamps[i]; t.Phase == phase {
			return &t.PhaseTransitionTimestamp
		}
	}
	return nil
}

func truncateMsg(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
