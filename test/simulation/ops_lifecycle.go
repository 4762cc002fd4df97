package simulation

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/store"
)

// deletePolicies are the propagation policies delete-vm and delete-rs draw
// from (Op.N indexes them).
var deletePolicies = []metav1.DeletionPropagation{
	metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan,
}

// gracePeriods are the spec.terminationGracePeriodSeconds apply-vm draws
// from (Op.N / 4 indexes them).
var gracePeriods = []int64{0, 5, 30, 180}

// acpiDelays are the delays (seconds) acpi-delay draws from.
var acpiDelays = []int{1, 3, 20, 60, 300}

// ownerDelete is a delete of a VM or ReplicaSet the simulation issued:
// the owner's uid, the policy and the VMIs it owned then.
type ownerDelete struct {
	owner  string
	uid    types.UID
	policy metav1.DeletionPropagation
	vmis   map[types.UID]string // uid -> ns/name
	step   int
}

// stopRecord is a stop of a VM whose Running VMI's shutdown the checker
// follows: when it was asked, its grace period and how its guest answers
// ACPI.
type stopRecord struct {
	vm    string
	vmi   types.UID
	at    time.Time
	grace time.Duration
	// answer is how long the guest takes to power off; negative when it
	// ignores the request.
	answer time.Duration
	// clean stays true while no fault and no other operation on the guest
	// ran since the stop.
	clean bool
}

// lifecycleState is what the lifecycle operations leave for the
// invariants: deletes issued, stops to follow, ACPI behaviours set,
// background drains.
type lifecycleState struct {
	mu      sync.Mutex
	deletes []ownerDelete
	stops   []*stopRecord
	acpi    map[string]sim.ACPIBehaviour // node/domain -> behaviour
	drains  sync.WaitGroup
	cancels []context.CancelFunc
	errs    []string
}

func (s *lifecycleState) addDelete(d ownerDelete) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deletes = append(s.deletes, d)
}

// cancelDrains ends every background drain; one blocked on a delayed
// store write returns once virtual time moves on (waitDrains).
func (s *lifecycleState) cancelDrains() {
	s.mu.Lock()
	cs := s.cancels
	s.cancels = nil
	s.mu.Unlock()
	for _, c := range cs {
		c()
	}
}

