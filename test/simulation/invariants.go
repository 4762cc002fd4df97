package simulation

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/store"
)

// Invariant names, as printed in violations.
const (
	InvDoubleRun       = "double-run"
	InvUID             = "uid"
	InvRunStrategy     = "run-strategy"
	InvReplicaSet      = "replicaset"
	InvMigrationEnds   = "migration-terminal"
	InvPausedAfterMig  = "paused-by-ended-migration"
	InvLeakedDomain    = "leaked-domain"
	InvStuckDeletion   = "stuck-deletion"
	InvGroundTruth     = "ground-truth"
	InvLifecycleEvents = "lifecycle-event"
	InvStuck           = "stuck"
	InvClusterExited   = "cluster-exited"
)

// Violation is one broken invariant.
type Violation struct {
	Seed      int64  `json:"seed"`
	Step      int    `json:"step"`
	Invariant string `json:"invariant"`
	Message   string `json:"message"`
}

func (v Violation) String() string {
	return fmt.Sprintf("seed=%d step=%d %s: %s", v.Seed, v.Step, v.Invariant, v.Message)
}

// domainAt is one domain on one host.
type domainAt struct {
	node string
	info hypervisor.DomainInfo
}

// checker holds what the invariants need across steps: how far into the
// recorded history it has looked, the uid of every live object, every uid
// ever seen, the VMIs that reached Running, the Started events.
type checker struct {
	sys     system
	seen    int               // changes of the recorder read so far (by arrival)
	live    map[string]string // kind/ns/name -> uid
	uids    map[string]string // uid -> kind/ns/name of its first owner
	running map[string]string // VMI uid -> ns/name, every VMI seen Running
	// startedOn: VMI uid -> the node it was first seen Running on, whose
	// agent records its Started event.
	startedOn map[string]string
	started   map[string]bool // VMI uid -> a Started event was recorded
	reported  map[string]bool
	life      *lifeTrack
	// perStepGroundTruth checks the hosts after every step (on virtual
	// time every host is read at one instant); otherwise at quiescence
	// only.
	perStepGroundTruth bool
}

func newChecker(s system) *checker {
	return &checker{sys: s, live: map[string]string{}, uids: map[string]string{}, running: map[string]string{}, startedOn: map[string]string{},
		started: map[string]bool{}, reported: map[string]bool{}, life: newLifeTrack(), perStepGroundTruth: true}
}

// report adds a violation once per invariant and message.
func (c *checker) report(out *[]Violation, step int, inv, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if c.reported[inv+msg] {
		return
	}
	c.reported[inv+msg] = true
	*out = append(*out, Violation{Step: step, Invariant: inv, Message: msg})
}

