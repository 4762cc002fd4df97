package node_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

const nodeName = "node-a"

// newScheduledVMI stores a VMI as the placement controller leaves it:
// Scheduled on nodeName.
func newScheduledVMI(t *testing.T, st store.Store, name string) *virtkit.VirtualMachineInstance {
	t.Helper()
	ctx := context.Background()
	mem := resource.MustParse("128Mi")
	grace := int64(1)
	vmi := &virtkit.VirtualMachineInstance{
		TypeMeta: metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstance},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
			Labels: map[string]string{virtkit.NodeNameLabel: nodeName}},
		Spec: virtkit.VirtualMachineInstanceSpec{
			Domain:                        virtkit.DomainSpec{Memory: &virtkit.Memory{Guest: &mem}},
			TerminationGracePeriodSeconds: &grace,
		},
	}
	virtkit.SetDefaults(vmi)
	require.Empty(t, virtkit.Validate(vmi))
	require.NoError(t, st.Create(ctx, vmi))
	vmi.Status.NodeName = nodeName
	vmi.SetPhase(virtkit.Scheduled, metav1.Now())
	require.NoError(t, st.UpdateStatus(ctx, vmi))
	return vmi
}

// runAgent starts an agent and returns a stop func that waits for it.
func runAgent(t *testing.T, st store.Store, hv hypervisor.Hypervisor, tweak func(*node.Options)) (stop func()) {
	t.Helper()
	opts := node.Options{NodeName: nodeName, Store: st, Hypervisor: hv,
		StatusInterval: 100 * time.Millisecond, ShutdownPoll: 20 * time.Millisecond, ResyncPeriod: time.Second}
	if tweak != nil {
		tweak(&opts)
	}
	a, err := node.New(opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done)
		})
	}
	t.Cleanup(stop)
	return stop
}

func getVMI(t *testing.T, st store.Store, name string) (*virtkit.VirtualMachineInstance, bool) {
	t.Helper()
	vmi := &virtkit.VirtualMachineInstance{}
	err := st.Get(context.Background(), store.Key{Namespace: "default", Name: name}, vmi)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false
	}
	require.NoError(t, err)
	return vmi, true
}

// changeVMI re-reads the VMI name and writes change's result (its status
// when status is set), again on a conflict: the running agent may write
// the VMI between the read and the write.
func changeVMI(t *testing.T, st store.Store, name string, status bool, change func(*virtkit.VirtualMachineInstance)) {
	t.Helper()
	ctx := context.Background()
	for range 20 {
		vmi, ok := getVMI(t, st, name)
		require.True(t, ok, "VMI %s not found", name)
		change(vmi)
		write := st.Update
		if status {
			write = st.UpdateStatus
		}
		err := write(ctx, vmi)
		if !errors.Is(err, store.ErrConflict) {
			require.NoError(t, err)
			return
		}
	}
	t.Fatalf("VMI %s: still conflicting after 20 writes", name)
}

func eventuallyPhase(t *testing.T, st store.Store, name string, phase virtkit.VirtualMachineInstancePhase) *virtkit.VirtualMachineInstance {
	t.Helper()
	var got *virtkit.VirtualMachineInstance
	require.Eventually(t, func() bool {
		vmi, ok := getVMI(t, st, name)
		got = vmi
		return ok && vmi.Status.Phase == phase
	}, 10*time.Second, 10*time.Millisecond, "VMI %s never reached %s", name, phase)
	return got
}

func domainNames(t *testing.T, hv hypervisor.Hypervisor) map[string]hypervisor.DomainInfo {
	t.Helper()
	doms, err := hv.List(context.Background())
	require.NoError(t, err)
	out := map[string]hypervisor.DomainInfo{}
	for _, d := range doms {
		out[d.Name] = d
	}
	return out
}

func TestAgentRunsAScheduledVMIAndReportsStatus(t *testing.T) {
	st, hv := store.NewMemory(), sim.New(sim.Options{Name: nodeName})
	runAgent(t, st, hv, nil)
	newScheduledVMI(t, st, "vmi-1")

	vmi := eventuallyPhase(t, st, "vmi-1", virtkit.Running)
	require.Contains(t, vmi.Finalizers, node.Finalizer)
	require.Equal(t, map[string]string{string(node.PodUID(vmi, nodeName)): nodeName}, stringMap(vmi.Status.ActivePods))
	require.True(t, vmi.HasReachedPhase(virtkit.Running))
	require.NotNil(t, vmi.Status.Memory)
	require.Equal(t, "128Mi", vmi.Status.Memory.GuestAtBoot.String())

	node1 := &virtkit.Node{}
	require.NoError(t, st.Get(context.Background(), store.Key{Name: nodeName}, node1))
	require.True(t, virtkit.IsConditionTrue(node1.Status.Conditions, virtkit.NodeReady))
	cpus := node1.Status.Capacity[virtkit.ResourceCPU]
	require.Equal(t, "8", cpus.String())
	require.Contains(t, domainNames(t, hv), "default_vmi-1")
}

