package cluster_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// simHost names the embedded host so that its Host method is promoted.
type simHost = sim.Host

// countingHost is a simulated host that records when ACPI shutdown
// requests came.
type countingHost struct {
	*simHost
	mu       sync.Mutex
	requests []time.Time
}

func (h *countingHost) RequestShutdown(ctx context.Context, name string) error {
	h.mu.Lock()
	h.requests = append(h.requests, h.Clock().Now())
	h.mu.Unlock()
	return h.simHost.RequestShutdown(ctx, name)
}

// presses returns how many requests came and the longest time between two
// of them (or from the last one to until).
func (h *countingHost) presses(until time.Time) (n int, longestGap time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, at := range h.requests {
		next := until
		if i+1 < len(h.requests) {
			next = h.requests[i+1]
		}
		longestGap = max(longestGap, next.Sub(at))
	}
	return len(h.requests), longestGap
}

// stopHarness is a one-node cluster on virtual time that records every
// phase each VMI passed through.
type stopHarness struct {
	t    *testing.T
	ctx  context.Context
	c    *cluster.Cluster
	host *countingHost

	mu     sync.Mutex
	phases map[types.UID][]virtkit.VirtualMachineInstancePhase
}

func newStopHarness(t *testing.T) *stopHarness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	clk := sim.NewVirtualClock(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))
	h := &stopHarness{t: t, ctx: ctx, phases: map[types.UID][]virtkit.VirtualMachineInstancePhase{}}
	c, err := cluster.New(cluster.Options{
		Clock: clk,
		Nodes: 1,
		NewHypervisor: func(name string) (hypervisor.Hypervisor, error) {
			h.host = &countingHost{simHost: sim.New(sim.Options{Name: name, Clock: clk})}
			return h.host, nil
		},
	})
	require.NoError(t, err)
	h.c = c
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	events, err := c.Store().Watch(ctx, &virtkit.VirtualMachineInstanceList{}, store.WatchOptions{ReadOnly: true})
	require.NoError(t, err)
	go func() {
		for ev := range events {
			vmi, ok := ev.Object.(*virtkit.VirtualMachineInstance)
			if !ok {
				continue
			}
			h.mu.Lock()
			seen := h.phases[vmi.UID]
			if p := vmi.Status.Phase; p != "" && (len(seen) == 0 || seen[len(seen)-1] != p) {
				h.phases[vmi.UID] = append(seen, p)
			}
			h.mu.Unlock()
		}
	}()
	require.NoError(t, c.Settle(ctx))
	return h
}

func (h *stopHarness) advance(d time.Duration) {
	h.t.Helper()
	require.NoError(h.t, h.c.Advance(h.ctx, d))
}

// lastPhase is the last phase the VMI with uid was seen in.
func (h *stopHarness) lastPhase(uid types.UID) virtkit.VirtualMachineInstancePhase {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := h.phases[uid]
	if len(seen) == 0 {
		return ""
	}
	return seen[len(seen)-1]
}

func (h *stopHarness) vmi(name string) *virtkit.VirtualMachineInstance {
	h.t.Helper()
	vmi := &virtkit.VirtualMachineInstance{}
	if err := h.c.Store().Get(h.ctx, store.Key{Namespace: "default", Name: name}, vmi); err != nil {
		require.ErrorIs(h.t, err, store.ErrNotFound)
		return nil
	}
	return vmi
}

// events returns the VMI events by reason (the last of each).
func (h *stopHarness) events(uid types.UID) map[string]virtkit.Event {
	h.t.Helper()
	var l virtkit.EventList
	require.NoError(h.t, h.c.Store().List(h.ctx, &l, store.ListOptions{Namespace: "default"}))
	out := map[string]virtkit.Event{}
	for _, e := range l.Items {
		if e.Regarding.UID == uid {
			out[e.Reason] = e
		}
	}
	return out
}

func vmiSpec(grace int64) virtkit.VirtualMachineInstanceSpec {
	mem := resource.MustParse("128Mi")
	return virtkit.VirtualMachineInstanceSpec{
		TerminationGracePeriodSeconds: &grace,
		Domain:                        virtkit.DomainSpec{Memory: &virtkit.Memory{Guest: &mem}},
	}
}

