package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilclock "k8s.io/utils/clock"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/events"
	"github.com/virtkit/virtkit/store"
)

// ErrDrainIncomplete is returned by [Drain] when its context ends while
// VMIs are still on the node; the error names them and why they stay.
var ErrDrainIncomplete = errors.New("node not drained")

// DefaultDrainInterval is how often [Drain] re-evicts what is left on the
// node and checks whether it is empty.
const DefaultDrainInterval = time.Second

// DrainState says why a VMI is still on a node being drained.
type DrainState string

// Drain states.
const (
	// DrainMigrating: evictionStrategy LiveMigrate (or
	// LiveMigrateIfPossible on a migratable VMI); the eviction reconciler
	// migrates it away.
	DrainMigrating DrainState = "Migrating"
	// DrainShuttingDown: the VMI was deleted and its guest is stopping.
	DrainShuttingDown DrainState = "ShuttingDown"
	// DrainWaitingExternal: evictionStrategy External; the VMI is marked
	// (status.evacuationNodeName) for an external controller to act on.
	DrainWaitingExternal DrainState = "WaitingExternal"
	// DrainBlocked: evictionStrategy LiveMigrate on a VMI that cannot
	// live-migrate; the eviction is refused and the drain cannot finish.
	DrainBlocked DrainState = "Blocked"
)

// DrainVMI is one VMI still on a node being drained.
type DrainVMI struct {
	Namespace, Name string
	Strategy        virtkit.EvictionStrategy
	State           DrainState
	// Message says why, for people.
	Message string
}

// DrainProgress is what a drain left on the node after one pass.
type DrainProgress struct {
	Node string
	// VMIs still on the node, in namespace/name order; empty when the
	// node is drained.
	VMIs []DrainVMI
}

// DrainOptions configure [Drain]. The zero value drains on the real clock.
type DrainOptions struct {
	// DefaultEvictionStrategy applies to VMIs without
	// spec.evictionStrategy (KubeVirt's cluster-wide evictionStrategy);
	// empty means None.
	DefaultEvictionStrategy virtkit.EvictionStrategy
	// Events records the evictions (Evicted, FailedEviction); nil records
	// none.
	Events events.EventRecorder
	// Clock paces the passes and stamps conditions; nil is the real clock.
	Clock utilclock.WithTicker
	// Interval between passes; 0 means DefaultDrainInterval.
	Interval time.Duration
	// Progress, when set, is called after a pass whose outcome differs
	// from the previous one's, and once with no VMIs when the node is
	// drained.
	Progress func(DrainProgress)
}

// Cordon marks a node unschedulable (spec.unschedulable): nothing new is
// placed on it, and what runs there keeps running.
func Cordon(ctx context.Context, st store.Store, node string) error {
	return updateNode(ctx, st, node, func(n *virtkit.Node) bool {
		changed := !n.Spec.Unschedulable
		n.Spec.Unschedulable = true
		return changed
	})
}

// Uncordon makes a node schedulable again and ends its drain: the drain
// taint goes, the eviction reconciler withdraws the evacuation of its VMIs,
// and the refused evictions (EvictionRequested=False) recorded on them are
// cleared.
func Uncordon(ctx context.Context, st store.Store, node string) error {
	err := updateNode(ctx, st, node, func(n *virtkit.Node) bool {
		changed := n.Spec.Unschedulable
		n.Spec.Unschedulable = false
		taints := slices.DeleteFunc(slices.Clone(n.Spec.Taints), isDrainTaint)
		if len(taints) != len(n.Spec.Taints) {
			changed = true
			if len(taints) == 0 {
				taints = nil
			}
			n.Spec.Taints = taints
		}
		return changed
	})
	if err != nil {
		return err
	}
	vmis, err := vmisOn(ctx, st, node)
	if err != nil {
		return err
	}
	var errs []error
	for i := range vmis {
		c := virtkit.GetCondition(vmis[i].Status.Conditions, virtkit.VirtualMachineInstanceEvictionRequested)
		if c == nil || c.Status != virtkit.ConditionFalse {
			continue
		}
		errs = append(errs, updateVMIStatus(ctx, st, &vmis[i], func(v *virtkit.VirtualMachineInstance) bool {
			c := virtkit.GetCondition(v.Status.Conditions, virtkit.VirtualMachineInstanceEvictionRequested)
			if c == nil || c.Status != virtkit.ConditionFalse {
				return false
			}
			virtkit.RemoveCondition(&v.Status.Conditions, virtkit.VirtualMachineInstanceEvictionRequested)
			return true
		}))
	}
	return errors.Join(errs...)
}

