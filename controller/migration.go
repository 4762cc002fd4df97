package controller

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/scheduler"
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
		return nil, fmt.Errorf("%w: migration: Config.parallelMigrationsPerCluster: must be > 0", reconcile.ErrInvalidOptions)
	}
	if *cfg.ParallelOutboundMigrationsPerNode == 0 {
		return nil, fmt.Errorf("%w: migration: Config.parallelOutboundMigrationsPerNode: must be > 0", reconcile.ErrInvalidOptions)
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

// admit applies KubeVirt's create admission and canMigrateVMI; it returns
// a reason when the migration must fail.
func (r *MigrationReconciler) admit(ctx context.Context, mig *virtkit.VirtualMachineInstanceMigration, vmi *virtkit.VirtualMachineInstance) (string, error) {
	if vmi.IsFinal() {
		return virtkit.MigrationReasonVMIFinal, nil
	}
	if !vmi.IsRunning() || vmi.Status.NodeName == "" {
		return fmt.Sprintf("%s (phase %q)", virtkit.MigrationReasonNotRunning, vmi.Status.Phase), nil
	}
	if c := virtkit.GetCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstanceIsMigratable); c == nil || c.Status != virtkit.ConditionTrue {
		if c == nil {
			return "Cannot migrate VMI, Reason: LiveMigratable condition not reported yet", nil
		}
		return fmt.Sprintf("Cannot migrate VMI, Reason: %s, Message: %s", c.Reason, c.Message), nil
	}
	r.slotMu.Lock()
	defer r.slotMu.Unlock()
	migs, err := r.migrationsOf(ctx, mig.Namespace, mig.Spec.VMIName)
	if err != nil {
		return "", err
	}
	for i := range migs {
		o := &migs[i]
		if o.UID == mig.UID || o.IsFinal() || o.Status.Phase == virtkit.MigrationPhaseUnset || o.DeletionTimestamp != nil {
			// A cancelled migration (deleted, finalizing) does not refuse
			// the next one: that one waits in Pending (takeSlot).
			continue
		}
		return fmt.Sprintf("%s (%s)", virtkit.MigrationReasonInFlight, o.Name), nil
	}
	if ms := vmi.Status.MigrationState; ms != nil && ms.MigrationUID != "" && ms.MigrationUID != mig.UID && !ms.Completed && !ms.Failed {
		for i := range migs {
			if migs[i].UID == ms.MigrationUID && !migs[i].IsFinal() && migs[i].DeletionTimestamp == nil {
				return fmt.Sprintf("%s (%s)", virtkit.MigrationReasonInFlight, migs[i].Name), nil
			}
		}
	}
	// Decided under the lock: write Pending now, so the next admission sees it.
	before := mig.Status.DeepCopy()
	mig.SetPhase(virtkit.MigrationPending, r.o.now())
	mig.Status.MigrationState = &virtkit.VirtualMachineInstanceMigrationState{
		MigrationUID: mig.UID, SourceNode: vmi.Status.NodeName,
	}
	if err := r.o.Store.UpdateStatus(ctx, mig); err != nil {
		mig.Status = *before
		return "", err
	}
	return "", nil
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

// requeueDelay is KubeVirt's wait for a slot by priority.
func requeueDelay(mig *virtkit.VirtualMachineInstanceMigration) time.Duration {
	if mig.Spec.Priority != nil {
		switch *mig.Spec.Priority {
		case virtkit.PrioritySystemCritical:
			return time.Second
		case virtkit.PriorityUserTriggered:
			return 3 * time.Second
		}
	}
	return 5 * time.Second
}

// takeSlot moves a Pending migration on when the parallel limits allow
// (KubeVirt's handleTargetPodCreation).
func (r *MigrationReconciler) takeSlot(ctx context.Context, mig *virtkit.VirtualMachineInstanceMigration, vmi *virtkit.VirtualMachineInstance) (virtkit.VirtualMachineInstanceMigrationPhase, reconcile.Result, error) {
	wait := reconcile.Result{RequeueAfter: requeueDelay(mig)}
	if len(vmi.ActiveNodes()) > 1 {
		// A previous target is still being cleaned up.
		return "", reconcile.Result{RequeueAfter: time.Second}, nil
	}
	if prev, err := r.previousInFlight(ctx, mig, vmi); err != nil || prev != "" {
		if prev != "" {
			r.o.Logger.Debug("migration waits for the previous one to end", "migration", mig.Name, "previous", prev)
		}
		return "", reconcile.Result{RequeueAfter: time.Second}, err
	}
	if mig.Status.MigrationState == nil || mig.Status.MigrationState.SourceNode == "" {
		mig.Status.MigrationState = &virtkit.VirtualMachineInstanceMigrationState{MigrationUID: mig.UID, SourceNode: vmi.Status.NodeName}
	}
	if _, evac := mig.Annotations[virtkit.EvacuationMigrationAnnotation]; evac {
		wait, err := r.evacuationBackoff(ctx, mig)
		if err != nil {
			return "", reconcile.Result{}, err
		}
		if wait > 0 {
			return "", reconcile.Result{RequeueAfter: wait}, nil
		}
	}
	r.slotMu.Lock()
	defer r.slotMu.Unlock()
	// From the store, not the cache: the slot just taken by the previous
	// decision must count (the parallel limits are never exceeded).
	all := &virtkit.VirtualMachineInstanceMigrationList{}
	if err := r.o.Store.List(ctx, all, store.ListOptions{}); err != nil {
		return "", reconcile.Result{}, err
	}
	running, outbound := 0, 0
	src := sourceOf(mig)
	for i := range all.Items {
		o := &all.Items[i]
		if o.UID == mig.UID || !o.IsRunning() {
			continue
		}
		running++
		if sourceOf(o) == src {
			outbound++
		}
	}
	if running >= int(*r.cfg.ParallelMigrationsPerCluster) {
		r.o.Logger.Debug("migration waits: cluster limit", "migration", mig.Name, "running", running)
		return "", wait, nil
	}
	if outbound >= int(*r.cfg.ParallelOutboundMigrationsPerNode) {
		r.o.Logger.Debug("migration waits: node limit", "migration", mig.Name, "node", src, "outbound", outbound)
		return "", wait, nil
	}
	// Decided under the lock: the slot is taken once the phase is stored.
	before := mig.Status.DeepCopy()
	mig.SetPhase(virtkit.MigrationScheduling, r.o.now())
	if err := r.o.Store.UpdateStatus(ctx, mig); err != nil {
		mig.Status = *before
		return "", reconcile.Result{}, err
	}
	return "", reconcile.Result{}, nil
}

// evacuationBackoff is KubeVirt's wait before another evacuation attempt
// of a VMI: 20 s after the last failed evacuation migration, doubling per
// consecutive failure. It returns how long is left.
func (r *MigrationReconciler) evacuationBackoff(ctx context.Context, mig *virtkit.VirtualMachineInstanceMigration) (time.Duration, error) {
	migs, err := r.migrationsOf(ctx, mig.Namespace, mig.Spec.VMIName)
	if err != nil {
		return 0, err
	}
	var evac []virtkit.VirtualMachineInstanceMigration
	for _, m := range migs {
		if _, ok := m.Annotations[virtkit.EvacuationMigrationAnnotation]; ok && m.UID != mig.UID && m.IsFinal() {
			evac = append(evac, m)
		}
	}
	sort.Slice(evac, func(i, j int) bool {
		a, b := evac[i].CreationTimestamp, evac[j].CreationTimestamp
		return b.Before(&a) // newest first
	})
	failures := 0
	var lastFailed *metav1.Time
	for i := range evac {
		if evac[i].Status.Phase != virtkit.MigrationFailed {
			break
		}
		if failures == 0 {
			lastFailed = phaseSince(&evac[i], virtkit.MigrationFailed)
		}
		failures++
	}
	if failures == 0 || lastFailed == nil {
		return 0, nil
	}
	backoff := 20 * time.Second << min(failures-1, 10)
	left := lastFailed.Add(backoff).Sub(r.o.Now())
	return max(left, 0), nil
}

// schedule picks the target node: the VMI's own constraints plus
// spec.addedNodeSelector (the VMI's values win on a key collision) and a
// required anti-affinity to the source node.
func (r *MigrationReconciler) schedule(ctx context.Context, mig *virtkit.VirtualMachineInstanceMigration, vmi *virtkit.VirtualMachineInstance, now metav1.Time) (virtkit.VirtualMachineInstanceMigrationPhase, reconcile.Result, error) {
	nodes := &virtkit.NodeList{}
	if err := r.o.Store.List(ctx, nodes, store.ListOptions{}); err != nil {
		return "", reconcile.Result{}, err
	}
	// Read-only: the scheduler does not modify the placed VMIs.
	vmis, err := r.o.readList(ctx, &virtkit.VirtualMachineInstanceList{}, store.ListOptions{})
	if err != nil {
		return "", reconcile.Result{}, err
	}
	placed := make([]*virtkit.VirtualMachineInstance, 0, len(vmis))
	for _, obj := range vmis {
		if v := obj.(*virtkit.VirtualMachineInstance); scheduler.HoldsNode(v) {
			placed = append(placed, v)
		}
	}
	src := sourceOf(mig)
	if src == "" {
		src = vmi.Status.NodeName
	}
	var srcNode *virtkit.Node
	if i := slices.IndexFunc(nodes.Items, func(n virtkit.Node) bool { return n.Name == src }); i >= 0 {
		srcNode = nodes.Items[i].DeepCopy()
	}
	// The source is never a target, even for a custom scheduler or a node
	// without its hostname label.
	capable, reason := migrationCapable(nodes.Items, src)
	if reason != "" {
		return "", reconcile.Result{}, r.fail(ctx, mig, vmi, reason)
	}
	candidates := slices.DeleteFunc(capable, func(n virtkit.Node) bool { return n.Name == src })
	target, err := r.scheduleTarget(ctx, mig, vmi, srcNode, src, candidates, placed)
	if err == nil && target == src {
		err = fmt.Errorf("%w: scheduler chose the source node %s", scheduler.ErrUnschedulable, src)
	}
	if err != nil {
		if !errors.Is(err, scheduler.ErrUnschedulable) {
			return "", reconcile.Result{}, r.fail(ctx, mig, vmi, "target placement: "+err.Error())
		}
		virtkit.SetCondition(&mig.Status.Conditions, virtkit.Condition{
			Type: virtkit.VirtualMachineInstancePodScheduled, Status: virtkit.ConditionFalse,
			Reason: virtkit.PodReasonUnschedulable, Message: truncateMsg(err.Error(), 512),
		}, now)
		if since := phaseSince(mig, virtkit.MigrationScheduling); since != nil && now.Sub(since.Time) > r.m.UnschedulableTimeout {
			return "", reconcile.Result{}, r.fail(ctx, mig, vmi, virtkit.MigrationReasonUnschedulable+": "+err.Error())
		}
		return "", reconcile.Result{RequeueAfter: requeueDelay(mig)}, nil
	}
	virtkit.RemoveCondition(&mig.Status.Conditions, virtkit.VirtualMachineInstancePodScheduled)
	if mig.Status.MigrationState == nil {
		mig.Status.MigrationState = &virtkit.VirtualMachineInstanceMigrationState{MigrationUID: mig.UID}
	}
	mig.Status.MigrationState.SourceNode = src
	mig.Status.MigrationState.TargetNode = target
	return virtkit.MigrationScheduled, reconcile.Result{}, nil
}

// targetTemplate is the VMI as the scheduler should see the target: not
// placed yet, with the added node selector and the source excluded
// (KubeVirt's UpdateAntiAffinityFromVMINode).
func targetTemplate(vmi *virtkit.VirtualMachineInstance, mig *virtkit.VirtualMachineInstanceMigration, source string) *virtkit.VirtualMachineInstance {
	t := vmi.DeepCopy()
	t.Status = virtkit.VirtualMachineInstanceStatus{}
	if len(mig.Spec.AddedNodeSelector) > 0 {
		sel := map[string]string{}
		for k, v := range mig.Spec.AddedNodeSelector {
			sel[k] = v
		}
		for k, v := range vmi.Spec.NodeSelector {
			sel[k] = v
		}
		t.Spec.NodeSelector = sel
	}
	notSource := virtkit.NodeSelectorRequirement{
		Key: scheduler.LabelHostname, Operator: virtkit.NodeSelectorOpNotIn, Values: []string{source},
	}
	if t.Spec.Affinity == nil {
		t.Spec.Affinity = &virtkit.Affinity{}
	}
	if t.Spec.Affinity.NodeAffinity == nil {
		t.Spec.Affinity.NodeAffinity = &virtkit.NodeAffinity{}
	}
	na := t.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &virtkit.NodeSelector{}
	}
	req := na.RequiredDuringSchedulingIgnoredDuringExecution
	if len(req.NodeSelectorTerms) == 0 {
		req.NodeSelectorTerms = []virtkit.NodeSelectorTerm{{}}
	}
	for i := range req.NodeSelectorTerms {
		req.NodeSelectorTerms[i].MatchExpressions = append(req.NodeSelectorTerms[i].MatchExpressions, notSource)
	}
	return t
}

