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
	// onStart sees the hosts before the migration starts.
	onStart func(src, dst *sim.Host)
	// host is the base of both hosts' options (name and clock are set).
	host sim.Options
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
	src, dst := hostPairWith(t, clock, sc.link, sc.host)
	if sc.onStart != nil {
		sc.onStart(src, dst)
	}
	evCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := src.Events(evCtx)
	require.NoError(t, err)

	startDomain(t, src, sc.memory, sc.workload)
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

func hostPair(t *testing.T, clock sim.Clock, link sim.Link) (src, dst *sim.Host) {
	t.Helper()
	return hostPairWith(t, clock, link, sim.Options{})
}

func hostPairWith(t *testing.T, clock sim.Clock, link sim.Link, base sim.Options) (src, dst *sim.Host) {
	t.Helper()
	so, do := base, base
	so.Name, so.Clock = "src", clock
	do.Name, do.Clock = "dst", clock
	src = sim.New(so)
	dst = sim.New(do)
	require.NoError(t, sim.NewNetwork().Connect(src, dst, link))
	return src, dst
}

// startDomain defines and starts vmName on h with memory bytes of RAM.
func startDomain(t *testing.T, h *sim.Host, memory uint64, w sim.Workload) {
	t.Helper()
	ctx := context.Background()
	_, err := h.Define(ctx, sizedDomainXML(vmName, memory, 2))
	require.NoError(t, err)
	require.NoError(t, h.Start(ctx, vmName, hypervisor.StartOptions{}))
	require.NoError(t, h.SetWorkload(vmName, w))
}