func graceVM(name string, grace int64) *virtkit.VirtualMachine {
	always := virtkit.RunStrategyAlways
	return &virtkit.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachine},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: virtkit.VirtualMachineSpec{
			RunStrategy: &always,
			Template:    &virtkit.VirtualMachineInstanceTemplateSpec{Spec: vmiSpec(grace)},
		},
	}
}

// A stop (or a delete) of a VMI with a 180 s grace period presses the ACPI
// power button, presses it again every 5 s while the guest runs on, and
// destroys the guest only when the grace period is over. A guest that
// powers off ends Succeeded; one destroyed after the grace period ends
// Failed, as in KubeVirt.
func TestStopIsGraceful(t *testing.T) {
	const grace = 180 * time.Second
	for _, tc := range []struct {
		name      string
		acpi      sim.ACPIBehaviour
		vm        bool          // a VM stopped with actions.Stop; else a VMI deleted
		off       time.Duration // when the VMI is gone after the stop
		wantPhase virtkit.VirtualMachineInstancePhase
	}{
		{name: "stop, guest powers off", acpi: sim.ACPIBehaviour{Delay: 12 * time.Second}, vm: true,
			off: 12 * time.Second, wantPhase: virtkit.Succeeded},
		{name: "stop, guest ignores ACPI", acpi: sim.ACPIBehaviour{Ignore: true}, vm: true,
			off: grace, wantPhase: virtkit.Failed},
		{name: "delete, guest powers off", acpi: sim.ACPIBehaviour{Delay: 12 * time.Second},
			off: 12 * time.Second, wantPhase: virtkit.Succeeded},
		{name: "delete, guest ignores ACPI", acpi: sim.ACPIBehaviour{Ignore: true},
			off: grace, wantPhase: virtkit.Failed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newStopHarness(t)
			const name = "testvm"
			h.host.SetACPIBehaviour(node.DomainName("default", name), tc.acpi)
			if tc.vm {
				require.NoError(t, h.c.Apply(h.ctx, graceVM(name, int64(grace/time.Second))))
			} else {
				require.NoError(t, h.c.Apply(h.ctx, &virtkit.VirtualMachineInstance{
					TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstance},
					ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
					Spec:       vmiSpec(int64(grace / time.Second)),
				}))
			}
			h.advance(time.Second)
			vmi := h.vmi(name)
			require.NotNil(t, vmi)
			require.Equal(t, virtkit.Running, vmi.Status.Phase)

			if tc.vm {
				require.NoError(t, actions.Stop(h.ctx, h.c.Store(), store.Key{Namespace: "default", Name: name}, actions.StopOptions{}))
			} else {
				require.NoError(t, h.c.Store().Delete(h.ctx, vmi, store.DeleteOptions{}))
			}
			require.NoError(t, h.c.Settle(h.ctx))
			ev := h.events(vmi.UID)
			require.Contains(t, ev, virtkit.EventReasonShuttingDown, "the guest was asked to shut down")
			assert.Equal(t, virtkit.EventTypeNormal, ev[virtkit.EventReasonShuttingDown].Type)
			stopAt := h.c.Clock().Now()
			n, _ := h.host.presses(stopAt)
			assert.Equal(t, 1, n, "one request at the start")

			h.advance(tc.off - time.Second)
			still := h.vmi(name)
			require.NotNil(t, still, "the guest still has %v of its grace period", time.Second)
			assert.Equal(t, vmi.UID, still.UID)
			assert.Equal(t, virtkit.Running, still.Status.Phase)
			assert.NotContains(t, h.events(vmi.UID), virtkit.EventReasonDeleted, "not destroyed yet")
			if tc.vm {
				vm := &virtkit.VirtualMachine{}
				require.NoError(t, h.c.Store().Get(h.ctx, store.Key{Namespace: "default", Name: name}, vm))
				assert.Equal(t, virtkit.VirtualMachineStatusStopping, vm.Status.PrintableStatus)
			}

			n, gap := h.host.presses(h.c.Clock().Now())
			assert.GreaterOrEqual(t, n, int((tc.off-time.Second)/(5*time.Second)), "asked again while running")
			assert.LessOrEqual(t, gap, 5*time.Second, "asked again at least every 5 s")
			h.advance(time.Second)
			assert.Nil(t, h.vmi(name), "stopped after %v", tc.off)
			assert.Equal(t, tc.wantPhase, h.lastPhase(vmi.UID))
			ev = h.events(vmi.UID)
			require.Contains(t, ev, virtkit.EventReasonStopped)
			if tc.wantPhase == virtkit.Succeeded {
				assert.Equal(t, virtkit.EventTypeNormal, ev[virtkit.EventReasonStopped].Type)
				assert.NotContains(t, ev, virtkit.EventReasonDeleted, "never destroyed")
			} else {
				assert.Equal(t, virtkit.EventTypeWarning, ev[virtkit.EventReasonStopped].Type)
				require.Contains(t, ev, virtkit.EventReasonDeleted, "destroyed after the grace period")
				assert.Contains(t, ev[virtkit.EventReasonDeleted].Note, "grace period of 3m0s over")
			}
		})
	}
}

