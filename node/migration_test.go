package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/migration"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// migCluster is an embedded control plane whose sim hosts share one
// network, so VMIs can migrate between them in real time.
type migCluster struct {
	*cluster.Cluster
	hosts map[string]*sim.Host
	net   *sim.Network
	ctx   context.Context
}

func startMigCluster(t *testing.T, nodes int, link sim.Link, mo controller.MigrationOptions) *migCluster {
	t.Helper()
	return startMigClusterWith(t, nodes, link, mo, nil)
}

// startMigClusterWith is startMigCluster whose nodes run wrap(host) (nil:
// the sim host itself).
func startMigClusterWith(t *testing.T, nodes int, link sim.Link, mo controller.MigrationOptions, wrap func(*sim.Host) hypervisor.Hypervisor) *migCluster {
	t.Helper()
	names := make([]string, nodes)
	for i := range names {
		names[i] = fmt.Sprintf("node-%d", i+1)
	}
	return startMigClusterHosts(t, names, func(name string) sim.Options { return sim.Options{Name: name} }, link, mo, wrap)
}

// startMigClusterHosts runs the named nodes, each on the sim host
// hostOpts(name) gives, every pair joined by link; wrap as in
// startMigClusterWith; configure adjusts each node agent's options.
func startMigClusterHosts(t *testing.T, names []string, hostOpts func(name string) sim.Options, link sim.Link, mo controller.MigrationOptions, wrap func(*sim.Host) hypervisor.Hypervisor, configure ...func(string, *node.Options)) *migCluster {
	t.Helper()
	net := sim.NewNetwork()
	hosts := map[string]*sim.Host{}
	var order []*sim.Host
	c, err := cluster.New(cluster.Options{
		NodeNames: names,
		NewHypervisor: func(name string) (hypervisor.Hypervisor, error) {
			h := sim.New(hostOpts(name))
			for _, o := range order {
				if err := net.Connect(h, o, link); err != nil {
					return nil, err
				}
			}
			order = append(order, h)
			hosts[name] = h
			if wrap != nil {
				return wrap(h), nil
			}
			return h, nil
		},
		NodeAgent: node.Options{
			StatusInterval:    200 * time.Millisecond,
			HeartbeatInterval: time.Second,
			Migration: node.MigrationOptions{
				StatusInterval: 50 * time.Millisecond,
				Engine:         migration.Options{MeasurePeriod: 50 * time.Millisecond, PollInterval: 50 * time.Millisecond},
			},
		},
		Migration: mo,
		ConfigureNode: func(name string, o *node.Options) {
			for _, f := range configure {
				f(name, o)
			}
		},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	tctx, tcancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(tcancel)
	return &migCluster{Cluster: c, hosts: hosts, net: net, ctx: tctx}
}

// migratableVMI is a small guest on the pod network with masquerade, so
// LiveMigratable=True.
func migratableVMI(name, memory string) *virtkit.VirtualMachineInstance {
	mem := resource.MustParse(memory)
	return &virtkit.VirtualMachineInstance{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstance},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": name}},
		Spec: virtkit.VirtualMachineInstanceSpec{
			Domain: virtkit.DomainSpec{
				Memory: &virtkit.Memory{Guest: &mem},
				Devices: virtkit.Devices{Interfaces: []virtkit.Interface{{
					Name: "default", InterfaceBindingMethod: virtkit.InterfaceBindingMethod{Masquerade: &virtkit.InterfaceMasquerade{}},
				}}},
			},
			Networks: []virtkit.Network{{Name: "default", NetworkSource: virtkit.NetworkSource{Pod: &virtkit.PodNetwork{}}}},
		},
	}
}

// runningVMI applies the VMI and waits until it runs, is LiveMigratable and
// its guest agent answers.
func (c *migCluster) runningVMI(t *testing.T, vmi *virtkit.VirtualMachineInstance) *virtkit.VirtualMachineInstance {
	t.Helper()
	require.NoError(t, c.Apply(c.ctx, vmi))
	got, err := c.WaitForVMI(c.ctx, vmi.Namespace, vmi.Name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.IsRunning() && v.IsMigratable() &&
			virtkit.IsConditionTrue(v.Status.Conditions, virtkit.VirtualMachineInstanceAgentConnected)
	})
	require.NoError(t, err)
	return got
}

