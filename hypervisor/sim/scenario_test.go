package sim_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func sizedDomainXML(name string, memory uint64, vcpus int) string {
	return fmt.Sprintf(`<domain type='qemu'><name>%s</name><memory unit='KiB'>%d</memory><vcpu>%d</vcpu>
<devices><channel type='unix'><target type='virtio' name='org.qemu.guest_agent.0'/></channel></devices></domain>`, name, memory>>10, vcpus)
}

// scenario is one migration on a fresh pair of hosts on a virtual clock.
type scenario struct {
	memory   uint64
	link     sim.Link
	workload sim.Workload
	params   hypervisor.MigrationParams
	poll     time.Duration // default 400 ms
	limit    time.Duration // abort after this much simulated time
	// control runs after every poll; it may steer the job.
	control func(job hypervisor.MigrationJob, st hypervisor.JobStats)
}

type outcome struct {
	result   hypervisor.MigrationResult
	err      error
	polls    []hypervisor.JobStats
	src, dst *sim.Host
	clock    *sim.VirtualClock
	events   []hypervisor.Event
}

const vmName = "default_vm"

func runScenario(t *testing.T, sc scenario) outcome {
	t.Helper()
	ctx := context.Background()
	clock := sim.NewVirtualClock(epoch)
	src := sim.New(sim.Options{Name: "src", Clock: clock})
	dst := sim.New(sim.Options{Name: "dst", Clock: clock})
	net := sim.NewNetwork()
	require.NoError(t, net.Connect(src, dst, sc.link))
	evCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := src.Events(evCtx)
	require.NoError(t, err)

	_, err = src.Define(ctx, sizedDomainXML(vmName, sc.memory, 2))
	require.NoError(t, err)
	require.NoError(t, src.Start(ctx, vmName, hypervisor.StartOptions{}))
	require.NoError(t, src.SetWorkload(vmName, sc.workload))
	clock.Advance(time.Second)

	params := sc.params
	params.DestinationURI = "dst"
	job, err := src.StartMigration(ctx, vmName, params)
	require.NoError(t, err)
	poll := sc.poll
	if poll == 0 {
		poll = 400 * time.Millisecond
	}
	limit := sc.limit
	if limit == 0 {
		limit = time.Hour
	}
	out := outcome{src: src, dst: dst, clock: clock}
	for elapsed := time.Duration(0); ; elapsed += poll {
		select {
		case <-job.Done():
			out.result, out.err = job.Result(ctx)
			cancel()
			for ev := range events {
				out.events = append(out.events, ev)
			}
			return out
		default:
		}
		if elapsed >= limit {
			require.NoError(t, job.Abort(ctx))
			continue
		}
		clock.Advance(poll)
		st, err := job.Stats(ctx)
		require.NoError(t, err)
		out.polls = append(out.polls, st)
		if sc.control != nil && st.Type == hypervisor.JobUnbounded {
			sc.control(job, st)
		}
	}
}

func TestExplore(t *testing.T) {
	const GiB, MiB, MB = 1 << 30, 1 << 20, 1000 * 1000
	for name, sc := range map[string]scenario{
		"P1": {memory: 4 * GiB, link: sim.Link{Bandwidth: 1150 * MB}, workload: sim.Workload{DirtyRate: 5 * MB, WorkingSet: 64 * MiB, ThrottleSensitivity: 1}},
		"P2": {memory: 8 * GiB, link: sim.Link{Bandwidth: 115 * MB}, workload: sim.Workload{DirtyRate: 50 * MB, WorkingSet: 512 * MiB, ThrottleSensitivity: 1}},
		"P3": {memory: 8 * GiB, link: sim.Link{Bandwidth: 115 * MB}, workload: sim.Workload{DirtyRate: 150 * MB, WorkingSet: 2 * GiB, Shape: sim.ShapeSequential, ThrottleSensitivity: 1}, limit: 300 * time.Second},
		"P3ac": {memory: 8 * GiB, link: sim.Link{Bandwidth: 115 * MB}, workload: sim.Workload{DirtyRate: 150 * MB, WorkingSet: 2 * GiB, Shape: sim.ShapeSequential, ThrottleSensitivity: 1}, params: hypervisor.MigrationParams{AutoConverge: true}, limit: 1000 * time.Second},
		"P7ac": {memory: 8 * GiB, link: sim.Link{Bandwidth: 1150 * MB}, workload: sim.Workload{DirtyRate: 2000 * MB, WorkingSet: 4 * GiB, Shape: sim.ShapeSequential, ThrottleSensitivity: 1}, params: hypervisor.MigrationParams{AutoConverge: true}, limit: 1000 * time.Second},
	} {
		start := time.Now()
		out := runScenario(t, sc)
		r := out.result
		t.Logf("%s: ok=%v aborted=%v T=%v downtime=%v sent=%.1fGB iter=%d throttle=%d err=%v (wall %v)", name, r.Succeeded, r.Aborted,
			r.Ended.Sub(r.Started), r.Stats.Downtime.Value, float64(r.Stats.DataProcessed.Value)/1e9, r.Stats.MemoryIteration.Value, r.Stats.AutoConvergeThrottle.Value, out.err, time.Since(start))
	}
}
