package sim_test

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

func virtualHost(t *testing.T, opts sim.Options) (*sim.Host, *sim.VirtualClock) {
	t.Helper()
	clock := sim.NewVirtualClock(epoch)
	opts.Clock = clock
	return sim.New(opts), clock
}

func TestDefineReadsTheXML(t *testing.T) {
	ctx := context.Background()
	h, _ := virtualHost(t, sim.Options{})
	xml := `<domain type='kvm'>
  <name>ns_vm</name><uuid>8e1c7a3e-1d7c-4c57-9d53-2f4f0f7a1b00</uuid>
  <memory unit='GiB'>4</memory><currentMemory unit='GiB'>2</currentMemory>
  <vcpu current='2'>4</vcpu>
  <devices>
    <disk type='file' device='disk'><source file='/img/root.qcow2'/><target dev='vda' bus='virtio'/></disk>
    <disk type='block' device='disk'><source dev='/dev/sdb'/><target dev='vdb' bus='virtio'/></disk>
    <interface type='bridge'><mac address='52:54:00:aa:bb:cc'/><source bridge='br0'/></interface>
  </devices>
</domain>`
	id, err := h.Define(ctx, xml)
	require.NoError(t, err)
	assert.Equal(t, hypervisor.DomainID{Name: "ns_vm", UUID: "8e1c7a3e-1d7c-4c57-9d53-2f4f0f7a1b00"}, id)
	info, err := h.Info(ctx, "ns_vm")
	require.NoError(t, err)
	assert.Equal(t, 2, info.VCPUs)
	assert.Equal(t, uint64(4*GiB), info.MaxMemoryBytes)
	assert.Equal(t, uint64(2*GiB), info.MemoryBytes)
	assert.Equal(t, hypervisor.ChannelUnknown, info.Agent, "no agent channel")

	require.NoError(t, h.Start(ctx, "ns_vm", hypervisor.StartOptions{}))
	st, err := h.Stats(ctx, "ns_vm")
	require.NoError(t, err)
	require.Len(t, st.Block, 2)
	assert.Equal(t, "vda", st.Block[0].Name)
	assert.Equal(t, "/img/root.qcow2", st.Block[0].Path)
	assert.Equal(t, "/dev/sdb", st.Block[1].Path)
	require.Len(t, st.Net, 1)
	assert.Equal(t, "vnet0", st.Net[0].Name)
	require.Len(t, st.VCPUs, 2)

	live, err := h.XML(ctx, "ns_vm")
	require.NoError(t, err)
	assert.Contains(t, live, `<target dev="vnet0"`)
	assert.Contains(t, live, `<memory unit="KiB">4194304</memory>`)
	assert.Regexp(t, `<domain type="kvm" id="\d+">`, live)

	_, err = h.AgentCommand(ctx, "ns_vm", `{"execute":"guest-ping"}`)
	require.ErrorIs(t, err, hypervisor.ErrAgentUnavailable, "no channel, no agent")
}