func (c *migCluster) migration(t *testing.T, m *virtkit.VirtualMachineInstanceMigration) *virtkit.VirtualMachineInstanceMigration {
	t.Helper()
	out := &virtkit.VirtualMachineInstanceMigration{}
	require.NoError(t, c.Store().Get(c.ctx, store.KeyOf(m), out))
	return out
}

func (c *migCluster) waitMigration(t *testing.T, m *virtkit.VirtualMachineInstanceMigration, what string, cond func(*virtkit.VirtualMachineInstanceMigration, bool) bool) *virtkit.VirtualMachineInstanceMigration {
	t.Helper()
	got, err := cluster.WaitFor(c.ctx, c.Store(), store.KeyOf(m),
		func() *virtkit.VirtualMachineInstanceMigration { return &virtkit.VirtualMachineInstanceMigration{} },
		&virtkit.VirtualMachineInstanceMigrationList{}, cond)
	require.NoError(t, err, "waiting for migration %s: %s", m.Name, what)
	return got
}

func phaseIs(p virtkit.VirtualMachineInstanceMigrationPhase) func(*virtkit.VirtualMachineInstanceMigration, bool) bool {
	return func(m *virtkit.VirtualMachineInstanceMigration, found bool) bool { return found && m.Status.Phase == p }
}

func isFinal(m *virtkit.VirtualMachineInstanceMigration, found bool) bool {
	return found && m.IsFinal()
}

// isReleased: final and the controller has let go of it.
func isReleased(m *virtkit.VirtualMachineInstanceMigration, found bool) bool {
	return isFinal(m, found) && len(m.Finalizers) == 0
}

