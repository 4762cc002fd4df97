package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/scheduler"
	"github.com/virtkit/virtkit/store"
)

func newVMI(name, mem string) *virtkit.VirtualMachineInstance {
	v := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	v.Spec.Domain.Resources.Requests = virtkit.ResourceList{virtkit.ResourceMemory: resource.MustParse(mem)}
	return v
}

func phases(v *virtkit.VirtualMachineInstance) []virtkit.VirtualMachineInstancePhase {
	var out []virtkit.VirtualMachineInstancePhase
	for _, p := range v.Status.PhaseTransitionTimestamps {
		out = append(out, p.Phase)
	}
	return out
}

func TestPlacement(t *testing.T) {
	e := newEnv(t, 0)
	e.addNode("n1", "4", "8Gi")
	require.NoError(t, e.st.Create(e.ctx, newVMI("a", "1Gi")))
	_, err := e.vmi.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "a"})
	require.NoError(t, err)

	vmi := e.getVMI("a")
	assert.Equal(t, virtkit.Scheduled, vmi.Status.Phase)
	assert.Equal(t, []virtkit.VirtualMachineInstancePhase{virtkit.Pending, virtkit.Scheduling, virtkit.Scheduled}, phases(vmi))
	assert.Equal(t, "n1", vmi.Status.NodeName)
	assert.Equal(t, "n1", vmi.Labels[virtkit.NodeNameLabel])
	assert.True(t, virtkit.IsConditionTrue(vmi.Status.Conditions, virtkit.VirtualMachineInstancePodScheduled))
	assert.True(t, virtkit.HasCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstanceReady, virtkit.ConditionFalse, virtkit.GuestNotRunningReason))
	assert.Equal(t, []string{virtkit.VirtualMachineInstanceFinalizer, virtkit.NodeAgentFinalizer}, vmi.Finalizers,
		"the node agent's finalizer comes with the hand-off")

	// The node agent takes over from here; the placement reconciler leaves
	// Scheduled VMIs alone.
	rv := vmi.ResourceVersion
	_, err = e.vmi.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "a"})
	require.NoError(t, err)
	assert.Equal(t, rv, e.getVMI("a").ResourceVersion)
}

func TestUnschedulableUntilANodeFits(t *testing.T) {
	e := newEnv(t, 0)
	e.addNode("small", "4", "512Mi")
	require.NoError(t, e.st.Create(e.ctx, newVM("vm", virtkit.RunStrategyAlways)))
	e.settle()

	vmi := e.getVMI("vm")
	require.NotNil(t, vmi)
	assert.Equal(t, virtkit.Scheduling, vmi.Status.Phase)
	c := virtkit.GetCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstancePodScheduled)
	require.NotNil(t, c)
	assert.Equal(t, virtkit.ConditionFalse, c.Status)
	assert.Equal(t, virtkit.PodReasonUnschedulable, c.Reason)
	assert.Equal(t, "0/1 nodes are available: 1 Insufficient memory.", c.Message)
	assert.Equal(t, virtkit.VirtualMachineStatusUnschedulable, e.getVM("vm").Status.PrintableStatus)
	require.ErrorIs(t, e.errs["vmi/default/vm"], scheduler.ErrUnschedulable, "retried with backoff")
	assert.False(t, reconcile.IsTerminal(e.errs["vmi/default/vm"]))

	// A node event re-queues the waiting VMI.
	reqs := e.vmi.Watches()[1].Map(e.ctx, &virtkit.Node{})
	assert.Equal(t, []reconcile.Request{{Namespace: "default", Name: "vm"}}, reqs)

	e.addNode("big", "4", "8Gi")
	e.settle()
	vmi = e.getVMI("vm")
	assert.Equal(t, virtkit.Running, vmi.Status.Phase)
	assert.Equal(t, "big", vmi.Status.NodeName)
	assert.True(t, virtkit.IsConditionTrue(vmi.Status.Conditions, virtkit.VirtualMachineInstancePodScheduled))
	assert.Empty(t, e.vmi.Watches()[1].Map(e.ctx, &virtkit.Node{}))
}

func TestBadAffinityIsTerminal(t *testing.T) {
	e := newEnv(t, 1)
	vmi := newVMI("a", "1Gi")
	vmi.Spec.Affinity = &virtkit.Affinity{PodAffinity: &virtkit.PodAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []virtkit.PodAffinityTerm{{}},
	}}
	require.NoError(t, e.st.Create(e.ctx, vmi))
	_, err := e.vmi.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "a"})
	require.True(t, reconcile.IsTerminal(err))
	require.ErrorIs(t, err, scheduler.ErrInvalidSpec)
	c := virtkit.GetCondition(e.getVMI("a").Status.Conditions, virtkit.VirtualMachineInstancePodScheduled)
	require.NotNil(t, c)
	assert.Contains(t, c.Message, "topologyKey")
}