func phaseSince(mig *virtkit.VirtualMachineInstanceMigration, phase virtkit.VirtualMachineInstanceMigrationPhase) *metav1.Time {
	for i := len(mig.Status.PhaseTransitionTimestamps) - 1; i >= 0; i-- {
		if t := mig.Status.PhaseTransitionTimestamps[i]; t.Phase == phase {
			return &t.PhaseTransitionTimestamp
		}
	}
	return nil
}

// handOff writes the VMI's migrationState and target label: from here on
// the node agents carry the migration out.
func (r *MigrationReconciler) handOff(ctx context.Context, mig *virtkit.VirtualMachineInstanceMigration, vmi *virtkit.VirtualMachineInstance) error {
	planned := mig.Status.MigrationState
	if planned == nil || planned.TargetNode == "" {
		return fmt.Errorf("migration %s: Scheduled without a target node", store.KeyOf(mig))
	}
	if ownState(mig, vmi) == nil {
		policy, err := r.policyFor(ctx, vmi)
		if err != nil {
			return err
		}
		ms := &virtkit.VirtualMachineInstanceMigrationState{
			MigrationUID: mig.UID,
			SourceNode:   planned.SourceNode,
			TargetNode:   planned.TargetNode,
		}
		var p *virtkit.MigrationPolicy
		if policy != nil {
			p = policy
			name := policy.Name
			ms.MigrationPolicyName = &name
		}
		ms.MigrationConfiguration = ResolveMigrationConfiguration(r.m.Config, p)
		vmi.Status.MigrationState = ms
		if err := r.o.Store.UpdateStatus(ctx, vmi); err != nil {
			return err
		}
	}
	if vmi.Labels[virtkit.MigrationTargetNodeNameLabel] != planned.TargetNode {
		if vmi.Labels == nil {
			vmi.Labels = map[string]string{}
		}
		vmi.Labels[virtkit.MigrationTargetNodeNameLabel] = planned.TargetNode
		copyMigrationTraceParent(mig, vmi)
		status := vmi.Status.DeepCopy()
		if err := r.o.Store.Update(ctx, vmi); err != nil {
			return err
		}
		vmi.Status = *status
	}
	r.o.Logger.Info("migration handed off", "migration", store.KeyOf(mig).String(), "vmi", vmi.Name,
		"source", planned.SourceNode, "target", planned.TargetNode)
	return nil
}