// waitDrains waits for the cancelled drains, at most wall time limit.
func (s *lifecycleState) waitDrains(limit time.Duration) {
	done := make(chan struct{})
	go func() { s.drains.Wait(); close(done) }()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// lifecycleOps are the rows of the deletion-propagation, drain and ACPI
// operations.
func lifecycleOps() []opSpec {
	node := func(r *rand.Rand) Op { return Op{Target: pickNode(r)} }
	return []opSpec{
		{name: "cordon", weight: 1, gen: node,
			run: func(ctx context.Context, s system, op Op) error { return s.cordon(ctx, op.Target) }},
		{name: "uncordon", weight: 2, gen: node,
			run: func(ctx context.Context, s system, op Op) error { return s.uncordon(ctx, op.Target) }},
		{name: "drain", weight: 1,
			gen: func(r *rand.Rand) Op { return Op{Target: pickNode(r), N: []int{10, 60, 300}[r.IntN(3)]} },
			run: runDrain},
		{name: "acpi-ignore", fault: true, weight: 2, gen: func(r *rand.Rand) Op { return Op{Target: pickGuest(r)} },
			run: inProcess(onDomain(func(_ context.Context, h *Harness, node, domain string) error {
				h.setACPI(node, domain, sim.ACPIBehaviour{Ignore: true})
				return nil
			}))},
		{name: "acpi-delay", fault: true, weight: 2,
			gen: func(r *rand.Rand) Op { return Op{Target: pickGuest(r), N: acpiDelays[r.IntN(len(acpiDelays))]} },
			run: inProcess(func(ctx context.Context, h *Harness, op Op) error {
				return onDomain(func(_ context.Context, h *Harness, node, domain string) error {
					h.setACPI(node, domain, sim.ACPIBehaviour{Delay: time.Duration(op.N) * time.Second})
					return nil
				})(ctx, h, op)
			})},
	}
}

// setACPI sets how a host's guest answers ACPI and remembers it.
func (h *Harness) setACPI(node, domain string, b sim.ACPIBehaviour) {
	h.Host(node).SetACPIBehaviour(domain, b)
	h.life.mu.Lock()
	defer h.life.mu.Unlock()
	h.life.acpi[node+"/"+domain] = b
}

// runDrain drains a node in the background until it is empty or op.N
// virtual seconds have passed: a drain left incomplete (a VMI that cannot
// migrate) is an outcome, not an error.
func runDrain(ctx context.Context, s system, op Op) error {
	// The drain runs alongside the components: its writes take turns with
	// theirs (on the embedded cluster), so they land at the same point of
	// an instant on every run.
	dctx, cancel := context.WithCancel(asScheduledUser(ctx))
	stop := s.afterFunc(time.Duration(op.N)*time.Second, cancel)
	life := s.lifecycle()
	life.mu.Lock()
	life.cancels = append(life.cancels, cancel)
	life.mu.Unlock()
	life.drains.Go(func() {
		defer stop()
		err := s.drain(dctx, op.Target, controller.DrainOptions{})
		if err != nil && !errors.Is(err, controller.ErrDrainIncomplete) && !expected(err) && dctx.Err() == nil {
			// (An error once the drain's time is up is its end.)
			life.mu.Lock()
			life.errs = append(life.errs, "drain "+op.Target+": "+err.Error())
			life.mu.Unlock()
		}
	})
	return nil
}

// deleteOwner deletes a VM or ReplicaSet with the op's propagation policy
// and records what it owned.
func deleteOwner(ctx context.Context, s system, op Op, obj virtkit.Object) error {
	key := store.Key{Namespace: Namespace, Name: op.Target}
	if err := s.st().Get(ctx, key, obj); err != nil {
		return err
	}
	policy := deletePolicies[op.N%len(deletePolicies)]
	d := ownerDelete{owner: op.Target, uid: obj.GetUID(), policy: policy, vmis: map[types.UID]string{}, step: -1}
	var list virtkit.VirtualMachineInstanceList
	if err := s.st().List(ctx, &list, store.ListOptions{Namespace: Namespace}); err != nil {
		return err
	}
	owned := 0
	for _, v := range list.Items {
		if v.DeletionTimestamp != nil {
			continue // already going, whatever the policy
		}
		for _, ref := range v.OwnerReferences {
			if ref.UID == d.uid {
				d.vmis[v.UID] = v.Namespace + "/" + v.Name
				owned++
			}
		}
	}
	if ownerRemoving(obj, owned) {
		// The owner's controller may already be deleting its VMIs (a
		// stopped VM, a ReplicaSet scaled down) in a write not yet landed:
		// those deletes are the owner's, not the propagation's.
		clear(d.vmis)
	}
	if err := s.st().Delete(ctx, obj, store.DeleteOptions{PropagationPolicy: &policy}); err != nil {
		return err
	}
	s.lifecycle().addDelete(d)
	return nil
}

// stopRecordOf describes a stop of a VM's Running VMI so that the checker
// can follow its shutdown once the stop is accepted; nil when there is
// nothing to follow (no such VMI, or not one the VM controls).
func stopRecordOf(ctx context.Context, s system, vm string) *stopRecord {
	v := &virtkit.VirtualMachineInstance{}
	if err := s.st().Get(ctx, store.Key{Namespace: Namespace, Name: vm}, v); err != nil {
		return nil
	}
	owner := &virtkit.VirtualMachine{}
	if err := s.st().Get(ctx, store.Key{Namespace: Namespace, Name: vm}, owner); err != nil || owner.DeletionTimestamp != nil {
		return nil // a stop of a VM gone or going does not reach an orphaned VMI
	}
	if ref := metav1.GetControllerOf(v); ref == nil || ref.UID != owner.UID {
		return nil
	}
	if v.Status.Phase != virtkit.Running || v.DeletionTimestamp != nil || v.Status.MigrationState != nil && !v.Status.MigrationState.Completed ||
		virtkit.HasCondition(v.Status.Conditions, virtkit.VirtualMachineInstancePaused, "True", virtkit.PausedByUserReason) {
		return nil
	}
	grace := 30 * time.Second
	if g := v.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	life := s.lifecycle()
	life.mu.Lock()
	b, set := life.acpi[v.Status.NodeName+"/"+Namespace+"_"+vm]
	answer := b.Delay
	switch {
	case b.Ignore:
		answer = -1
	case !set || answer == 0:
		answer = 0 // the host's default: prompt
	}
	// A stop while the VMI's node agent is down, cut off or frozen (or
	// the store is slow) ends as KubeVirt ends it when virt-handler is
	// unresponsive: the control plane fails the VMI over once the node's
	// heartbeat is stale, with no graceful shutdown to follow.
	life.mu.Unlock()
	clean := s.undisturbed(v.Status.NodeName)
	return &stopRecord{vm: vm, vmi: v.UID, at: s.now(), grace: grace, answer: answer, clean: clean}
}

// addStop follows an accepted stop (nil: nothing to follow).
func (l *lifecycleState) addStop(r *stopRecord) {
	if r == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stops = append(l.stops, r)
}

// ownerRemoving reports whether an owner's controller wants fewer VMIs
// than the owned ones it has: a VM asked to stop, a ReplicaSet scaled below
// its count, or a foreground delete of the owner already under way.
func ownerRemoving(owner virtkit.Object, owned int) bool {
	if owner.GetDeletionTimestamp() != nil && slices.Contains(owner.GetFinalizers(), metav1.FinalizerDeleteDependents) {
		// A foreground delete is under way: the garbage collector may
		// have issued its deletes of the dependents already, which a
		// later orphaning delete cannot call back (as in Kubernetes).
		return true
	}
	switch o := owner.(type) {
	case *virtkit.VirtualMachine:
		rs, err := o.RunStrategy()
		return err != nil || rs == virtkit.RunStrategyHalted || len(o.Status.StateChangeRequests) > 0
	case *virtkit.VirtualMachineInstanceReplicaSet:
		return o.Spec.Replicas != nil && int(*o.Spec.Replicas) < owned
	}
	return false
}
