package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// EvictionReconciler evacuates nodes marked for drain: spec.unschedulable
// set and the taint kubevirt.io/drain:NoSchedule ([virtkit.DrainTaintKey]). Each
// VMI on such a node is handled by its spec.evictionStrategy, else the
// cluster's: the KubeVirt object's spec.configuration.evictionStrategy
// (None when it names none), read at each reconcile, so that a change of
// the object applies to the next eviction, as the API's pods/eviction
// reads it; ReconcilerOptions.DefaultEvictionStrategy when the store holds
// no KubeVirt object:
//
//   - LiveMigrate on a VMI that can live-migrate (LiveMigratable=True):
//     status.evacuationNodeName is set, condition
//     EvictionRequested=True, and a VirtualMachineInstanceMigration is
//     created (generateName kubevirt-evacuation-, annotation
//     kubevirt.io/evacuationMigration=<node>, priority system-critical, or
//     system-maintenance when the VMI carries kubevirt.io/eviction-source:
//     descheduler) unless one is already in flight for the VMI.
//   - LiveMigrate on a VMI that cannot: nothing but a FailedCreate event
//     ("VirtualMachineInstance is not migrateable"), as in KubeVirt; it
//     blocks a [Drain].
//   - LiveMigrateIfPossible: like LiveMigrate when LiveMigratable=True,
//     otherwise like None.
//   - External: evacuationNodeName and EvictionRequested are set and
//     nothing else happens; an external controller acts on them.
//   - None: nothing happens here and the VMI keeps running: the taint
//     alone does not evict, as in KubeVirt, where `kubectl drain` evicts
//     the launcher pod and so shuts the guest down. [Drain] is that
//     drain: it shuts such VMIs down, as does the eviction of the VMI's
//     launcher pod through the API server (pods/eviction).
//
// A VMI whose status.evacuationNodeName names the node it runs on
// because its launcher pod was evicted through the API (kubectl drain
// evicts pods and only cordons the node; the API marks the VMI and
// refuses the eviction with 429 until the VMI has gone) is evacuated
// likewise though the node carries no drain taint, as KubeVirt's
// evacuation controller does: a migration is created for it by its
// eviction strategy.
//
// evacuationNodeName and the EvictionRequested condition are cleared once
// the VMI has left the node they name, and, for the marks the drain taint
// made, when the node stops being drained.

type EvictionReconciler struct {
	o   ReconcilerOptions
	def virtkit.EvictionStrategy

	mu sync.Mutex
	// clean holds nodes known to have no VMI marked for evacuation from
	// them, so a healthy, undrained node costs no VMI listing.
	clean map[string]bool
	// marked counts, per node, the VMI events that showed a VMI marked
	// for evacuation from it; a reconcile that began before such an event
	// does not mark the node clean.
	marked map[string]uint64
	// draining holds the nodes the node watch last showed draining, so a
	// VMI event on a clean, undrained node wakes nobody.
	draining map[string]bool
}

var _ reconcile.Reconciler = (*EvictionReconciler)(nil)

// NewEvictionReconciler returns the eviction reconciler. Requests are Node
// names.
func NewEvictionReconciler(o ReconcilerOptions) (*EvictionReconciler, error) {
	o, err := o.withDefaults("eviction")
	if err != nil {
		return nil, err
	}
	def := o.DefaultEvictionStrategy
	if def == "" {
		def = virtkit.EvictionStrategyNone
	}
	return &EvictionReconciler{o: o, def: def, clean: map[string]bool{}, marked: map[string]uint64{}, draining: map[string]bool{}}, nil
}

// Watches returns what the reconciler must be fed: Nodes, and VMIs mapped
// to their node (and to the node they are being evacuated from).
func (r *EvictionReconciler) Watches() []reconcile.Watch {
	return []reconcile.Watch{
		{NewList: nodeList, Map: func(ctx context.Context, obj virtkit.Object) []reconcile.Request {
			if n, ok := obj.(*virtkit.Node); ok {
				r.setDraining(n.Name, IsDraining(n))
			}
			return reconcile.ObjectKey(ctx, obj)
		}},
		{NewList: vmiList, Map: func(_ context.Context, obj virtkit.Object) []reconcile.Request {
			vmi, ok := obj.(*virtkit.VirtualMachineInstance)
			if !ok {
				return nil
			}
			var out []reconcile.Request
			// A VMI marked for evacuation makes its node's work: the mark
			// may come from an eviction, on a node that is not draining.
			evac := vmi.Status.EvacuationNodeName
			if evac != "" {
				r.markSeen(evac)
				out = append(out, reconcile.Request{Name: evac})
			}
			// A clean node that is not draining has nothing to do for its
			// VMIs; the node's own event wakes it when it starts draining.
			if n := vmi.Status.NodeName; n != "" && n != evac && !r.quiet(n) {
				out = append(out, reconcile.Request{Name: n})
			}
			return out
		}},
	}
}