func TestDefineRejects(t *testing.T) {
	ctx := context.Background()
	h, _ := virtualHost(t, sim.Options{})
	for _, tc := range []struct{ name, xml, field string }{
		{"bad uuid", `<domain><name>a</name><uuid>nope</uuid><memory>1024</memory></domain>`, "domain.uuid"},
		{"no memory", `<domain><name>a</name></domain>`, "domain.memory"},
		{"bad unit", `<domain><name>a</name><memory unit='parsecs'>1</memory></domain>`, "domain.memory.unit"},
		{"current above max", `<domain><name>a</name><memory>1024</memory><currentMemory>2048</currentMemory></domain>`, "domain.currentMemory"},
		{"slash in name", `<domain><name>a/b</name><memory>1024</memory></domain>`, "domain.name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.Define(ctx, tc.xml)
			require.ErrorIs(t, err, hypervisor.ErrInvalidArgument)
			assert.Contains(t, err.Error(), tc.field)
		})
	}
	_, err := h.Define(ctx, `<domain><name>a</name><uuid>8e1c7a3e-1d7c-4c57-9d53-2f4f0f7a1b00</uuid><memory>1024</memory></domain>`)
	require.NoError(t, err)
	_, err = h.Define(ctx, `<domain><name>b</name><uuid>8e1c7a3e-1d7c-4c57-9d53-2f4f0f7a1b00</uuid><memory>1024</memory></domain>`)
	require.ErrorIs(t, err, hypervisor.ErrExists, "a UUID names one domain")
	// Once a is gone its UUID is free again; redefining a keeps it.
	_, err = h.Define(ctx, `<domain><name>a</name><uuid>8e1c7a3e-1d7c-4c57-9d53-2f4f0f7a1b00</uuid><memory>2048</memory></domain>`)
	require.NoError(t, err, "redefining a domain under its own UUID")
	require.NoError(t, h.Undefine(ctx, "a"))
	_, err = h.Define(ctx, `<domain><name>b</name><uuid>8e1c7a3e-1d7c-4c57-9d53-2f4f0f7a1b00</uuid><memory>1024</memory></domain>`)
	require.NoError(t, err, "the UUID of an undefined domain is free")
	_, err = h.Define(ctx, `<domain><name>a</name><uuid>8e1c7a3e-1d7c-4c57-9d53-2f4f0f7a1b00</uuid><memory>1024</memory></domain>`)
	require.ErrorIs(t, err, hypervisor.ErrExists, "now b holds it")
}

func TestWorkloadValidation(t *testing.T) {
	h, _ := virtualHost(t, sim.Options{})
	startDomain(t, h, GiB, sim.Workload{})
	for _, tc := range []struct {
		name  string
		w     sim.Workload
		field string
	}{
		{"working set above memory", sim.Workload{WorkingSet: 2 * GiB}, "workload.workingSet"},
		{"unknown shape", sim.Workload{Shape: "zigzag"}, "workload.shape"},
		{"sensitivity above 1", sim.Workload{ThrottleSensitivity: 1.5}, "workload.throttleSensitivity"},
		{"bursty without period", sim.Workload{Shape: sim.ShapeBursty, BurstFactor: 2}, "workload.burstPeriod"},
		{"burst factor below 1", sim.Workload{Shape: sim.ShapeBursty, BurstPeriod: time.Second, BurstFactor: 0.5}, "workload.burstFactor"},
		{"NaN cpu", sim.Workload{CPUUsage: math.NaN()}, "workload.cpuUsage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := h.SetWorkload(vmName, tc.w)
			require.ErrorIs(t, err, hypervisor.ErrInvalidArgument)
			assert.Contains(t, err.Error(), tc.field)
		})
	}
	require.ErrorIs(t, h.SetWorkload("missing", sim.Workload{}), hypervisor.ErrNotFound)
}

func TestDirtyRateModel(t *testing.T) {
	for _, tc := range []struct {
		name   string
		w      sim.Workload
		period time.Duration
		want   float64 // bytes/s
	}{
		{"idle", sim.Workload{}, time.Second, 0},
		{"uniform in a large set reads the raw rate", sim.Workload{DirtyRate: 100 * MB, WorkingSet: 4 * GiB}, time.Second, 100 * MB * (1 - 100.0*MB/(2*4*GiB))},
		{"uniform saturates a small set", sim.Workload{DirtyRate: 100 * MB, WorkingSet: 64 * MiB}, time.Second, 64 * MiB * (1 - math.Exp(-100.0*MB/(64*MiB)))},
		{"sequential caps at the set over the period", sim.Workload{DirtyRate: 200 * MB, WorkingSet: 100 * MiB, Shape: sim.ShapeSequential}, 2 * time.Second, 100 * MiB / 2},
		{"sequential below the set", sim.Workload{DirtyRate: 50 * MB, WorkingSet: 2 * GiB, Shape: sim.ShapeSequential}, time.Second, 50 * MB},
		{"hotset: 90 % into a saturated hot tenth", sim.Workload{DirtyRate: 100 * MB, WorkingSet: GiB, Shape: sim.ShapeHotset}, time.Second,
			0.1*GiB*(1-math.Exp(-90.0*MB/(0.1*GiB))) + 0.9*GiB*(1-math.Exp(-10.0*MB/(0.9*GiB)))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			h, clock := virtualHost(t, sim.Options{})
			startDomain(t, h, 4*GiB, tc.w)
			calc, err := h.StartDirtyRateCalc(ctx, vmName, tc.period)
			require.NoError(t, err)
			clock.Advance(tc.period)
			rate, err := calc.Result(ctx)
			require.NoError(t, err)
			assert.Equal(t, "model", rate.Method)
			assert.Equal(t, tc.period, rate.Period)
			assert.InDelta(t, tc.want, float64(rate.BytesPerSecond), tc.want*0.01+1)
			st, err := h.Stats(ctx, vmName)
			require.NoError(t, err)
			assert.Equal(t, hypervisor.Some(rate.BytesPerSecond), st.DirtyRate, "Stats keeps the last calculation")
		})
	}
}