// policyFor matches the MigrationPolicies against the VMI.
func (r *MigrationReconciler) policyFor(ctx context.Context, vmi *virtkit.VirtualMachineInstance) (*virtkit.MigrationPolicy, error) {
	policies := &virtkit.MigrationPolicyList{}
	if err := r.o.Store.List(ctx, policies, store.ListOptions{}); err != nil {
		return nil, err
	}
	if len(policies.Items) == 0 {
		return nil, nil
	}
	var nsLabels map[string]string
	if r.m.NamespaceLabels != nil {
		var err error
		if nsLabels, err = r.m.NamespaceLabels(ctx, vmi.Namespace); err != nil {
			return nil, fmt.Errorf("namespace %s labels: %w", vmi.Namespace, err)
		}
	}
	return MatchMigrationPolicy(policies.Items, vmi, nsLabels), nil
}

// inFlight handles a handed-off migration: abort requests, a target
// node that went away before the migration started, and a target that does
// not take the VMI over once the source is done.
func (r *MigrationReconciler) inFlight(ctx context.Context, mig *virtkit.VirtualMachineInstanceMigration, vmi *virtkit.VirtualMachineInstance, ms *virtkit.VirtualMachineInstanceMigrationState, now metav1.Time) error {
	if ms == nil {
		return nil
	}
	if mig.DeletionTimestamp != nil && !ms.AbortRequested && !ms.Completed && !ms.Failed {
		virtkit.SetCondition(&mig.Status.Conditions, virtkit.Condition{
			Type: virtkit.VirtualMachineInstanceMigrationAbortRequested, Status: virtkit.ConditionTrue,
		}, now)
		ms.AbortRequested = true
		if err := r.o.Store.UpdateStatus(ctx, vmi); err != nil {
			return err
		}
		r.o.Logger.Info("migration abort requested", "migration", store.KeyOf(mig).String(), "vmi", vmi.Name)
	}
	if ms.EndTimestamp != nil && !ms.Completed && !ms.Failed {
		// The source is done; the target has not taken the VMI over. Wait
		// no longer than the migration's progress timeout for it.
		limit := time.Duration(virtkit.DefaultProgressTimeout) * time.Second
		if c := ms.MigrationConfiguration; c != nil && c.ProgressTimeout != nil && *c.ProgressTimeout > 0 {
			limit = time.Duration(*c.ProgressTimeout) * time.Second
		}
		if now.Sub(ms.EndTimestamp.Time) > limit {
			reason := fmt.Sprintf("%s within %d seconds", virtkit.MigrationReasonNotTakenOver, int(limit.Seconds()))
			if err := r.endVMIState(ctx, vmi, mig, reason, now); err != nil {
				return err
			}
			return r.fail(ctx, mig, vmi, reason)
		}
	}
	if ms.StartTimestamp == nil && !ms.Completed && !ms.Failed {
		n := &virtkit.Node{}
		found, err := getOptional(ctx, r.o.Store, store.Key{Name: ms.TargetNode}, n)
		if err != nil {
			return err
		}
		if !found || virtkit.HasCondition(n.Status.Conditions, virtkit.NodeReady, virtkit.ConditionFalse, "") {
			if err := r.endVMIState(ctx, vmi, mig, virtkit.MigrationReasonTargetDown, now); err != nil {
				return err
			}
			return r.fail(ctx, mig, vmi, virtkit.MigrationReasonTargetDown)
		}
	}
	return nil
}