// Drain evacuates a node as `kubectl drain` does a KubeVirt node: it
// cordons it, adds the drain taint ([virtkit.DrainTaintKey], NoSchedule) and
// evicts every VMI on it by its evictionStrategy until none is left:
//
//   - LiveMigrate, and LiveMigrateIfPossible on a migratable VMI: the
//     eviction reconciler (which acts on the taint) migrates the VMI away.
//   - LiveMigrate on a VMI that cannot live-migrate: the eviction is
//     refused and blocks the drain; the VMI gets EvictionRequested=False
//     (reason EvictionBlocked) and a FailedEviction event.
//   - External: the VMI is marked for an external controller
//     (status.evacuationNodeName, EvictionRequested=True) and the drain
//     waits for it to go.
//   - None, and LiveMigrateIfPossible on a VMI that cannot migrate: the
//     VMI is shut down, deleted as the eviction of its pod would; it gets
//     EvictionRequested=True and an Evicted event first. A VM with a run
//     strategy that restarts it starts a new VMI elsewhere.
//
// Drain returns nil once no VMI that is not final runs on the node, or,
// when ctx ends first, an error wrapping [ErrDrainIncomplete] and ctx's
// error that names the VMIs left and why. The node stays cordoned either
// way; [Uncordon] ends the drain.
func Drain(ctx context.Context, st store.Store, node string, o DrainOptions) error {
	if o.Clock == nil {
		o.Clock = utilclock.RealClock{}
	}
	if o.Interval <= 0 {
		o.Interval = DefaultDrainInterval
	}
	if o.DefaultEvictionStrategy == "" {
		o.DefaultEvictionStrategy = virtkit.EvictionStrategyNone
	}
	err := updateNode(ctx, st, node, func(n *virtkit.Node) bool {
		changed := !n.Spec.Unschedulable
		n.Spec.Unschedulable = true
		if !slices.ContainsFunc(n.Spec.Taints, isDrainTaint) {
			n.Spec.Taints = append(n.Spec.Taints, virtkit.Taint{Key: virtkit.DrainTaintKey, Effect: virtkit.TaintEffectNoSchedule})
			changed = true
		}
		return changed
	})
	if err != nil {
		return err
	}
	var last []DrainVMI
	first := true
	for {
		left, err := drainPass(ctx, st, node, o)
		if err != nil && ctx.Err() == nil {
			return err
		}
		if o.Progress != nil && (first || !slices.Equal(left, last)) {
			o.Progress(DrainProgress{Node: node, VMIs: left})
		}
		first, last = false, left
		if err == nil && len(left) == 0 {
			return nil
		}
		t := o.Clock.NewTimer(o.Interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return drainIncomplete(ctx, node, last)
		case <-t.C():
		}
	}
}

func drainIncomplete(ctx context.Context, node string, left []DrainVMI) error {
	parts := make([]string, 0, len(left))
	for _, v := range left {
		parts = append(parts, fmt.Sprintf("%s/%s %s: %s", v.Namespace, v.Name, v.State, v.Message))
	}
	return fmt.Errorf("%w: node %s: %d VMI(s) left (%s): %w", ErrDrainIncomplete, node, len(left), strings.Join(parts, "; "), ctx.Err())
}

// drainPass evicts what is on the node once and returns what is left.
func drainPass(ctx context.Context, st store.Store, node string, o DrainOptions) ([]DrainVMI, error) {
	vmis, err := vmisOn(ctx, st, node)
	if err != nil {
		return nil, err
	}
	var (
		left []DrainVMI
		errs []error
	)
	for i := range vmis {
		d, err := evict(ctx, st, node, &vmis[i], o)
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted since the list: gone from the node
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("evict %s/%s: %w", vmis[i].Namespace, vmis[i].Name, err))
		}
		left = append(left, d)
	}
	return left, errors.Join(errs...)
}

// evict applies the VMI's eviction strategy once, as KubeVirt's pod
// eviction admitter does for each eviction request of a drain.
func evict(ctx context.Context, st store.Store, node string, vmi *virtkit.VirtualMachineInstance, o DrainOptions) (DrainVMI, error) {
	strategy := o.DefaultEvictionStrategy
	if s := vmi.Spec.EvictionStrategy; s != nil && *s != "" {
		strategy = *s
	}
	d := DrainVMI{Namespace: vmi.Namespace, Name: vmi.Name, Strategy: strategy}
	if vmi.DeletionTimestamp != nil {
		d.State, d.Message = DrainShuttingDown, "the VMI is being deleted"
		return d, nil
	}
	switch {
	case strategy == virtkit.EvictionStrategyExternal:
		d.State, d.Message = DrainWaitingExternal, "evictionStrategy External: waiting for an external controller to move the VMI"
		return d, nil
	case strategy == virtkit.EvictionStrategyLiveMigrate && !vmi.IsMigratable():
		d.State = DrainBlocked
		d.Message = fmt.Sprintf("VMI %s is configured with an eviction strategy but is not live-migratable", vmi.Name)
		if c := virtkit.GetCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstanceIsMigratable); c != nil && c.Message != "" {
			d.Message += ": " + c.Message
		}
		return d, refuse(ctx, st, node, vmi, d.Message, o)
	case strategy == virtkit.EvictionStrategyLiveMigrate,
		strategy == virtkit.EvictionStrategyLiveMigrateIfPossible && vmi.IsMigratable():
		d.State, d.Message = DrainMigrating, "live-migrating off the node"
		return d, nil
	}
	d.State = DrainShuttingDown
	d.Message = fmt.Sprintf("evictionStrategy %s: shut down by the drain of node %s", strategy, node)
	return d, shutDown(ctx, st, vmi, d.Message, o)
}