func TestBurstyDirtyRate(t *testing.T) {
	ctx := context.Background()
	h, clock := virtualHost(t, sim.Options{})
	w := sim.Workload{DirtyRate: 10 * MB, WorkingSet: 2 * GiB, Shape: sim.ShapeBursty, BurstPeriod: 10 * time.Second, BurstDuration: 2 * time.Second, BurstFactor: 5}
	startDomain(t, h, 4*GiB, w)
	measure := func() uint64 {
		calc, err := h.StartDirtyRateCalc(ctx, vmName, time.Second)
		require.NoError(t, err)
		clock.Advance(time.Second)
		r, err := calc.Result(ctx)
		require.NoError(t, err)
		return r.BytesPerSecond
	}
	inBurst := measure() // 0-1 s: bursting
	clock.Advance(3 * time.Second)
	quiet := measure() // 4-5 s
	assert.InEpsilon(t, 50*MB, float64(inBurst), 0.02)
	assert.InEpsilon(t, 10*MB, float64(quiet), 0.02)
}

func TestMeasureDirtyRateBlocksOnTheVirtualClock(t *testing.T) {
	ctx := context.Background()
	h, clock := virtualHost(t, sim.Options{})
	startDomain(t, h, GiB, sim.Workload{DirtyRate: 10 * MB, WorkingSet: GiB})
	got := make(chan hypervisor.DirtyRate, 1)
	go func() {
		r, err := h.MeasureDirtyRate(ctx, vmName, time.Second)
		assert.NoError(t, err)
		got <- r
	}()
	require.Eventually(t, func() bool {
		select {
		case r := <-got:
			got <- r
			return true
		default:
			clock.Advance(100 * time.Millisecond)
			return false
		}
	}, 10*time.Second, time.Millisecond)
	r := <-got
	assert.Positive(t, r.BytesPerSecond)

	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	_, err := h.MeasureDirtyRate(cctx, vmName, time.Second)
	require.ErrorIs(t, err, context.DeadlineExceeded, "nobody advances the clock")
}