func stringMap[K ~string, V ~string](m map[K]V) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[string(k)] = string(v)
	}
	return out
}

func TestAgentStopsADeletedVMIGracefullyAndReleasesIt(t *testing.T) {
	st, hv := store.NewMemory(), sim.New(sim.Options{Name: nodeName})
	runAgent(t, st, hv, nil)
	vmi := newScheduledVMI(t, st, "vmi-del")
	eventuallyPhase(t, st, "vmi-del", virtkit.Running)

	require.NoError(t, st.Delete(context.Background(), vmi, store.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, found := getVMI(t, st, "vmi-del")
		return !found
	}, 10*time.Second, 10*time.Millisecond)
	require.NotContains(t, domainNames(t, hv), "default_vmi-del")
}

func TestAgentMapsAGuestShutdownToSucceeded(t *testing.T) {
	st, hv := store.NewMemory(), sim.New(sim.Options{Name: nodeName})
	runAgent(t, st, hv, nil)
	newScheduledVMI(t, st, "vmi-off")
	eventuallyPhase(t, st, "vmi-off", virtkit.Running)

	// The guest powers itself off (ACPI from inside).
	require.NoError(t, hv.Shutdown(context.Background(), "default_vmi-off"))
	vmi := eventuallyPhase(t, st, "vmi-off", virtkit.Succeeded)
	require.False(t, vmi.IsReady())
	require.Eventually(t, func() bool {
		_, there := domainNames(t, hv)["default_vmi-off"]
		return !there
	}, 5*time.Second, 10*time.Millisecond, "the final VMI's domain is undefined")
}

func TestAgentMapsADestroyedACPIGuestToFailed(t *testing.T) {
	st, hv := store.NewMemory(), sim.New(sim.Options{Name: nodeName})
	runAgent(t, st, hv, nil)
	newScheduledVMI(t, st, "vmi-crash")
	eventuallyPhase(t, st, "vmi-crash", virtkit.Running)
	require.NoError(t, hv.Destroy(context.Background(), "default_vmi-crash"))
	eventuallyPhase(t, st, "vmi-crash", virtkit.Failed)
}

// TestAgentRestartNeitherLosesNorDuplicatesGuests kills the agent in the
// middle of a VMI's life, changes the world while it is down, and checks
// that the new agent adopts what is its own and removes what is not.
func TestAgentRestartNeitherLosesNorDuplicatesGuests(t *testing.T) {
	ctx := context.Background()
	st, hv := store.NewMemory(), sim.New(sim.Options{Name: nodeName})
	stop := runAgent(t, st, hv, nil)
	keep := newScheduledVMI(t, st, "keep")
	gone := newScheduledVMI(t, st, "gone")
	renewed := newScheduledVMI(t, st, "renewed")
	for _, n := range []string{"keep", "gone", "renewed"} {
		eventuallyPhase(t, st, n, virtkit.Running)
	}
	keepRunningSince := eventuallyPhase(t, st, "keep", virtkit.Running).Status.PhaseTransitionTimestamps
	stop()

	// While the agent is down: one VMI is deleted (its finalizer keeps it
	// until the agent returns), one is re-created under the same name with a
	// new uid (the old domain is stale), one new VMI is scheduled, and an
	// unknown domain appears on the host.
	require.NoError(t, st.Delete(ctx, gone, store.DeleteOptions{}))
	fresh, _ := getVMI(t, st, "renewed")
	fresh.Finalizers = nil
	require.NoError(t, st.Update(ctx, fresh))
	require.NoError(t, st.Delete(ctx, fresh, store.DeleteOptions{}))
	_, found := getVMI(t, st, "renewed")
	require.False(t, found)
	renewed2 := newScheduledVMI(t, st, "renewed")
	require.NotEqual(t, renewed.UID, renewed2.UID)
	newScheduledVMI(t, st, "added")
	strayXML, err := hv.XML(ctx, "default_keep")
	require.NoError(t, err)
	var stray libvirtxml.Domain
	require.NoError(t, stray.Unmarshal(strayXML))
	stray.Name, stray.UUID = "default_stray", "6b2e1c7e-0000-4000-8000-000000000001"
	strayXML, err = stray.Marshal()
	require.NoError(t, err)
	_, err = hv.Define(ctx, strayXML)
	require.NoError(t, err)
	require.NoError(t, hv.Start(ctx, "default_stray", hypervisor.StartOptions{}))
	_ = keep

	runAgent(t, st, hv, nil)
	eventuallyPhase(t, st, "added", virtkit.Running)
	r2 := eventuallyPhase(t, st, "renewed", virtkit.Running)
	require.Equal(t, renewed2.UID, r2.UID)
	require.Eventually(t, func() bool {
		_, found := getVMI(t, st, "gone")
		return !found
	}, 10*time.Second, 10*time.Millisecond, "the deleted VMI is released")

	// The stray is removed by its own reconcile, which may come after the
	// VMIs' on a loaded machine.
	var doms map[string]hypervisor.DomainInfo
	require.Eventually(t, func() bool {
		doms = domainNames(t, hv)
		return len(doms) == 3
	}, 10*time.Second, 10*time.Millisecond, "exactly one domain per live VMI")
	for _, n := range []string{"default_keep", "default_renewed", "default_added"} {
		require.Contains(t, doms, n)
		require.True(t, doms[n].State.IsActive(), n)
	}
	// The adopted guest was not restarted: its Running transition is the
	// one from before the restart.
	k, _ := getVMI(t, st, "keep")
	require.Equal(t, keepRunningSince, k.Status.PhaseTransitionTimestamps)
}

