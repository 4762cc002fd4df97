package simulation

import (
	"context"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

// Invariant names of the lifecycle operations.
const (
	InvOwners       = "owners-finalizers"
	InvOrphan       = "orphan"
	InvPropagation  = "propagation"
	InvCordon       = "cordon"
	InvACPI         = "acpi-stop"
	stopPollSlack   = 15 * time.Second
	acpiAnswerSlack = 5 * time.Second
	// cordonSlack is how long after a cordon a placement decided before
	// it may still land: the scheduler (like kube-scheduler) decides from
	// its cache and then writes, and the simulated store may delay a
	// write by up to 3 s. Kubernetes' cordon has the same window, which
	// is why a drain evicts after it cordons.
	cordonSlack = 5 * time.Second
)

// lifeTrack is what the checker follows from the history for the
// lifecycle invariants.
type lifeTrack struct {
	cordoned  map[string]time.Time      // node -> when it was cordoned
	placed    map[types.UID]string      // VMI uid -> node it was placed on
	targets   map[types.UID]string      // VMI uid -> migration target node
	final     map[types.UID]vmiEnd      // VMI uid -> its first final phase
	shutdowns map[types.UID][]time.Time // VMI uid -> ShuttingDown events
	deletedAt map[types.UID]time.Time   // VMI uid -> deletionTimestamp first seen
	// events: regarding uid -> reason -> the messages recorded.
	events map[types.UID]map[string][]string
	// createdBy: VMI uid -> ns/name and the VM that created it.
	createdBy map[types.UID][2]string
	vmUID     map[types.UID]types.UID
	// migrated: VMI uid -> a migration that succeeded.
	migrated map[types.UID]migratedVMI
}

type vmiEnd struct {
	phase virtkit.VirtualMachineInstancePhase
	at    time.Time
}

func newLifeTrack() *lifeTrack {
	return &lifeTrack{cordoned: map[string]time.Time{}, placed: map[types.UID]string{}, targets: map[types.UID]string{},
		final: map[types.UID]vmiEnd{}, shutdowns: map[types.UID][]time.Time{}, deletedAt: map[types.UID]time.Time{},
		events: map[types.UID]map[string][]string{}, createdBy: map[types.UID][2]string{}, vmUID: map[types.UID]types.UID{},
		migrated: map[types.UID]migratedVMI{}}
}

// afterOp marks the followed stops whose outcome the op may change: a
// fault anywhere, or another operation on the stopped guest.
func (c *checker) afterOp(step int, op Op, fault bool) {
	c.sys.lifecycle().mu.Lock()
	defer c.sys.lifecycle().mu.Unlock()
	for i := range c.sys.lifecycle().deletes {
		if c.sys.lifecycle().deletes[i].step < 0 {
			c.sys.lifecycle().deletes[i].step = step
		}
	}
	for _, s := range c.sys.lifecycle().stops {
		if fault || (op.Target == s.vm && op.Name != "stop") || op.Name == "drain" || op.Name == "store-latency" {
			s.clean = false
		}
	}
}

// lifeChange follows one recorded change for the lifecycle invariants.
func (c *checker) lifeChange(step int, ch Change, out *[]Violation) {
	t := c.life
	switch o := ch.Object.(type) {
	case *virtkit.Node:
		switch {
		case ch.Type != store.Deleted && o.Spec.Unschedulable:
			if _, ok := t.cordoned[o.Name]; !ok {
				t.cordoned[o.Name] = ch.At
			}
		default:
			delete(t.cordoned, o.Name)
		}
	case *virtkit.VirtualMachineInstance:
		if ch.Type == store.Deleted {
			return
		}
		if ref := metav1.GetControllerOf(o); ch.Type == store.Added && ref != nil && ref.Kind == virtkit.KindVirtualMachine {
			t.createdBy[o.UID] = [2]string{o.Namespace + "/" + o.Name, ref.Name}
			t.vmUID[o.UID] = ref.UID
		}
		if o.DeletionTimestamp != nil {
			if _, ok := t.deletedAt[o.UID]; !ok {
				t.deletedAt[o.UID] = ch.At
			}
		}
		if n := o.Status.NodeName; n != "" && t.placed[o.UID] == "" {
			t.placed[o.UID] = n
			if at, ok := t.cordoned[n]; ok && ch.At.After(at.Add(cordonSlack)) {
				c.report(out, step, InvCordon, "VMI %s/%s placed on %s at %s, cordoned since %s", o.Namespace, o.Name, n, ch.At.Format(time.TimeOnly), at.Format(time.TimeOnly))
			}
		}
		if ms := o.Status.MigrationState; ms != nil && ms.TargetNode != "" && t.targets[o.UID] != ms.TargetNode {
			t.targets[o.UID] = ms.TargetNode
			if at, ok := t.cordoned[ms.TargetNode]; ok && ch.At.After(at.Add(cordonSlack)) {
				c.report(out, step, InvCordon, "VMI %s/%s migrates to %s at %s, cordoned since %s", o.Namespace, o.Name, ms.TargetNode, ch.At.Format(time.TimeOnly), at.Format(time.TimeOnly))
			}
		}
		if ms := o.Status.MigrationState; ms != nil && ms.Completed && !ms.Failed {
			t.migrated[o.UID] = migratedVMI{what: o.Namespace + "/" + o.Name + " (migration " + string(ms.MigrationUID) + ")",
				source: ms.SourceNode, target: ms.TargetNode}
		}
		if o.IsFinal() {
			if _, ok := t.final[o.UID]; !ok {
				t.final[o.UID] = vmiEnd{phase: o.Status.Phase, at: ch.At}
			}
		}
	case *virtkit.Event:
		if ch.Type != store.Deleted {
			m := t.events[o.Regarding.UID]
			if m == nil {
				m = map[string][]string{}
				t.events[o.Regarding.UID] = m
			}
			m[o.Reason] = append(m[o.Reason], o.Note)
		}
		if o.Reason == virtkit.EventReasonShuttingDown && o.Regarding.Kind == virtkit.KindVirtualMachineInstance && ch.Type == store.Added {
			t.shutdowns[o.Regarding.UID] = append(t.shutdowns[o.Regarding.UID], ch.At)
		}
	}
}

// lifeStep checks the deletes of the last step: an orphaning delete
// leaves the owner's VMIs alone.
func (c *checker) lifeStep(step int, out *[]Violation) {
	c.sys.lifecycle().mu.Lock()
	defer c.sys.lifecycle().mu.Unlock()
	// An owner already deleted with another policy before the orphaning
	// delete may have had its VMIs deleted by then (the VM controller
	// stops the VMI of a VM being deleted at once): Kubernetes' second
	// delete adds the "orphan" finalizer but cannot undo that.
	deletedBefore := map[types.UID]bool{}
	for _, d := range c.sys.lifecycle().deletes {
		if d.policy != metav1.DeletePropagationOrphan && d.step < step {
			deletedBefore[d.uid] = true
		}
	}
	for _, d := range c.sys.lifecycle().deletes {
		if d.policy != metav1.DeletePropagationOrphan || d.step != step || deletedBefore[d.uid] {
			continue
		}
		for uid, key := range d.vmis {
			if _, deleted := c.life.deletedAt[uid]; deleted {
				c.report(out, step, InvOrphan, "VMI %s (uid %s) deleted although its owner %s was deleted with policy Orphan", key, uid, d.owner)
			}
		}
	}
}

// lifeFinal checks the lifecycle invariants at quiescence.
func (c *checker) lifeFinal(ctx context.Context, step int, vmis []virtkit.VirtualMachineInstance, out *[]Violation) error {
	if err := cluster.CheckOwnersAndFinalizersIn(ctx, c.sys.observation().Store); err != nil {
		c.report(out, step, InvOwners, "%v", err)
	}
	byUID := map[types.UID]*virtkit.VirtualMachineInstance{}
	for i := range vmis {
		byUID[vmis[i].UID] = &vmis[i]
	}
	c.sys.lifecycle().mu.Lock()
	defer c.sys.lifecycle().mu.Unlock()
	// An owner deleted twice, once with Orphan and once with another
	// policy, may end either way: the later delete replaces the "orphan"
	// finalizer as Kubernetes' does, but a collector already orphaning
	// the dependents finishes, in virtkit as in Kubernetes.
	orphaned := map[types.UID]bool{}
	for _, d := range c.sys.lifecycle().deletes {
		if d.policy == metav1.DeletePropagationOrphan {
			orphaned[d.uid] = true
		}
	}
	for _, d := range c.sys.lifecycle().deletes {
		for uid, key := range d.vmis {
			v := byUID[uid]
			switch {
			case v == nil:
			case orphaned[d.uid] && !refersTo(v, d.uid):
			case d.policy == metav1.DeletePropagationOrphan:
				if refersTo(v, d.uid) {
					c.report(out, step, InvOrphan, "VMI %s still refers to its deleted owner %s (uid %s)", key, d.owner, d.uid)
				}
			default:
				c.report(out, step, InvPropagation, "VMI %s of %s (deleted with policy %s) still exists at quiescence (%s)", key, d.owner, d.policy, vmiState(v))
			}
		}
	}
	c.eventsFinal(step, out)
	for _, s := range c.sys.lifecycle().stops {
		if !s.clean || s.grace == 0 {
			continue
		}
		if _, ended := c.life.final[s.vmi]; ended && len(c.life.events[s.vmi][virtkit.EventReasonStopped]) == 0 {
			c.report(out, step, InvLifecycleEvents, "VMI of %s (uid %s) stopped at %s ended without a Stopped event", s.vm, s.vmi, s.at.Format(time.TimeOnly))
		}
		end, ok := c.life.final[s.vmi]
		ignores := s.answer < 0 || s.answer > s.grace+acpiAnswerSlack
		answers := s.answer >= 0 && s.answer+acpiAnswerSlack < s.grace
		switch {
		case !ok:
			c.report(out, step, InvACPI, "VMI of %s (uid %s) stopped at %s never ended", s.vm, s.vmi, s.at.Format(time.TimeOnly))
		case ignores && (end.phase != virtkit.Failed || end.at.After(s.at.Add(s.grace+stopPollSlack))):
			c.report(out, step, InvACPI, "VMI of %s whose guest ignores ACPI, stopped at %s with grace %s, ended %s at %s", s.vm, s.at.Format(time.TimeOnly), s.grace, end.phase, end.at.Format(time.TimeOnly))
		case answers && end.phase != virtkit.Succeeded:
			c.report(out, step, InvACPI, "VMI of %s whose guest powers off after %s, stopped at %s with grace %s, ended %s at %s", s.vm, s.answer, s.at.Format(time.TimeOnly), s.grace, end.phase, end.at.Format(time.TimeOnly))
		case answers && !shutdownBefore(c.life.shutdowns[s.vmi], end.at):
			c.report(out, step, InvLifecycleEvents, "VMI of %s stopped at %s ended Succeeded at %s without a ShuttingDown event before", s.vm, s.at.Format(time.TimeOnly), end.at.Format(time.TimeOnly))
		}
	}
	return nil
}

func shutdownBefore(ts []time.Time, end time.Time) bool {
	for _, t := range ts {
		if !t.After(end) {
			return true
		}
	}
	return false
}

// eventsFinal checks that the transitions followed recorded their events:
// a VM's VMI its SuccessfulCreate on the VM, a completed migration its
// Migrating and Migrated on the VMI.
func (c *checker) eventsFinal(step int, out *[]Violation) {
	t := c.life
	for uid, by := range t.createdBy {
		found := false
		for _, msg := range t.events[t.vmUID[uid]][virtkit.EventReasonSuccessfulCreate] {
			if strings.Contains(msg, by[0][strings.IndexByte(by[0], '/')+1:]) {
				found = true
			}
		}
		if !found && c.sys.eventStats()["virt-controller"].GaveUp == 0 {
			c.report(out, step, InvLifecycleEvents, "VMI %s (uid %s) created for VM %s without a SuccessfulCreate event", by[0], uid, by[1])
		}
	}
	// A recorder that gave up on a write (the store refused it past its
	// retries, as when its node stayed partitioned longer than them) may
	// have lost any of its reporter's events, as client-go's recorder
	// does in KubeVirt.
	gaveUp := map[string]bool{}
	for name, st := range c.sys.eventStats() {
		gaveUp[name] = st.GaveUp > 0
	}
	for uid, m := range t.migrated {
		for reason, by := range map[string]string{virtkit.EventReasonMigrating: m.source, virtkit.EventReasonMigrated: m.target} {
			if len(t.events[uid][reason]) == 0 && !gaveUp[by] {
				c.report(out, step, InvLifecycleEvents, "VMI %s (uid %s) migrated without a %s event", m.what, uid, reason)
			}
		}
	}
}

// migratedVMI is a migration that succeeded, with the nodes whose agents
// record its events (Migrating the source's, Migrated the target's).
type migratedVMI struct {
	what, source, target string
}

// refersTo reports whether v has an owner reference to uid.
func refersTo(v *virtkit.VirtualMachineInstance, uid types.UID) bool {
	return slices.ContainsFunc(v.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == uid })
}