func TestMigrationSucceedsOnSim(t *testing.T) {
	c := startMigCluster(t, 2, sim.Link{Bandwidth: 2 << 30}, controller.MigrationOptions{})
	vmi := c.runningVMI(t, migratableVMI("mover", "128Mi"))
	source := vmi.Status.NodeName
	// A guest that keeps writing, so the engine has a dirty rate to measure.
	require.NoError(t, c.hosts[source].SetWorkload(node.DomainName("default", "mover"),
		sim.Workload{DirtyRate: 64 << 20, WorkingSet: 32 << 20, ThrottleSensitivity: 1}))

	mig, err := actions.Migrate(c.ctx, c.Store(), store.KeyOf(vmi), actions.MigrateOptions{})
	require.NoError(t, err)
	done := c.waitMigration(t, mig, "Succeeded", isReleased)
	require.Equal(t, virtkit.MigrationSucceeded, done.Status.Phase, "state: %+v", done.Status.MigrationState)

	// The phase machine went through every phase, in order.
	var phases []virtkit.VirtualMachineInstanceMigrationPhase
	for _, p := range done.Status.PhaseTransitionTimestamps {
		phases = append(phases, p.Phase)
	}
	assert.Equal(t, []virtkit.VirtualMachineInstanceMigrationPhase{
		virtkit.MigrationPending, virtkit.MigrationScheduling, virtkit.MigrationScheduled,
		virtkit.MigrationPreparingTarget, virtkit.MigrationTargetReady, virtkit.MigrationRunning, virtkit.MigrationSucceeded,
	}, phases)
	assert.Equal(t, "mover", done.Labels[virtkit.MigrationSelectorLabel])
	assert.NotContains(t, done.Finalizers, virtkit.VirtualMachineInstanceMigrationFinalizer)

	// The guest runs on the other node and its agent answers there.
	after, err := c.WaitForVMI(c.ctx, "default", "mover", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.Status.NodeName != source && v.Labels[virtkit.NodeNameLabel] == v.Status.NodeName &&
			virtkit.IsConditionTrue(v.Status.Conditions, virtkit.VirtualMachineInstanceAgentConnected) &&
			len(v.Status.ActivePods) == 1
	})
	require.NoError(t, err)
	target := after.Status.NodeName
	assert.Equal(t, virtkit.Running, after.Status.Phase)
	assert.NotContains(t, after.Labels, virtkit.MigrationTargetNodeNameLabel)
	assert.Equal(t, []string{target}, after.ActiveNodes())
	assert.Equal(t, virtkit.MigrationTransportUnix, after.Status.MigrationTransport)

	ms := after.Status.MigrationState
	require.NotNil(t, ms)
	assert.Equal(t, mig.UID, ms.MigrationUID)
	assert.Equal(t, source, ms.SourceNode)
	assert.Equal(t, target, ms.TargetNode)
	assert.Equal(t, target, ms.TargetNodeAddress, "sim: the address is the host name")
	assert.True(t, ms.Completed)
	assert.False(t, ms.Failed)
	require.NotNil(t, ms.StartTimestamp)
	require.NotNil(t, ms.EndTimestamp)
	assert.False(t, ms.EndTimestamp.Before(ms.StartTimestamp))
	assert.Equal(t, virtkit.MigrationPreCopy, ms.Mode)
	require.NotNil(t, ms.MigrationConfiguration)
	assert.Equal(t, virtkit.DefaultCompletionTimeoutPerGiB, *ms.MigrationConfiguration.CompletionTimeoutPerGiB)
	assert.Nil(t, ms.MigrationPolicyName)
	require.NotNil(t, ms.Engine, "the engine's view is recorded")
	assert.NotEmpty(t, ms.Engine.Strategy)
	assert.NotEmpty(t, ms.Engine.Decisions)
	require.NotNil(t, ms.Engine.MeasuredDirtyRateBytesPerSecond, "the workload's dirty rate was measured")
	assert.Positive(t, *ms.Engine.MeasuredDirtyRateBytesPerSecond)
	// The migration object carries the final copy.
	require.NotNil(t, done.Status.MigrationState)
	assert.True(t, done.Status.MigrationState.Completed)
	assert.Equal(t, target, done.Status.MigrationState.TargetNode)

	// The source host no longer has the domain; the target runs it.
	_, err = c.hosts[source].Info(c.ctx, node.DomainName("default", "mover"))
	assert.ErrorIs(t, err, hypervisor.ErrNotFound)
	info, err := c.hosts[target].Info(c.ctx, node.DomainName("default", "mover"))
	require.NoError(t, err)
	assert.Equal(t, hypervisor.StateRunning, info.State)

	// No snapshot is left once the migration has ended (the agent lets
	// its entry go just after it wrote the final status).
	for _, n := range c.Nodes() {
		assert.Eventually(t, func() bool { return len(n.Agent.MigrationSnapshots()) == 0 }, 10*time.Second, 10*time.Millisecond, n.Name)
	}
}