// hangingHypervisor blocks every call about one domain until its context
// ends, and can fail Define for a while.
type hangingHypervisor struct {
	hypervisor.Hypervisor
	stuck       string
	failDefines atomic.Int32
}

func (h *hangingHypervisor) Info(ctx context.Context, name string) (hypervisor.DomainInfo, error) {
	if name == h.stuck {
		<-ctx.Done()
		return hypervisor.DomainInfo{}, ctx.Err()
	}
	return h.Hypervisor.Info(ctx, name)
}

func (h *hangingHypervisor) Define(ctx context.Context, xml string) (hypervisor.DomainID, error) {
	if h.failDefines.Add(-1) >= 0 {
		return hypervisor.DomainID{}, hypervisor.WrapDomain("define", "", hypervisor.ErrConnection)
	}
	return h.Hypervisor.Define(ctx, xml)
}

func TestAgentSurvivesAHangingAndFailingHypervisor(t *testing.T) {
	st := store.NewMemory()
	hv := &hangingHypervisor{Hypervisor: sim.New(sim.Options{Name: nodeName}), stuck: "default_stuck"}
	hv.failDefines.Store(3)
	runAgent(t, st, hv, func(o *node.Options) {
		o.ReconcileTimeout = 200 * time.Millisecond
		o.Workers = 1 // the stuck reconcile must not starve the others
	})
	newScheduledVMI(t, st, "stuck")
	newScheduledVMI(t, st, "fine")
	// Three failed defines are retried with backoff, the stuck domain
	// times out each time, and the healthy VMI still comes up.
	eventuallyPhase(t, st, "fine", virtkit.Running)
	stuck, _ := getVMI(t, st, "stuck")
	require.Equal(t, virtkit.Scheduled, stuck.Status.Phase)
	require.LessOrEqual(t, hv.failDefines.Load(), int32(0))
}

func TestAgentPausesAndResumesOnRequest(t *testing.T) {
	st, hv := store.NewMemory(), sim.New(sim.Options{Name: nodeName})
	runAgent(t, st, hv, nil)
	newScheduledVMI(t, st, "p")
	eventuallyPhase(t, st, "p", virtkit.Running)
	setAnnotation := func(v string) {
		require.Eventually(t, func() bool {
			vmi, _ := getVMI(t, st, "p")
			if vmi.Annotations == nil {
				vmi.Annotations = map[string]string{}
			}
			vmi.Annotations["virtkit.io/pause-request"] = v
			return st.Update(context.Background(), vmi) == nil
		}, 5*time.Second, 10*time.Millisecond)
	}
	setAnnotation("true")
	require.Eventually(t, func() bool {
		vmi, _ := getVMI(t, st, "p")
		return virtkit.HasCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstancePaused, virtkit.ConditionTrue, virtkit.PausedByUserReason)
	}, 5*time.Second, 10*time.Millisecond)
	info, err := hv.Info(context.Background(), "default_p")
	require.NoError(t, err)
	require.Equal(t, hypervisor.StatePaused, info.State)

	setAnnotation("false")
	require.Eventually(t, func() bool {
		vmi, _ := getVMI(t, st, "p")
		return vmi.IsReady() && !vmi.IsPaused()
	}, 5*time.Second, 10*time.Millisecond)
}