// IsDraining reports whether a node is marked for evacuation.
func IsDraining(n *virtkit.Node) bool {
	if !n.Spec.Unschedulable {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Key == virtkit.DrainTaintKey && t.Effect == virtkit.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}

// Reconcile implements Reconciler; req.Name is a Node name.
func (r *EvictionReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := &virtkit.Node{}
	found, err := getOptional(ctx, r.o.Store, store.Key{Name: req.Name}, node)
	if err != nil {
		return reconcile.Result{}, err
	}
	draining := found && IsDraining(node)
	clean, gen := r.cleanState(req.Name)
	if !draining && clean {
		return reconcile.Result{}, nil
	}
	// Read-only (the shared cache's objects when there is one); the VMIs
	// acted on are read again from the store.
	vmis, err := r.o.readList(ctx, &virtkit.VirtualMachineInstanceList{}, store.ListOptions{})
	if err != nil {
		return reconcile.Result{}, err
	}
	var errs []error
	cluster := &clusterStrategy{r: r}
	for _, obj := range vmis {
		vmi := obj.(*virtkit.VirtualMachineInstance)
		if vmi.IsFinal() || vmi.DeletionTimestamp != nil {
			continue
		}
		evacuate, cancel := r.wants(draining, req.Name, vmi)
		if !evacuate && !cancel {
			continue
		}
		// The cache found a candidate; act on the stored VMI, which may
		// have moved already (a migration that just succeeded), so no
		// second migration is started for a VMI that has left the node.
		fresh := &virtkit.VirtualMachineInstance{}
		found, err := getOptional(ctx, r.o.Store, store.KeyOf(vmi), fresh)
		switch {
		case err != nil:
		case !found || fresh.IsFinal() || fresh.DeletionTimestamp != nil:
		default:
			evacuate, cancel = r.wants(draining, req.Name, fresh)
			switch {
			case evacuate:
				err = r.evacuate(ctx, cluster, req.Name, fresh)
			case cancel:
				err = r.cancel(ctx, fresh)
			}
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	err = errors.Join(errs...)
	r.setClean(req.Name, err == nil && !draining, gen)
	return reconcile.Result{}, err
}

// taintMarkMessage is the message of the EvictionRequested condition of
// the VMIs the drain taint marked; the marks of evictions carry
// evictionMarkMessage. Only the former are withdrawn with the taint.
const (
	taintMarkMessage    = "VMI is marked for eviction"
	evictionMarkMessage = "VMI is marked for eviction: its launcher pod was evicted"
)

// wants says whether vmi is to be evacuated from node, or its evacuation
// mark naming node cleared.
func (r *EvictionReconciler) wants(draining bool, node string, vmi *virtkit.VirtualMachineInstance) (evacuate, cancel bool) {
	on := vmi.Status.NodeName == node
	marked := vmi.Status.EvacuationNodeName == node
	switch {
	case on && draining:
		return true, false
	case on && marked:
		// Marked by an eviction (the node is not draining): evacuate it,
		// unless the mark is the drain taint's and the taint is gone.
		c := virtkit.GetCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstanceEvictionRequested)
		if c != nil && c.Status == virtkit.ConditionTrue && c.Message == taintMarkMessage {
			return false, true
		}
		return true, false
	case marked:
		return false, true // the VMI has left the node
	}
	return false, false
}

// cleanState says whether the node is known clean, and the count of
// marks seen on it.
func (r *EvictionReconciler) cleanState(node string) (bool, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.clean[node], r.marked[node]
}

// markSeen records a VMI event showing a VMI marked for evacuation from
// node: the node is not clean, whatever a reconcile in flight concludes.
func (r *EvictionReconciler) markSeen(node string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.clean, node)
	r.marked[node]++
}

func (r *EvictionReconciler) setDraining(node string, draining bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if draining {
		r.draining[node] = true
	} else {
		delete(r.draining, node)
	}
}

// quiet: the node was last seen not draining and has nothing to clean.
func (r *EvictionReconciler) quiet(node string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.draining[node] && r.clean[node]
}

// setClean records what a reconcile that began when the node's mark
// count was gen concluded; a mark seen since keeps the node unclean.
func (r *EvictionReconciler) setClean(node string, clean bool, gen uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if clean && r.marked[node] == gen {
		r.clean[node] = true
	} else {
		delete(r.clean, node)
	}
}

// clusterStrategy is the eviction strategy of the VMIs that name none:
// the KubeVirt object's ([virtkit.KubeVirtConfiguration.ClusterEvictionStrategy],
// None when it names none), read when a reconcile first needs it, so a
// change of the object applies to the next eviction; the option's when
// there is no KubeVirt object.
type clusterStrategy struct {
	r    *EvictionReconciler
	read bool
	es   virtkit.EvictionStrategy
}

func (c *clusterStrategy) get(ctx context.Context) (virtkit.EvictionStrategy, error) {
	if c.read {
		return c.es, nil
	}
	kv, found, err := clusterKubeVirt(ctx, c.r.o.Store)
	if err != nil {
		return "", fmt.Errorf("reading the cluster's eviction strategy: %w", err)
	}
	c.es = c.r.def
	if found {
		c.es = kv.Spec.Configuration.ClusterEvictionStrategy()
	}
	c.read = true
	return c.es, nil
}

// strategy is the VMI's eviction strategy, else the cluster's.
func (r *EvictionReconciler) strategy(ctx context.Context, cluster *clusterStrategy, vmi *virtkit.VirtualMachineInstance) (virtkit.EvictionStrategy, error) {
	if vmi.Spec.EvictionStrategy != nil && *vmi.Spec.EvictionStrategy != "" {
		return *vmi.Spec.EvictionStrategy, nil
	}
	return cluster.get(ctx)
}

func (r *EvictionReconciler) evacuate(ctx context.Context, cluster *clusterStrategy, node string, vmi *virtkit.VirtualMachineInstance) error {
	strategy, err := r.strategy(ctx, cluster, vmi)
	if err != nil {
		return err
	}
	msg := taintMarkMessage
	if vmi.Status.EvacuationNodeName == node {
		if c := virtkit.GetCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstanceEvictionRequested); c == nil || c.Message != taintMarkMessage {
			msg = evictionMarkMessage // an eviction marked it first
		}
	}
	migrate := false
	switch strategy {
	case virtkit.EvictionStrategyLiveMigrate:
		if !vmi.IsMigratable() {
			// KubeVirt's evacuation controller neither marks nor migrates
			// such a VMI: the migration would fail, again and again. It
			// blocks the drain (see Drain) and says so.
			if vmi.IsRunning() {
				r.o.event(ctx, vmi, virtkit.EventTypeNormal, virtkit.EventReasonFailedCreate, "Evacuate", "VirtualMachineInstance is not migrateable")
			}
			return nil
		}
		migrate = true
	case virtkit.EvictionStrategyLiveMigrateIfPossible:
		if !vmi.IsMigratable() {
			return nil
		}
		migrate = true
	case virtkit.EvictionStrategyExternal:
	default:
		return nil
	}
	now := r.o.now()
	changed := vmi.Status.EvacuationNodeName != node
	vmi.Status.EvacuationNodeName = node
	if virtkit.SetCondition(&vmi.Status.Conditions, virtkit.Condition{
		Type: virtkit.VirtualMachineInstanceEvictionRequested, Status: virtkit.ConditionTrue,
		Reason: virtkit.EvictionRequestedReason, Message: msg,
	}, now) {
		changed = true
	}
	if changed {
		if err := r.o.Store.UpdateStatus(ctx, vmi); err != nil {
			return err
		}
	}
	if !migrate || !vmi.IsRunning() {
		return nil // a VMI that is not running yet is migrated once it runs
	}
	return r.ensureMigration(ctx, node, vmi)
}