// step checks what must hold at every instant.
func (c *checker) step(ctx context.Context, step int) ([]Violation, error) {
	var out []Violation
	if exited, err := c.sys.exited(); exited {
		c.report(&out, step, InvClusterExited, "the cluster stopped: %v", err)
	}
	c.history(step, &out)
	c.lifeStep(step, &out)
	if c.perStepGroundTruth {
		if err := c.checkDoubleRun(ctx, step, &out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkDoubleRun checks that no guest runs on two hosts at once.
func (c *checker) checkDoubleRun(ctx context.Context, step int, out *[]Violation) error {
	if err := cluster.CheckNoDoubleRunIn(ctx, c.sys.observation()); err != nil {
		if !errors.Is(err, cluster.ErrInvariant) {
			return err
		}
		c.report(out, step, InvDoubleRun, "%v", err)
	}
	return nil
}

// history walks the changes recorded since the last step: uids must stay
// with their object and never be reused; it notes VMIs that reached
// Running and the Started events.
func (c *checker) history(step int, out *[]Violation) {
	changes, total, errs := c.sys.recorder().ChangesSince(c.seen)
	for _, err := range errs {
		c.report(out, step, InvUID, "change history incomplete: %v", err)
	}
	for _, ch := range changes {
		c.lifeChange(step, ch, out)
		id := ch.Kind + " " + ch.Object.GetNamespace() + "/" + ch.Object.GetName()
		uid := string(ch.Object.GetUID())
		switch ch.Type {
		case store.Added:
			if prev, ok := c.live[id]; ok {
				c.report(out, step, InvUID, "%s created as uid %s while uid %s was not deleted", id, uid, prev)
			}
			if first, ok := c.uids[uid]; ok {
				c.report(out, step, InvUID, "uid %s of %s reused by %s", uid, first, id)
			}
			c.live[id], c.uids[uid] = uid, id
		case store.Modified:
			if prev, ok := c.live[id]; !ok || prev != uid {
				c.report(out, step, InvUID, "%s modified with uid %s, live uid %q", id, uid, prev)
			}
		case store.Deleted:
			if prev := c.live[id]; prev != uid {
				c.report(out, step, InvUID, "%s deleted with uid %s, live uid %q", id, uid, prev)
			}
			delete(c.live, id)
		}
		switch o := ch.Object.(type) {
		case *virtkit.VirtualMachineInstance:
			if o.Status.Phase == virtkit.Running {
				c.running[uid] = o.Namespace + "/" + o.Name
				if _, ok := c.startedOn[uid]; !ok {
					c.startedOn[uid] = o.Status.NodeName
				}
			}
		case *virtkit.Event:
			if o.Reason == virtkit.EventReasonStarted && o.Regarding.Kind == virtkit.KindVirtualMachineInstance {
				c.started[string(o.Regarding.UID)] = true
			}
		}
	}
	c.seen = total
}

// final checks what must hold once faults have healed and the cluster has
// had time to converge.
func (c *checker) final(ctx context.Context, step int) ([]Violation, error) {
	out, err := c.step(ctx, step)
	if err != nil {
		return nil, err
	}
	if err := c.settled(ctx, step, &out); err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Invariant+out[i].Message < out[j].Invariant+out[j].Message })
	return out, nil
}

// settled checks the store and the hosts against each other once the
// cluster has converged; final is step and settled.
func (c *checker) settled(ctx context.Context, step int, vs *[]Violation) error {
	out := *vs
	defer func() { *vs = out }()
	if !c.perStepGroundTruth {
		if err := c.checkDoubleRun(ctx, step, &out); err != nil {
			return err
		}
	}
	st := c.sys.st()
	var vms virtkit.VirtualMachineList
	var vmis virtkit.VirtualMachineInstanceList
	var rss virtkit.VirtualMachineInstanceReplicaSetList
	var migs virtkit.VirtualMachineInstanceMigrationList
	for _, l := range []virtkit.ObjectList{&vms, &vmis, &rss, &migs} {
		if err := st.List(ctx, l, store.ListOptions{}); err != nil {
			return err
		}
	}
	doms, err := c.sys.domains(ctx)
	if err != nil {
		return err
	}
	active := map[string][]domainAt{} // domain name -> active domains
	for _, d := range doms {
		if d.info.State.IsActive() {
			active[d.info.Name] = append(active[d.info.Name], d)
		}
	}
	vmiByKey := map[string]*virtkit.VirtualMachineInstance{}
	for i := range vmis.Items {
		v := &vmis.Items[i]
		vmiByKey[v.Namespace+"/"+v.Name] = v
	}
	c.checkVMs(&out, step, vms.Items, vmiByKey)
	c.checkReplicaSets(&out, step, rss.Items, vmis.Items)
	c.checkCompletionExtension(&out, step, migs.Items)
	ongoing := map[string]bool{}
	for _, m := range migs.Items {
		if !m.IsFinal() {
			ongoing[m.Namespace+"/"+m.Spec.VMIName] = true
			c.report(&out, step, InvMigrationEnds, "migration %s/%s of %s still %q at quiescence", m.Namespace, m.Name, m.Spec.VMIName, m.Status.Phase)
		}
	}
	// Every domain belongs to a VMI placed on its host (or in a migration
	// of it); paused for a migration only while one is in flight; paused
	// otherwise only when its VMI is paused by the user.
	for _, chk := range []struct {
		inv   string
		check func(context.Context, cluster.Observation) error
	}{{InvLeakedDomain, cluster.CheckNoLeakedDomainsIn}, {InvPausedAfterMig, cluster.CheckNoPausedByEndedMigrationIn}} {
		if err := chk.check(ctx, c.sys.observation()); err != nil {
			if !errors.Is(err, cluster.ErrInvariant) {
				return err
			}
			c.report(&out, step, chk.inv, "%v", err)
		}
	}
	for _, d := range doms {
		ns, name, ok := splitDomain(d.info.Name)
		if !ok {
			continue
		}
		key := ns + "/" + name
		vmi := vmiByKey[key]
		if vmi == nil || d.info.State != hypervisor.StatePaused || ongoing[key] ||
			d.info.Reason == hypervisor.ReasonMigration || d.info.Reason == hypervisor.ReasonPostcopy {
			continue
		}
		if !virtkit.HasCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstancePaused, "True", virtkit.PausedByUserReason) {
			c.report(&out, step, InvGroundTruth, "domain %s on %s paused (%s) and VMI %s not paused by the user", d.info.Name, d.node, d.info.Reason, key)
		}
	}
	c.checkHotplug(&out, step, vmis.Items, active, ongoing)
	// Every VMI agrees with the hosts.
	for _, v := range vmis.Items {
		key := v.Namespace + "/" + v.Name
		doms := active[v.Namespace+"_"+v.Name]
		switch {
		case v.DeletionTimestamp != nil:
			c.report(&out, step, InvStuckDeletion, "VMI %s still deleting at quiescence (finalizers %v)", key, v.Finalizers)
		case v.Status.Phase == virtkit.Running:
			if len(doms) != 1 || doms[0].node != v.Status.NodeName {
				c.report(&out, step, InvGroundTruth, "VMI %s Running on %q, active domains on %v", key, v.Status.NodeName, nodesOf(doms))
			}
		case v.IsFinal():
			if len(doms) > 0 {
				c.report(&out, step, InvGroundTruth, "VMI %s %s, active domains on %v", key, v.Status.Phase, nodesOf(doms))
			}
		default:
			c.report(&out, step, InvGroundTruth, "VMI %s still %q at quiescence", key, v.Status.Phase)
		}
	}
	for _, l := range []virtkit.ObjectList{&vms, &rss, &migs} {
		objs, err := items(l)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if o.GetDeletionTimestamp() != nil {
				c.report(&out, step, InvStuckDeletion, "%T %s/%s still deleting at quiescence (finalizers %v)", o, o.GetNamespace(), o.GetName(), o.GetFinalizers())
			}
		}
	}
	if err := c.lifeFinal(ctx, step, vmis.Items, &out); err != nil {
		return err
	}
	if err := c.hotplugFinal(ctx, step, vmis.Items, &out); err != nil {
		return err
	}
	if err := c.volumeMigrationFinal(ctx, step, vms.Items, vmis.Items, &out); err != nil {
		return err
	}
	stats := c.sys.eventStats()
	for uid, key := range c.running {
		// A recorder that gave up on writes may have lost this one.
		if !c.started[uid] && stats[c.startedOn[uid]].GaveUp == 0 {
			c.report(&out, step, InvLifecycleEvents, "VMI %s (uid %s) was Running but no Started event was recorded", key, uid)
		}
	}
	return nil
}