func TestMigrationCancelledByDeletingTheObject(t *testing.T) {
	// 4 MiB/s against a guest rewriting 64 MiB at 32 MiB/s: never converges
	// by itself, so the job is still running when the object is deleted.
	c := startMigCluster(t, 2, sim.Link{Bandwidth: 4 << 20}, controller.MigrationOptions{})
	vmi := c.runningVMI(t, migratableVMI("stuck", "256Mi"))
	source := vmi.Status.NodeName
	require.NoError(t, c.hosts[source].SetWorkload(node.DomainName("default", "stuck"),
		sim.Workload{DirtyRate: 32 << 20, WorkingSet: 64 << 20, ThrottleSensitivity: 0}))

	mig, err := actions.Migrate(c.ctx, c.Store(), store.KeyOf(vmi), actions.MigrateOptions{})
	require.NoError(t, err)
	c.waitMigration(t, mig, "Running", phaseIs(virtkit.MigrationRunning))

	// While it runs, the VMI is held on both hosts and the source agent
	// exposes the engine's and the job's numbers.
	during, err := c.WaitForVMI(c.ctx, "default", "stuck", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && len(v.ActiveNodes()) == 2
	})
	require.NoError(t, err)
	assert.Equal(t, source, during.Status.NodeName)
	var snap node.MigrationSnapshot
	require.Eventually(t, func() bool {
		for _, s := range c.Node(source).Agent.MigrationSnapshots() {
			if s.Name == "stuck" && s.HaveStats {
				snap = s
				return true
			}
		}
		return false
	}, 10*time.Second, 20*time.Millisecond)
	assert.Equal(t, mig.UID, snap.MigrationUID)
	assert.Equal(t, source, snap.SourceNode)
	assert.Equal(t, during.Status.MigrationState.TargetNode, snap.TargetNode)
	assert.Equal(t, node.DomainName("default", "stuck"), snap.Engine.Domain)
	assert.Equal(t, "virtkit", snap.Engine.Policy)
	assert.Equal(t, hypervisor.JobUnbounded, snap.Stats.Type)
	assert.True(t, snap.Stats.DataProcessed.Valid)

	require.NoError(t, c.Store().Delete(c.ctx, mig, store.DeleteOptions{}))
	done := c.waitMigration(t, mig, "Failed", func(m *virtkit.VirtualMachineInstanceMigration, found bool) bool {
		return !found || m.IsFinal()
	})
	if done.Name != "" {
		assert.Equal(t, virtkit.MigrationFailed, done.Status.Phase)
	}

	after, err := c.WaitForVMI(c.ctx, "default", "stuck", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.Status.MigrationState != nil && v.Status.MigrationState.Failed && len(v.Status.ActivePods) == 1
	})
	require.NoError(t, err)
	ms := after.Status.MigrationState
	assert.True(t, ms.AbortRequested)
	assert.Equal(t, virtkit.MigrationAbortSucceeded, ms.AbortStatus)
	assert.Equal(t, virtkit.MigrationReasonAborted, ms.FailureReason)
	assert.NotNil(t, ms.EndTimestamp)
	assert.Equal(t, source, after.Status.NodeName, "the guest stays on the source")
	assert.Equal(t, virtkit.Running, after.Status.Phase)
	assert.Equal(t, []string{source}, after.ActiveNodes())
	info, err := c.hosts[source].Info(c.ctx, node.DomainName("default", "stuck"))
	require.NoError(t, err)
	assert.Equal(t, hypervisor.StateRunning, info.State)
	// The half-arrived copy on the target is gone.
	require.Eventually(t, func() bool {
		for name, h := range c.hosts {
			if name == source {
				continue
			}
			if _, err := h.Info(c.ctx, node.DomainName("default", "stuck")); err == nil {
				return false
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond)
	// The object is gone once its finalizer is released.
	c.waitMigration(t, mig, "deleted", func(_ *virtkit.VirtualMachineInstanceMigration, found bool) bool { return !found })
}

func TestMigrationAdmission(t *testing.T) {
	c := startMigCluster(t, 2, sim.Link{Bandwidth: 4 << 20}, controller.MigrationOptions{})

	t.Run("not LiveMigratable", func(t *testing.T) {
		v := migratableVMI("bridged", "64Mi")
		v.Spec.Domain.Devices.Interfaces[0].InterfaceBindingMethod = virtkit.InterfaceBindingMethod{Bridge: &virtkit.InterfaceBridge{}}
		require.NoError(t, c.Apply(c.ctx, v))
		_, err := c.WaitForVMI(c.ctx, "default", "bridged", func(v *virtkit.VirtualMachineInstance, found bool) bool {
			return found && v.IsRunning() && virtkit.HasCondition(v.Status.Conditions, virtkit.VirtualMachineInstanceIsMigratable, virtkit.ConditionFalse, "")
		})
		require.NoError(t, err)
		// The action refuses; an object created around it fails.
		_, err = actions.Migrate(c.ctx, c.Store(), store.Key{Namespace: "default", Name: "bridged"}, actions.MigrateOptions{})
		require.ErrorIs(t, err, actions.ErrConflictingAction)
		m := createMigration(t, c, "bridged")
		done := c.waitMigration(t, m, "Failed", isFinal)
		assert.Equal(t, virtkit.MigrationFailed, done.Status.Phase)
		assert.Contains(t, done.Status.MigrationState.FailureReason, virtkit.InterfaceNotLiveMigratableReason)
	})

	t.Run("VMI missing", func(t *testing.T) {
		m := createMigration(t, c, "nobody")
		done := c.waitMigration(t, m, "Failed", isFinal)
		assert.Equal(t, virtkit.MigrationFailed, done.Status.Phase)
		assert.Equal(t, virtkit.MigrationReasonVMIMissing, done.Status.MigrationState.FailureReason)
	})

	t.Run("VMI not running", func(t *testing.T) {
		v := migratableVMI("pinned", "64Mi")
		v.Spec.NodeSelector = map[string]string{"no-such-label": "x"} // never placed
		require.NoError(t, c.Apply(c.ctx, v))
		_, err := c.WaitForVMI(c.ctx, "default", "pinned", cluster.VMIPhaseIs(virtkit.Scheduling))
		require.NoError(t, err)
		m := createMigration(t, c, "pinned")
		done := c.waitMigration(t, m, "Failed", isFinal)
		assert.Equal(t, virtkit.MigrationFailed, done.Status.Phase)
		assert.Contains(t, done.Status.MigrationState.FailureReason, virtkit.MigrationReasonNotRunning)
	})

	t.Run("another migration in flight", func(t *testing.T) {
		v := c.runningVMI(t, migratableVMI("busy", "256Mi"))
		require.NoError(t, c.hosts[v.Status.NodeName].SetWorkload(node.DomainName("default", "busy"),
			sim.Workload{DirtyRate: 32 << 20, WorkingSet: 64 << 20}))
		first, err := actions.Migrate(c.ctx, c.Store(), store.KeyOf(v), actions.MigrateOptions{})
		require.NoError(t, err)
		c.waitMigration(t, first, "Running", phaseIs(virtkit.MigrationRunning))
		_, err = actions.Migrate(c.ctx, c.Store(), store.KeyOf(v), actions.MigrateOptions{})
		require.ErrorIs(t, err, actions.ErrConflictingAction, "the action's admission refuses")
		second := createMigration(t, c, "busy")
		done := c.waitMigration(t, second, "Failed", isFinal)
		assert.Equal(t, virtkit.MigrationFailed, done.Status.Phase)
		assert.Contains(t, done.Status.MigrationState.FailureReason, virtkit.MigrationReasonInFlight)
		assert.Equal(t, virtkit.MigrationRunning, c.migration(t, first).Status.Phase, "the first goes on")
		require.NoError(t, c.Store().Delete(c.ctx, first, store.DeleteOptions{}))
		c.waitMigration(t, first, "gone", func(_ *virtkit.VirtualMachineInstanceMigration, found bool) bool { return !found })
	})
}

// createMigration writes a migration object directly, as a client
// bypassing the action's admission would.
func createMigration(t *testing.T, c *migCluster, vmiName string) *virtkit.VirtualMachineInstanceMigration {
	t.Helper()
	m := &virtkit.VirtualMachineInstanceMigration{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstanceMigration},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: vmiName + "-mig-"},
		Spec:       virtkit.VirtualMachineInstanceMigrationSpec{VMIName: vmiName},
	}
	require.NoError(t, c.Store().Create(c.ctx, m))
	return m
}