func TestAgentFollowsTheGuest(t *testing.T) {
	ctx := context.Background()
	h, clock := virtualHost(t, sim.Options{BootDelay: 2 * time.Second})
	events, err := h.Events(ctx)
	require.NoError(t, err)
	_, err = h.Define(ctx, sizedDomainXML(vmName, GiB, 2))
	require.NoError(t, err)
	require.NoError(t, h.Start(ctx, vmName, hypervisor.StartOptions{}))

	ping := func() error { _, err := h.AgentCommand(ctx, vmName, `{"execute":"guest-ping"}`); return err }
	require.ErrorIs(t, ping(), hypervisor.ErrAgentUnavailable, "still booting")
	clock.Advance(time.Second)
	require.NoError(t, h.Pause(ctx, vmName))
	clock.Advance(10 * time.Second) // paused: the boot does not progress
	require.NoError(t, h.Resume(ctx, vmName))
	clock.Advance(999 * time.Millisecond)
	require.ErrorIs(t, ping(), hypervisor.ErrAgentUnavailable, "one second of boot left")
	clock.Advance(time.Millisecond)
	require.NoError(t, ping())
	info, err := h.Info(ctx, vmName)
	require.NoError(t, err)
	assert.Equal(t, hypervisor.ChannelConnected, info.Agent)

	reply, err := h.AgentCommand(ctx, vmName, `{"execute":"guest-get-osinfo"}`)
	require.NoError(t, err)
	assert.Contains(t, reply, `"id":"fedora"`)
	reply, err = h.AgentCommand(ctx, vmName, `{"execute":"guest-get-host-name"}`)
	require.NoError(t, err)
	assert.JSONEq(t, `{"return":{"host-name":"vm"}}`, reply, "the VMI name of default_vm")
	reply, err = h.AgentCommand(ctx, vmName, `{"execute":"guest-get-time"}`)
	require.NoError(t, err)
	var tm struct{ Return int64 }
	require.NoError(t, json.Unmarshal([]byte(reply), &tm))
	assert.Equal(t, clock.Now().UnixNano(), tm.Return, "the guest's clock is the host's")

	require.NoError(t, h.Pause(ctx, vmName))
	require.ErrorIs(t, ping(), hypervisor.ErrAgentUnavailable, "paused")

	var agentEvents []hypervisor.ChannelState
	for len(events) > 0 {
		if ev := <-events; ev.Kind == hypervisor.EventAgentLifecycle {
			agentEvents = append(agentEvents, ev.Agent)
		}
	}
	assert.Equal(t, []hypervisor.ChannelState{hypervisor.ChannelConnected, hypervisor.ChannelDisconnected}, agentEvents)
}

func TestGuestShutdownThroughTheAgent(t *testing.T) {
	ctx := context.Background()
	h, clock := virtualHost(t, sim.Options{})
	startDomain(t, h, GiB, sim.Workload{})
	clock.Advance(time.Second)
	reply, err := h.AgentCommand(ctx, vmName, `{"execute":"guest-shutdown"}`)
	require.NoError(t, err)
	assert.Empty(t, reply, "guest-shutdown sends no reply")
	clock.Advance(time.Second)
	info, err := h.Info(ctx, vmName)
	require.NoError(t, err)
	assert.Equal(t, hypervisor.StateShutoff, info.State)
	assert.Equal(t, hypervisor.ReasonShutdown, info.Reason)
}

func TestGuestAgentConfig(t *testing.T) {
	ctx := context.Background()
	h, clock := virtualHost(t, sim.Options{})
	startDomain(t, h, GiB, sim.Workload{})
	clock.Advance(time.Second)
	agent, err := h.GuestAgent(vmName)
	require.NoError(t, err)
	require.NotNil(t, agent)
	reply, err := h.AgentCommand(ctx, vmName, `{"execute":"guest-info"}`)
	require.NoError(t, err)
	assert.Contains(t, reply, `"supported_commands"`)
}