// A forced stop (virtctl stop --force --grace-period=0) of a VM whose
// guest ignores ACPI destroys it at once instead of waiting out the rest
// of the grace period.
func TestForcedStopCutsGracePeriodShort(t *testing.T) {
	h := newStopHarness(t)
	const name = "testvm"
	key := store.Key{Namespace: "default", Name: name}
	h.host.SetACPIBehaviour(node.DomainName("default", name), sim.ACPIBehaviour{Ignore: true})
	require.NoError(t, h.c.Apply(h.ctx, graceVM(name, 180)))
	h.advance(time.Second)
	vmi := h.vmi(name)
	require.NotNil(t, vmi)

	require.NoError(t, actions.Stop(h.ctx, h.c.Store(), key, actions.StopOptions{}))
	h.advance(10 * time.Second)
	require.NotNil(t, h.vmi(name), "waiting for the guest")

	zero := int64(0)
	require.NoError(t, actions.Stop(h.ctx, h.c.Store(), key, actions.StopOptions{GracePeriod: &zero}))
	require.NoError(t, h.c.Settle(h.ctx))
	assert.Nil(t, h.vmi(name), "destroyed at once")
	assert.Equal(t, virtkit.Failed, h.lastPhase(vmi.UID))
	assert.Contains(t, h.events(vmi.UID)[virtkit.EventReasonDeleted].Note, "no grace period")
}

// A forced restart straight after a restart succeeds and cuts the first
// restart's graceful stop short: the old guest is destroyed after 1 s and
// the new VMI runs.
func TestForcedRestartAfterRestart(t *testing.T) {
	h := newStopHarness(t)
	const name = "testvm"
	key := store.Key{Namespace: "default", Name: name}
	h.host.SetACPIBehaviour(node.DomainName("default", name), sim.ACPIBehaviour{Delay: time.Minute})
	require.NoError(t, h.c.Apply(h.ctx, graceVM(name, 180)))
	h.advance(time.Second)
	old := h.vmi(name)
	require.NotNil(t, old)

	require.NoError(t, actions.Restart(h.ctx, h.c.Store(), key, actions.RestartOptions{}))
	require.NoError(t, h.c.Settle(h.ctx))
	require.Equal(t, old.UID, h.vmi(name).UID, "the old guest is shutting down")
	zero := int64(0)
	require.NoError(t, actions.Restart(h.ctx, h.c.Store(), key, actions.RestartOptions{GracePeriodSeconds: &zero}))
	h.advance(2 * time.Second)
	now := h.vmi(name)
	require.NotNil(t, now)
	assert.NotEqual(t, old.UID, now.UID, "restarted")
	assert.Equal(t, virtkit.Running, now.Status.Phase)
	assert.Equal(t, virtkit.Failed, h.lastPhase(old.UID), "the old guest was destroyed")
}