// refuse records a refused eviction on the VMI, once per refusal.
func refuse(ctx context.Context, st store.Store, node string, vmi *virtkit.VirtualMachineInstance, msg string, o DrainOptions) error {
	cond := virtkit.Condition{Type: virtkit.VirtualMachineInstanceEvictionRequested, Status: virtkit.ConditionFalse,
		Reason: virtkit.EvictionBlockedReason, Message: fmt.Sprintf("drain of node %s refused: %s", node, msg)}
	changed := false
	err := updateVMIStatus(ctx, st, vmi, func(v *virtkit.VirtualMachineInstance) bool {
		changed = virtkit.SetCondition(&v.Status.Conditions, cond, nowOf(o.Clock))
		return changed
	})
	if err != nil || !changed {
		return err
	}
	events.RecordEvent(ctx, o.Events, vmi, virtkit.EventTypeWarning, virtkit.EventReasonFailedEviction, "Drain", "%s", cond.Message)
	return nil
}

// shutDown marks the VMI evicted and deletes it.
func shutDown(ctx context.Context, st store.Store, vmi *virtkit.VirtualMachineInstance, msg string, o DrainOptions) error {
	err := updateVMIStatus(ctx, st, vmi, func(v *virtkit.VirtualMachineInstance) bool {
		return virtkit.SetCondition(&v.Status.Conditions, virtkit.Condition{Type: virtkit.VirtualMachineInstanceEvictionRequested,
			Status: virtkit.ConditionTrue, Reason: virtkit.EvictionRequestedReason, Message: msg}, nowOf(o.Clock))
	})
	if err != nil {
		return err
	}
	if err := st.Delete(ctx, vmi, store.DeleteOptions{}); err != nil && !errors.Is(err, store.ErrNotFound) {
		events.RecordEvent(ctx, o.Events, vmi, virtkit.EventTypeWarning, virtkit.EventReasonFailedEviction, "Drain", "Error deleting the VMI: %v", err)
		return err
	}
	events.RecordEvent(ctx, o.Events, vmi, virtkit.EventTypeNormal, virtkit.EventReasonEvicted, "Drain", "%s", msg)
	return nil
}

// vmisOn lists the VMIs that are not final and run (or are placed) on node.
func vmisOn(ctx context.Context, st store.Store, node string) ([]virtkit.VirtualMachineInstance, error) {
	l := &virtkit.VirtualMachineInstanceList{}
	if err := st.List(ctx, l, store.ListOptions{}); err != nil {
		return nil, err
	}
	out := slices.DeleteFunc(l.Items, func(v virtkit.VirtualMachineInstance) bool {
		return v.Status.NodeName != node || v.IsFinal()
	})
	slices.SortFunc(out, func(a, b virtkit.VirtualMachineInstance) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out, nil
}

// updateNode applies change to the stored node and writes it when change
// reports a change, re-reading on conflicts.
func updateNode(ctx context.Context, st store.Store, name string, change func(*virtkit.Node) bool) error {
	return retryOnConflict(ctx, func() error {
		n := &virtkit.Node{}
		if err := st.Get(ctx, store.Key{Name: name}, n); err != nil {
			return fmt.Errorf("node %s: %w", name, err)
		}
		if !change(n) {
			return nil
		}
		return st.Update(ctx, n)
	})
}

// updateVMIStatus applies change to vmi (re-read after a conflict) and
// writes its status when change reports a change.
func updateVMIStatus(ctx context.Context, st store.Store, vmi *virtkit.VirtualMachineInstance, change func(*virtkit.VirtualMachineInstance) bool) error {
	first := true
	return retryOnConflict(ctx, func() error {
		if !first {
			if err := st.Get(ctx, store.KeyOf(vmi), vmi); err != nil {
				return err
			}
		}
		first = false
		if !change(vmi) {
			return nil
		}
		return st.UpdateStatus(ctx, vmi)
	})
}

func isDrainTaint(t virtkit.Taint) bool {
	return t.Key == virtkit.DrainTaintKey && t.Effect == virtkit.TaintEffectNoSchedule
}

func nowOf(c utilclock.PassiveClock) metav1.Time { return metav1.NewTime(c.Now()) }