func TestShutdownOfPausedGuestWaitsForResume(t *testing.T) {
	ctx := context.Background()
	h, clock := virtualHost(t, sim.Options{ShutdownDelay: time.Second})
	startDomain(t, h, GiB, sim.Workload{})
	require.NoError(t, h.Pause(ctx, vmName))
	done := make(chan error, 1)
	go func() { done <- h.Shutdown(ctx, vmName) }()
	require.Eventually(t, func() bool { clock.Advance(100 * time.Millisecond); return len(done) == 0 }, time.Second, time.Millisecond)
	clock.Advance(10 * time.Second)
	select {
	case err := <-done:
		t.Fatalf("a paused guest shut down: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	require.NoError(t, h.Resume(ctx, vmName))
	require.Eventually(t, func() bool {
		clock.Advance(100 * time.Millisecond)
		return len(done) == 1
	}, 5*time.Second, time.Millisecond)
	require.NoError(t, <-done)
	info, err := h.Info(ctx, vmName)
	require.NoError(t, err)
	assert.Equal(t, hypervisor.StateShutoff, info.State)
	assert.Equal(t, hypervisor.ReasonShutdown, info.Reason)
}

func TestStatsMove(t *testing.T) {
	ctx := context.Background()
	h, clock := virtualHost(t, sim.Options{})
	_, err := h.Define(ctx, testDomainXML(vmName))
	require.NoError(t, err)
	require.NoError(t, h.Start(ctx, vmName, hypervisor.StartOptions{}))
	require.NoError(t, h.SetWorkload(vmName, sim.Workload{CPUUsage: 0.5, NetRate: 1000, DiskRate: 8192}))
	a, err := h.Stats(ctx, vmName)
	require.NoError(t, err)
	clock.Advance(10 * time.Second)
	b, err := h.Stats(ctx, vmName)
	require.NoError(t, err)
	assert.Equal(t, 5*time.Second, b.CPUTime.Value-a.CPUTime.Value, "1 vCPU at 50 %% for 10 s")
	assert.Equal(t, uint64(10000), b.Net[0].RxBytes.Value-a.Net[0].RxBytes.Value)
	assert.Equal(t, uint64(81920), b.Block[0].ReadBytes.Value-a.Block[0].ReadBytes.Value)
	assert.Equal(t, uint64(128*MiB), b.Memory.BalloonCurrent.Value)
	assert.Equal(t, clock.Now(), b.Collected)

	require.NoError(t, h.Pause(ctx, vmName))
	clock.Advance(10 * time.Second)
	c, err := h.Stats(ctx, vmName)
	require.NoError(t, err)
	assert.Equal(t, b.CPUTime, c.CPUTime, "a paused guest uses no CPU")
}

func TestEventsDropTheOldestWhenFull(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	h, _ := virtualHost(t, sim.Options{EventBuffer: 2, BootDelay: -1})
	events, err := h.Events(ctx)
	require.NoError(t, err)
	// No agent channel: only lifecycle events.
	_, err = h.Define(ctx, `<domain><name>`+vmName+`</name><memory unit='GiB'>1</memory></domain>`)
	require.NoError(t, err)
	require.NoError(t, h.Start(ctx, vmName, hypervisor.StartOptions{}))
	require.NoError(t, h.Pause(ctx, vmName))
	require.NoError(t, h.Resume(ctx, vmName))
	require.NoError(t, h.Destroy(ctx, vmName))
	var got []hypervisor.StateReason
	for len(events) > 0 {
		if ev := <-events; ev.Kind == hypervisor.EventLifecycle {
			got = append(got, ev.Reason)
		}
	}
	assert.Equal(t, []hypervisor.StateReason{hypervisor.ReasonUnpaused, hypervisor.ReasonDestroyed}, got, "the newest two survive")
	cancel()
	require.Eventually(t, func() bool { _, ok := <-events; return !ok }, time.Second, time.Millisecond)
}

func TestVirtualClockOrder(t *testing.T) {
	clock := sim.NewVirtualClock(epoch)
	var order []string
	clock.AfterFunc(2*time.Second, func() { order = append(order, "b") })
	clock.AfterFunc(time.Second, func() {
		order = append(order, "a")
		clock.AfterFunc(time.Second, func() { order = append(order, "a2") }) // due with b, scheduled later
	})
	stopped := clock.AfterFunc(1500*time.Millisecond, func() { order = append(order, "never") })
	assert.True(t, stopped.Stop())
	assert.False(t, stopped.Stop())
	clock.Advance(1999 * time.Millisecond)
	assert.Equal(t, []string{"a"}, order)
	clock.Advance(time.Millisecond)
	assert.Equal(t, []string{"a", "b", "a2"}, order)
	assert.Equal(t, epoch.Add(2*time.Second), clock.Now())
	assert.Zero(t, clock.Pending())
}