// Parallel placements never overcommit a node, with the default
// (incremental) scheduler and with a plain Scheduler that is handed the
// placed VMIs on every decision.
func TestPlacementNeverOvercommitsUnderConcurrency(t *testing.T) {
	for _, plain := range []bool{false, true} {
		t.Run(fmt.Sprintf("plain=%v", plain), func(t *testing.T) {
			e := newEnv(t, 0)
			if plain {
				def := scheduler.New(scheduler.Options{Clock: e.clock})
				var err error
				e.vmi, err = NewVMIReconciler(ReconcilerOptions{Store: e.st, Clock: e.clock, Scheduler: scheduler.Func(def.Schedule)})
				require.NoError(t, err)
				require.Nil(t, e.vmi.cache.placements, "a plain Scheduler gets the placed VMIs")
			} else {
				require.NotNil(t, e.vmi.cache.placements)
			}
			e.addNode("n1", "100", "4Gi")
			e.addNode("n2", "100", "4Gi")
			const n = 20
			for i := range n {
				require.NoError(t, e.st.Create(e.ctx, newVMI("vmi-"+string(rune('a'+i)), "1Gi")))
			}
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					for {
						_, err := e.vmi.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "vmi-" + string(rune('a'+i))})
						if err == nil || !isConflict(err) {
							return
						}
					}
				})
			}
			wg.Wait()
			list := &virtkit.VirtualMachineInstanceList{}
			require.NoError(t, e.st.List(e.ctx, list, store.ListOptions{}))
			perNode := map[string]int{}
			for _, v := range list.Items {
				if v.Status.NodeName != "" {
					perNode[v.Status.NodeName]++
				}
			}
			assert.Equal(t, map[string]int{"n1": 4, "n2": 4}, perNode, "8 GiB of nodes hold eight 1 GiB VMIs")
		})
	}
}

func TestDeletedBeforePlacement(t *testing.T) {
	e := newEnv(t, 0)
	require.NoError(t, e.st.Create(e.ctx, newVMI("a", "1Gi")))
	_, err := e.vmi.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "a"}) // unschedulable: no nodes
	require.ErrorIs(t, err, scheduler.ErrUnschedulable)
	vmi := e.getVMI("a")
	require.NoError(t, e.st.Delete(e.ctx, vmi, store.DeleteOptions{}))
	require.NotNil(t, e.getVMI("a"), "held by the finalizer")
	_, err = e.vmi.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "a"})
	require.NoError(t, err)
	assert.Nil(t, e.getVMI("a"), "failed and released")
}

func TestDeletedScheduledButNotTaken(t *testing.T) {
	e := newEnv(t, 1)
	require.NoError(t, e.st.Create(e.ctx, newVMI("a", "1Gi")))
	_, err := e.vmi.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "a"})
	require.NoError(t, err)
	vmi := e.getVMI("a")
	require.Equal(t, virtkit.Scheduled, vmi.Status.Phase)
	// Placed without the agent's finalizer (by another placement
	// controller, say): no agent has taken it.
	require.True(t, removeFinalizers(vmi, virtkit.NodeAgentFinalizer))
	require.NoError(t, e.st.Update(e.ctx, vmi))
	require.NoError(t, e.st.Delete(e.ctx, vmi, store.DeleteOptions{}))

	// An agent that read the VMI before the deletion cannot take it now.
	stale := vmi.DeepCopy()
	addFinalizer(stale, virtkit.NodeAgentFinalizer)
	require.Error(t, e.st.Update(e.ctx, stale))

	_, err = e.vmi.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "a"})
	require.NoError(t, err)
	assert.Nil(t, e.getVMI("a"))
}

// A VMI deleted between the hand-off and its start waits for the node
// agent, whose finalizer the placement wrote: the agent releases it (it has
// no domain to stop), then the controller fails and releases it.
func TestDeletedScheduledReleasedByAgent(t *testing.T) {
	e := newEnv(t, 1)
	require.NoError(t, e.st.Create(e.ctx, newVMI("a", "1Gi")))
	_, err := e.vmi.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "a"})
	require.NoError(t, err)
	vmi := e.getVMI("a")
	require.Equal(t, virtkit.Scheduled, vmi.Status.Phase)
	require.NoError(t, e.st.Delete(e.ctx, vmi, store.DeleteOptions{}))

	_, err = e.vmi.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "a"})
	require.NoError(t, err)
	vmi = e.getVMI("a")
	require.NotNil(t, vmi, "held for the node agent")
	assert.Equal(t, virtkit.Scheduled, vmi.Status.Phase, "the agent decides, not the controller")

	// The agent has no domain for it: it only drops its finalizer.
	require.True(t, removeFinalizers(vmi, virtkit.NodeAgentFinalizer))
	require.NoError(t, e.st.Update(e.ctx, vmi))
	_, err = e.vmi.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "a"})
	require.NoError(t, err)
	assert.Nil(t, e.getVMI("a"), "failed and released")
}