// endVMIState marks the VMI's migrationState failed when the controller
// ends a migration the agents have not ended.
func (r *MigrationReconciler) endVMIState(ctx context.Context, vmi *virtkit.VirtualMachineInstance, mig *virtkit.VirtualMachineInstanceMigration, reason string, now metav1.Time) error {
	ms := ownState(mig, vmi)
	if ms == nil || ms.Completed || ms.Failed {
		return nil
	}
	ms.Failed, ms.Completed = true, true
	ms.FailureReason = reason
	if ms.EndTimestamp == nil {
		ms.EndTimestamp = &now
	}
	return r.o.Store.UpdateStatus(ctx, vmi)
}

// fail moves the migration to Failed with a reason and stores it. A VMI
// migrationState of this migration that the agents have not ended is ended
// first, so no agent goes on with it.
func (r *MigrationReconciler) fail(ctx context.Context, mig *virtkit.VirtualMachineInstanceMigration, vmi *virtkit.VirtualMachineInstance, reason string) error {
	now := r.o.now()
	if vmi != nil {
		if err := r.endVMIState(ctx, vmi, mig, reason, now); err != nil {
			return err
		}
	}
	if ms := ownState(mig, vmi); ms != nil {
		mig.Status.MigrationState = ms.DeepCopy()
	}
	if mig.Status.MigrationState == nil {
		mig.Status.MigrationState = &virtkit.VirtualMachineInstanceMigrationState{MigrationUID: mig.UID}
	}
	ms := mig.Status.MigrationState
	ms.Failed, ms.Completed = true, true
	if ms.FailureReason == "" {
		ms.FailureReason = reason
	}
	if ms.EndTimestamp == nil {
		ms.EndTimestamp = &now
	}
	prev := mig.Status.Phase
	mig.SetPhase(virtkit.MigrationFailed, now)
	r.o.Logger.Info("migration failed", "migration", store.KeyOf(mig).String(), "vmi", mig.Spec.VMIName, "reason", reason)
	if err := r.o.Store.UpdateStatus(ctx, mig); err != nil {
		return err
	}
	r.recordMigrationPhase(ctx, mig, prev)
	return nil
}