func TestNodeDrainMigratesLiveMigrateVMIs(t *testing.T) {
	c := startMigCluster(t, 3, sim.Link{Bandwidth: 2 << 30}, controller.MigrationOptions{})
	strategy := virtkit.EvictionStrategyLiveMigrate
	v := migratableVMI("evacuee", "64Mi")
	v.Spec.EvictionStrategy = &strategy
	vmi := c.runningVMI(t, v)
	source := vmi.Status.NodeName

	// kubectl drain: cordon plus the drain taint.
	n := &virtkit.Node{}
	require.NoError(t, c.Store().Get(c.ctx, store.Key{Name: source}, n))
	n.Spec.Unschedulable = true
	n.Spec.Taints = append(n.Spec.Taints, virtkit.Taint{Key: virtkit.DrainTaintKey, Effect: virtkit.TaintEffectNoSchedule})
	require.NoError(t, c.Store().Update(c.ctx, n))

	after, err := c.WaitForVMI(c.ctx, "default", "evacuee", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.Status.NodeName != source && v.Status.NodeName != "" &&
			virtkit.IsConditionTrue(v.Status.Conditions, virtkit.VirtualMachineInstanceAgentConnected)
	})
	require.NoError(t, err)
	assert.Empty(t, after.Status.EvacuationNodeName)
	assert.Nil(t, virtkit.GetCondition(after.Status.Conditions, virtkit.VirtualMachineInstanceEvictionRequested))

	migs := &virtkit.VirtualMachineInstanceMigrationList{}
	require.NoError(t, c.Store().List(c.ctx, migs, store.ListOptions{
		Namespace: "default", LabelSelector: labels.SelectorFromSet(labels.Set{virtkit.MigrationSelectorLabel: "evacuee"}),
	}))
	require.Len(t, migs.Items, 1)
	m := c.waitMigration(t, &migs.Items[0], "Succeeded", isFinal)
	assert.Equal(t, virtkit.MigrationSucceeded, m.Status.Phase)
	assert.Equal(t, source, m.Annotations[virtkit.EvacuationMigrationAnnotation])
	require.NotNil(t, m.Spec.Priority)
	assert.Equal(t, virtkit.PrioritySystemCritical, *m.Spec.Priority)
}