func (r *EvictionReconciler) ensureMigration(ctx context.Context, node string, vmi *virtkit.VirtualMachineInstance) error {
	migs := &virtkit.VirtualMachineInstanceMigrationList{}
	if err := r.o.Store.List(ctx, migs, store.ListOptions{
		Namespace:     vmi.Namespace,
		LabelSelector: labels.SelectorFromSet(labels.Set{virtkit.MigrationSelectorLabel: vmi.Name}),
	}); err != nil {
		return err
	}
	for i := range migs.Items {
		if !migs.Items[i].IsFinal() {
			return nil // one is in flight (ours or the user's)
		}
	}
	prio := virtkit.PrioritySystemCritical
	if vmi.Annotations[virtkit.EvictionSourceAnnotation] == "descheduler" {
		prio = virtkit.PrioritySystemMaintenance
	}
	mig := &virtkit.VirtualMachineInstanceMigration{
		TypeMeta: metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstanceMigration},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    vmi.Namespace,
			GenerateName: "kubevirt-evacuation-",
			Labels:       map[string]string{virtkit.MigrationSelectorLabel: vmi.Name},
			Annotations:  map[string]string{virtkit.EvacuationMigrationAnnotation: node},
		},
		Spec: virtkit.VirtualMachineInstanceMigrationSpec{VMIName: vmi.Name, Priority: &prio},
	}
	if err := r.o.Store.Create(ctx, mig); err != nil {
		r.o.event(ctx, vmi, virtkit.EventTypeWarning, virtkit.EventReasonFailedCreate, "Evacuate", "Error creating a migration: %v", err)
		return err
	}
	r.o.event(ctx, vmi, virtkit.EventTypeNormal, virtkit.EventReasonSuccessfulCreate, "Evacuate", "Created migration %s to evacuate node %s", mig.Name, node)
	r.o.Logger.Info("evacuation migration created", "vmi", vmi.Namespace+"/"+vmi.Name, "node", node, "migration", mig.Name)
	return nil
}

func (r *EvictionReconciler) cancel(ctx context.Context, vmi *virtkit.VirtualMachineInstance) error {
	vmi.Status.EvacuationNodeName = ""
	virtkit.RemoveCondition(&vmi.Status.Conditions, virtkit.VirtualMachineInstanceEvictionRequested)
	return r.o.Store.UpdateStatus(ctx, vmi)
}