// finalize copies the final state, cleans the VMI of a failed hand-off,
// removes the finalizer and prunes old migrations of the VMI.
func (r *MigrationReconciler) finalize(ctx context.Context, mig *virtkit.VirtualMachineInstanceMigration, vmi *virtkit.VirtualMachineInstance) error {
	if ms := ownState(mig, vmi); ms != nil && (ms.Completed || ms.Failed) && !reflect.DeepEqual(ms, mig.Status.MigrationState) {
		keepReason := ""
		if mig.Status.MigrationState != nil {
			keepReason = mig.Status.MigrationState.FailureReason
		}
		mig.Status.MigrationState = ms.DeepCopy()
		if mig.Status.MigrationState.FailureReason == "" {
			mig.Status.MigrationState.FailureReason = keepReason
		}
		if err := r.o.Store.UpdateStatus(ctx, mig); err != nil {
			return err
		}
	}
	if mig.Status.Phase == virtkit.MigrationFailed && vmi != nil {
		if err := r.releaseTarget(ctx, mig, vmi); err != nil {
			return err
		}
	}
	if removeFinalizers(mig, virtkit.VirtualMachineInstanceMigrationFinalizer) {
		if err := ignoreNotFound(r.o.Store.Update(ctx, mig)); err != nil {
			return err
		}
	}
	return r.prune(ctx, mig.Namespace, mig.Spec.VMIName)
}