func TestVMMigrateActionEndToEnd(t *testing.T) {
	c := startMigCluster(t, 2, sim.Link{Bandwidth: 2 << 30}, controller.MigrationOptions{})
	mem := resource.MustParse("64Mi")
	rs := virtkit.RunStrategyAlways
	tmpl := migratableVMI("web", "64Mi")
	vm := &virtkit.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachine},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: virtkit.VirtualMachineSpec{RunStrategy: &rs, Template: &virtkit.VirtualMachineInstanceTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec:       tmpl.Spec,
		}},
	}
	vm.Spec.Template.Spec.Domain.Memory = &virtkit.Memory{Guest: &mem}
	require.NoError(t, c.Apply(c.ctx, vm))
	vmi, err := c.WaitForVMI(c.ctx, "default", "web", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.IsRunning() && v.IsMigratable()
	})
	require.NoError(t, err)
	source := vmi.Status.NodeName

	mig, err := actions.Migrate(c.ctx, c.Store(), store.Key{Namespace: "default", Name: "web"}, actions.MigrateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "web", mig.Spec.VMIName)
	done := c.waitMigration(t, mig, "final", isFinal)
	require.Equal(t, virtkit.MigrationSucceeded, done.Status.Phase, "%+v", done.Status.MigrationState)

	// The VM keeps its one VMI (same uid), now on the other node, Ready.
	got, err := c.WaitForVM(c.ctx, "default", "web", func(v *virtkit.VirtualMachine, found bool) bool {
		return found && v.Status.Ready && v.Status.PrintableStatus == virtkit.VirtualMachineStatusRunning
	})
	require.NoError(t, err)
	assert.Equal(t, virtkit.VirtualMachineStatusRunning, got.Status.PrintableStatus)
	after := &virtkit.VirtualMachineInstance{}
	require.NoError(t, c.Store().Get(c.ctx, store.Key{Namespace: "default", Name: "web"}, after))
	assert.Equal(t, vmi.UID, after.UID)
	assert.NotEqual(t, source, after.Status.NodeName)
}