// A placement written in two writes (a store without store.StatusWriter:
// the node label and the agent's finalizer first, then the status) that
// loses its second write to a delete leaves a VMI with the agent's
// finalizer and no node. No agent can release it: the controller does.
func TestDeletedHalfPlacedVMIReleased(t *testing.T) {
	e := newEnv(t, 1)
	vmi := newVMI("a", "1Gi")
	vmi.Labels = map[string]string{virtkit.NodeNameLabel: "node-0"}
	vmi.Finalizers = []string{virtkit.VirtualMachineInstanceFinalizer, virtkit.NodeAgentFinalizer}
	require.NoError(t, e.st.Create(e.ctx, vmi))
	require.NoError(t, e.st.Delete(e.ctx, vmi, store.DeleteOptions{}))

	_, err := e.vmi.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "a"})
	require.NoError(t, err)
	assert.Nil(t, e.getVMI("a"), "failed and released: no agent holds a VMI placed on no node")
}

func TestFinalVMIReleasedAfterAgent(t *testing.T) {
	e := newEnv(t, 1)
	require.NoError(t, e.st.Create(e.ctx, newVMI("a", "1Gi")))
	e.settle()
	require.Equal(t, virtkit.Running, e.getVMI("a").Status.Phase)
	e.guestStops("a", virtkit.Succeeded)
	// Before the agent releases its finalizer the controller keeps its own.
	_, err := e.vmi.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: "a"})
	require.NoError(t, err)
	assert.Contains(t, e.getVMI("a").Finalizers, virtkit.VirtualMachineInstanceFinalizer)
	e.settle()
	vmi := e.getVMI("a")
	assert.Empty(t, vmi.Finalizers)
	assert.Equal(t, virtkit.Succeeded, vmi.Status.Phase, "a final VMI without owner stays until deleted")
	require.NoError(t, e.st.Delete(e.ctx, vmi, store.DeleteOptions{}))
	assert.Nil(t, e.getVMI("a"))
}

func TestMigrate(t *testing.T) {
	e := newEnv(t, 2)
	require.NoError(t, e.st.Create(e.ctx, newVM("vm", virtkit.RunStrategyAlways)))
	e.settle()
	mig, err := actions.Migrate(e.ctx, e.st, key("vm"), actions.MigrateOptions{AddedNodeSelector: map[string]string{"zone": "b"}})
	require.NoError(t, err)
	assert.Equal(t, "vm", mig.Spec.VMIName)
	assert.Equal(t, "vm", mig.Labels[virtkit.MigrationSelectorLabel])
	assert.Equal(t, map[string]string{"zone": "b"}, mig.Spec.AddedNodeSelector)
	assert.NotEmpty(t, mig.Name)

	_, err = actions.Migrate(e.ctx, e.st, key("vm"), actions.MigrateOptions{})
	require.ErrorIs(t, err, actions.ErrConflictingAction, "one in flight")

	mig.Status.Phase = virtkit.MigrationSucceeded
	require.NoError(t, e.st.UpdateStatus(e.ctx, mig))
	vmi := e.getVMI("vm")
	virtkit.SetCondition(&vmi.Status.Conditions, virtkit.Condition{Type: virtkit.VirtualMachineInstanceIsMigratable, Status: virtkit.ConditionFalse,
		Reason: virtkit.DisksNotLiveMigratableReason, Message: "PVC x is not shared"}, metav1.Now())
	require.NoError(t, e.st.UpdateStatus(e.ctx, vmi))
	_, err = actions.Migrate(e.ctx, e.st, key("vm"), actions.MigrateOptions{})
	require.ErrorIs(t, err, actions.ErrConflictingAction)
	assert.Contains(t, err.Error(), "Reason: DisksNotLiveMigratable")

	_, err = actions.Migrate(e.ctx, e.st, key("nope"), actions.MigrateOptions{})
	require.ErrorIs(t, err, store.ErrNotFound)

	e.guestStops("vm", virtkit.Failed)
	_, err = actions.Migrate(e.ctx, e.st, key("vm"), actions.MigrateOptions{})
	require.ErrorIs(t, err, actions.ErrConflictingAction, "final")
}

func isConflict(err error) bool { return err != nil && errorsIs(err, store.ErrConflict) }

var _ = context.Background
var _ = time.Second

func errorsIs(err, target error) bool { return errors.Is(err, target) }