// releaseTarget undoes the hand-off of a failed migration on the VMI: the
// target label and the target's activePods entry go (the target agent
// also cleans up; this is the backstop for a target that went away).
func (r *MigrationReconciler) releaseTarget(ctx context.Context, mig *virtkit.VirtualMachineInstanceMigration, vmi *virtkit.VirtualMachineInstance) error {
	ms := ownState(mig, vmi)
	if ms == nil || ms.TargetNode == "" || ms.TargetNode == vmi.Status.NodeName {
		return nil
	}
	if vmi.Labels[virtkit.MigrationTargetNodeNameLabel] == ms.TargetNode {
		delete(vmi.Labels, virtkit.MigrationTargetNodeNameLabel)
		status := vmi.Status.DeepCopy()
		if err := r.o.Store.Update(ctx, vmi); err != nil {
			return ignoreNotFound(err)
		}
		vmi.Status = *status
	}
	changed := false
	for uid, n := range vmi.Status.ActivePods {
		if n == ms.TargetNode {
			vmi.RemoveActivePod(uid)
			changed = true
		}
	}
	if changed {
		return ignoreNotFound(r.o.Store.UpdateStatus(ctx, vmi))
	}
	return nil
}

// prune deletes all but the newest KeepFinished finished migrations of a
// VMI.
func (r *MigrationReconciler) prune(ctx context.Context, namespace, vmiName string) error {
	if vmiName == "" {
		return nil
	}
	migs, err := r.migrationsOf(ctx, namespace, vmiName)
	if err != nil {
		return err
	}
	var finished []virtkit.VirtualMachineInstanceMigration
	for _, m := range migs {
		if m.IsFinal() && m.DeletionTimestamp == nil {
			finished = append(finished, m)
		}
	}
	if len(finished) <= r.m.KeepFinished {
		return nil
	}
	sort.Slice(finished, func(i, j int) bool {
		a, b := finished[i].CreationTimestamp, finished[j].CreationTimestamp
		if !a.Equal(&b) {
			return b.Before(&a) // newest first
		}
		return finished[i].Name > finished[j].Name
	})
	var errs []error
	for i := r.m.KeepFinished; i < len(finished); i++ {
		m := finished[i]
		if err := r.o.Store.Delete(ctx, &m, store.DeleteOptions{}); err != nil && !errors.Is(err, store.ErrNotFound) {
			errs = append(errs, err)
			continue
		}
		r.o.Logger.Debug("pruned finished migration", "migration", store.KeyOf(&m).String())
	}
	return errors.Join(errs...)
}

func truncateMsg(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