func TestParallelOutboundLimitQueuesMigrations(t *testing.T) {
	// One outbound migration per node: three migrations away from one
	// node run one after the other.
	limits := &virtkit.MigrationConfiguration{ParallelOutboundMigrationsPerNode: ptr[uint32](1)}
	c := startMigCluster(t, 2, sim.Link{Bandwidth: 64 << 20}, controller.MigrationOptions{Config: limits})
	setUnschedulable(t, c, "node-2", true) // every guest starts on node-1
	var vmis []*virtkit.VirtualMachineInstance
	for i := range 3 {
		v := c.runningVMI(t, migratableVMI(fmt.Sprintf("p%d", i), "32Mi"))
		require.Equal(t, "node-1", v.Status.NodeName)
		vmis = append(vmis, v)
	}
	setUnschedulable(t, c, "node-2", false)

	// Watch the store while the migrations run: never two at once.
	stop := make(chan struct{})
	maxRunning, sawQueued := 0, false
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			migs := &virtkit.VirtualMachineInstanceMigrationList{}
			if err := c.Store().List(c.ctx, migs, store.ListOptions{}); err != nil {
				continue
			}
			running := 0
			for _, m := range migs.Items {
				if m.IsRunning() {
					running++
				} else if m.Status.Phase == virtkit.MigrationPending {
					sawQueued = true
				}
			}
			maxRunning = max(maxRunning, running)
		}
	}()
	var migs []*virtkit.VirtualMachineInstanceMigration
	for _, v := range vmis {
		m, err := actions.Migrate(c.ctx, c.Store(), store.KeyOf(v), actions.MigrateOptions{})
		require.NoError(t, err)
		migs = append(migs, m)
	}
	for _, m := range migs {
		done := c.waitMigration(t, m, "final", isFinal)
		assert.Equal(t, virtkit.MigrationSucceeded, done.Status.Phase, "%s: %+v", m.Name, done.Status.MigrationState)
	}
	close(stop)
	<-sampled
	assert.Equal(t, 1, maxRunning, "parallelOutboundMigrationsPerNode=1")
	assert.True(t, sawQueued, "the others waited in Pending")
	for _, v := range vmis {
		got := &virtkit.VirtualMachineInstance{}
		require.NoError(t, c.Store().Get(c.ctx, store.KeyOf(v), got))
		assert.Equal(t, "node-2", got.Status.NodeName)
	}
}

func setUnschedulable(t *testing.T, c *migCluster, name string, on bool) {
	t.Helper()
	require.Eventually(t, func() bool {
		n := &virtkit.Node{}
		if err := c.Store().Get(c.ctx, store.Key{Name: name}, n); err != nil {
			return false
		}
		n.Spec.Unschedulable = on
		return c.Store().Update(c.ctx, n) == nil
	}, 10*time.Second, 10*time.Millisecond)
}

func ptr[T any](v T) *T { return &v }