func (c *checker) checkVMs(out *[]Violation, step int, vms []virtkit.VirtualMachine, vmis map[string]*virtkit.VirtualMachineInstance) {
	for _, vm := range vms {
		if vm.DeletionTimestamp != nil {
			continue
		}
		key := vm.Namespace + "/" + vm.Name
		rs, err := vm.RunStrategy()
		if err != nil {
			continue
		}
		vmi := vmis[key]
		// As KubeVirt, a VM whose VMI ended during a volume migration is
		// marked ManualRecoveryRequired (its template names claims the
		// guest never ran on) and no VMI is started for it until the user
		// reverts the volumes.
		if cond := virtkit.GetCondition(vm.Status.Conditions, virtkit.VirtualMachineManualRecoveryRequired); cond != nil && cond.Status == virtkit.ConditionTrue {
			if cond.Reason != controller.ReasonVolumeMigrationInterrupted {
				c.report(out, step, InvRunStrategy, "VM %s needs manual recovery for an unknown reason %q", key, cond.Reason)
			}
			if vmi != nil && !vmi.IsFinal() {
				c.report(out, step, InvRunStrategy, "VM %s needs manual recovery, yet its VMI is %s", key, vmiState(vmi))
			}
			continue
		}
		switch rs {
		case virtkit.RunStrategyAlways:
			if vmi == nil || vmi.Status.Phase != virtkit.Running {
				c.report(out, step, InvRunStrategy, "VM %s is Always, its VMI is %s", key, vmiState(vmi))
			}
		case virtkit.RunStrategyHalted:
			if vmi != nil && !vmi.IsFinal() {
				c.report(out, step, InvRunStrategy, "VM %s is Halted, its VMI is %s", key, vmiState(vmi))
			}
		case virtkit.RunStrategyRerunOnFailure:
			if vmi != nil && vmi.Status.Phase == virtkit.Failed {
				c.report(out, step, InvRunStrategy, "VM %s is RerunOnFailure, its VMI is %s", key, vmiState(vmi))
			}
		}
	}
}

func (c *checker) checkReplicaSets(out *[]Violation, step int, rss []virtkit.VirtualMachineInstanceReplicaSet, vmis []virtkit.VirtualMachineInstance) {
	for _, rs := range rss {
		if rs.DeletionTimestamp != nil || rs.Spec.Replicas == nil {
			continue
		}
		running, others := 0, []string{}
		for i := range vmis {
			v := &vmis[i]
			ref := controllerOf(v)
			if ref == nil || ref.UID != rs.UID || v.DeletionTimestamp != nil || v.IsFinal() {
				continue
			}
			if v.Status.Phase == virtkit.Running {
				running++
			} else {
				others = append(others, v.Name+"="+string(v.Status.Phase))
			}
		}
		if running != int(*rs.Spec.Replicas) || len(others) > 0 {
			c.report(out, step, InvReplicaSet, "ReplicaSet %s/%s wants %d, has %d Running and %v", rs.Namespace, rs.Name, *rs.Spec.Replicas, running, others)
		}
	}
}

func vmiState(v *virtkit.VirtualMachineInstance) string {
	if v == nil {
		return "missing"
	}
	return fmt.Sprintf("%q on %q", v.Status.Phase, v.Status.NodeName)
}

func nodesOf(ds []domainAt) []string {
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		out = append(out, d.node)
	}
	return out
}

func splitDomain(name string) (ns, n string, ok bool) {
	for i := 0; i < len(name); i++ {
		if name[i] == '_' {
			return name[:i], name[i+1:], i > 0 && i < len(name)-1
		}
	}
	return "", "", false
}

func controllerOf(v *virtkit.VirtualMachineInstance) *metav1.OwnerReference {
	return metav1.GetControllerOf(v)
}