func TestMigrationSwitchesToPostCopyWhenAllowed(t *testing.T) {
	// 64 MiB/s against 128 MiB/s of I/O-driven writes (throttling cannot
	// slow them): pre-copy never converges; the policy allows post-copy.
	c := startMigCluster(t, 2, sim.Link{Bandwidth: 64 << 20}, controller.MigrationOptions{})
	yes := true
	require.NoError(t, c.Apply(c.ctx, &virtkit.MigrationPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.MigrationsAPIVersion, Kind: virtkit.KindMigrationPolicy},
		ObjectMeta: metav1.ObjectMeta{Name: "may-postcopy"},
		Spec: virtkit.MigrationPolicySpec{
			Selectors:     &virtkit.Selectors{VirtualMachineInstanceSelector: map[string]string{"app": "hot"}},
			AllowPostCopy: &yes,
		},
	}))
	vmi := c.runningVMI(t, migratableVMI("hot", "64Mi"))
	require.NoError(t, c.hosts[vmi.Status.NodeName].SetWorkload(node.DomainName("default", "hot"),
		sim.Workload{DirtyRate: 128 << 20, WorkingSet: 48 << 20, ThrottleSensitivity: 0}))
	mig, err := actions.Migrate(c.ctx, c.Store(), store.KeyOf(vmi), actions.MigrateOptions{})
	require.NoError(t, err)
	done := c.waitMigration(t, mig, "final", isReleased)
	require.Equal(t, virtkit.MigrationSucceeded, done.Status.Phase, "%+v", done.Status.MigrationState)
	ms := done.Status.MigrationState
	assert.Equal(t, virtkit.MigrationPostCopy, ms.Mode)
	require.NotNil(t, ms.MigrationPolicyName)
	assert.Equal(t, "may-postcopy", *ms.MigrationPolicyName)
	require.NotNil(t, ms.Engine)
	var actions []string
	for _, d := range ms.Engine.Decisions {
		actions = append(actions, d.Action)
	}
	assert.Contains(t, actions, string(migration.ActionSwitchPostCopy))
}

func TestMigrationCompletionTimeoutAborts(t *testing.T) {
	// KubeVirt's completionTimeoutPerGiB bounds any policy: 1 s per GB
	// (a 64 MiB guest counts as 1 GB) against a job that cannot finish.
	cfg := &virtkit.MigrationConfiguration{CompletionTimeoutPerGiB: ptr[int64](1)}
	c := startMigCluster(t, 2, sim.Link{Bandwidth: 8 << 20}, controller.MigrationOptions{Config: cfg})
	vmi := c.runningVMI(t, migratableVMI("slow", "64Mi"))
	source := vmi.Status.NodeName
	mig, err := actions.Migrate(c.ctx, c.Store(), store.KeyOf(vmi), actions.MigrateOptions{})
	require.NoError(t, err)
	done := c.waitMigration(t, mig, "final", isReleased)
	require.Equal(t, virtkit.MigrationFailed, done.Status.Phase)
	ms := done.Status.MigrationState
	assert.Equal(t, "Live migration is not completed after 1 seconds and has been aborted", ms.FailureReason)
	assert.Empty(t, ms.AbortStatus, "not a user abort")
	after, err := c.WaitForVMI(c.ctx, "default", "slow", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && len(v.Status.ActivePods) == 1
	})
	require.NoError(t, err)
	assert.Equal(t, source, after.Status.NodeName)
	assert.Equal(t, virtkit.Running, after.Status.Phase)
}

func TestMigrationOfAPausedVMIFailsClearly(t *testing.T) {
	c := startMigCluster(t, 2, sim.Link{}, controller.MigrationOptions{})
	vmi := c.runningVMI(t, migratableVMI("napping", "64Mi"))
	require.NoError(t, actions.Pause(c.ctx, c.Store(), store.KeyOf(vmi)))
	_, err := c.WaitForVMI(c.ctx, "default", "napping", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.IsPaused()
	})
	require.NoError(t, err)
	mig, err := actions.Migrate(c.ctx, c.Store(), store.KeyOf(vmi), actions.MigrateOptions{})
	require.NoError(t, err)
	done := c.waitMigration(t, mig, "final", isReleased)
	assert.Equal(t, virtkit.MigrationFailed, done.Status.Phase)
	assert.Contains(t, done.Status.MigrationState.FailureReason, "paused")
	after, err := c.WaitForVMI(c.ctx, "default", "napping", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && len(v.Status.ActivePods) == 1
	})
	require.NoError(t, err)
	assert.Equal(t, vmi.Status.NodeName, after.Status.NodeName)
	assert.True(t, after.IsPaused(), "still paused where it was")
}
