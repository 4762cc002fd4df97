//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package libvirt_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	lv "libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/hypervisortest"
	"github.com/virtkit/virtkit/hypervisor/libvirt"
	"github.com/virtkit/virtkit/hypervisor/libvirt/libvirttest"
)

const (
	realBoot  = 60 * time.Second
	realAgent = 60 * time.Second
	// The dirtier's rate in these tests: far below the local link (~150
	// MiB/s under TCG), so pre-copy converges, far above an idle guest.
	dirtyMiBs = 16
	dirtyMiB  = 48
)

// openReal connects to uri for the test and closes it at cleanup.
func openReal(t testing.TB, uri string) *libvirt.Hypervisor {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	h, err := libvirt.New(ctx, libvirt.Options{URI: uri})
	require.NoError(t, err, "connect %s (hack/realstack/libvirtd.sh start)", uri)
	t.Cleanup(func() { _ = h.Close() })
	return h
}

type realStack struct {
	guest libvirttest.Guest
	src   *libvirt.Hypervisor
	peer  *libvirt.Hypervisor
}

func newRealStack(t testing.TB) realStack {
	t.Helper()
	g := libvirttest.RequireStack(t)
	return realStack{guest: g, src: openReal(t, libvirttest.SourceURI), peer: openReal(t, libvirttest.PeerURI)}
}

// The conformance suite compares the dirtying guest with an "idle" reading
// it takes right after start, while the kernel still boots and writes up to
// ~50 MiB/s. Its guests are 256 MiB so the dirtier can work a 128 MiB set
// at 96 MiB/s, well above that; 128 MiB guests have ~60 MiB to spare.
const (
	suiteGuestMiB  = 256
	suiteDirtyMiBs = 96
	suiteDirtyMiB  = 128
)

func TestConformanceRealStack(t *testing.T) {
	hypervisortest.Run(t, func(t *testing.T) hypervisortest.Target {
		rs := newRealStack(t)
		return hypervisortest.Target{
			Hypervisor: rs.src,
			DomainXML: func(name string) string {
				return rs.guest.DomainXML(name, libvirttest.GuestOptions{MemoryMiB: suiteGuestMiB})
			},
			BootTimeout:  realBoot,
			AgentTimeout: realAgent,
			Peer:         rs.peer,
			PeerURI:      libvirttest.PeerURI,
			MigrateURI:   libvirttest.MigrateURI(t),
			DirtyMemory:  libvirttest.DirtyMemory(rs.src, realAgent, suiteDirtyMiBs, suiteDirtyMiB),
		}
	})
}

// removeEverywhere destroys and undefines name on every host, ignoring
// errors (leftovers of an earlier run, cleanup of this one).
func removeEverywhere(name string, hs ...hypervisor.Hypervisor) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, h := range hs {
		_ = h.Destroy(ctx, name)
		_ = h.Undefine(ctx, name)
	}
}

// boot defines and starts a guest on rs.src and waits for its agent.
func (rs realStack) boot(t testing.TB, name string, opts libvirttest.GuestOptions) {
	t.Helper()
	removeEverywhere(name, rs.src, rs.peer)
	t.Cleanup(func() { removeEverywhere(name, rs.src, rs.peer) })
	ctx, cancel := context.WithTimeout(context.Background(), realBoot+realAgent)
	defer cancel()
	_, err := rs.src.Define(ctx, rs.guest.DomainXML(name, opts))
	require.NoError(t, err)
	require.NoError(t, rs.src.Start(ctx, name, hypervisor.StartOptions{}))
	require.NoError(t, libvirttest.WaitAgent(ctx, rs.src, name))
}

// TestRealDirtyRatePlausible checks page sampling against the dirtier's
// configured rate. Page sampling hashes 512 pages per GiB (64 pages of a
// 128 MiB guest), so the bounds are wide; they still fail when the
// measurement or the dirtier breaks (0, or off by an order of magnitude).
func TestRealDirtyRatePlausible(t *testing.T) {
	rs := newRealStack(t)
	idleName, busyName := "vkt-real-dirty-idle", "vkt-real-dirty-busy"
	rs.boot(t, idleName, libvirttest.GuestOptions{})
	rs.boot(t, busyName, libvirttest.GuestOptions{DirtyMiBPerSec: dirtyMiBs, DirtyMiB: dirtyMiB})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	idle, err := rs.src.MeasureDirtyRate(ctx, idleName, time.Second)
	require.NoError(t, err)
	busy, err := rs.src.MeasureDirtyRate(ctx, busyName, time.Second)
	require.NoError(t, err)
	t.Logf("page sampling: idle %d MiB/s, dirtier at %d MiB/s measures %d MiB/s",
		idle.BytesPerSecond>>20, dirtyMiBs, busy.BytesPerSecond>>20)
	assert.Equal(t, "page-sampling", busy.Method)
	assert.Equal(t, time.Second, busy.Period)
	assert.Greater(t, busy.BytesPerSecond, idle.BytesPerSecond)
	assert.GreaterOrEqual(t, busy.BytesPerSecond, uint64(dirtyMiBs<<20)/4, "far below the configured rate")
	assert.LessOrEqual(t, busy.BytesPerSecond, uint64(dirtyMiBs<<20)*4, "far above the configured rate")

	st, err := rs.src.Stats(ctx, busyName)
	require.NoError(t, err)
	assert.Equal(t, hypervisor.Some(busy.BytesPerSecond), st.DirtyRate, "Stats reports the last calculation")
	assert.True(t, st.CPUTime.Valid, "CPU time of a real guest")
	assert.True(t, st.Memory.BalloonCurrent.Valid, "balloon of a real guest")
	assert.Equal(t, uint64(128<<20), st.Memory.BalloonMaximum.Value, "balloon maximum in bytes")
	require.NotEmpty(t, st.VCPUs)
	assert.True(t, st.VCPUs[0].Time.Valid, "vCPU time")
}

// migrate runs one migration of a booted guest to the peer and checks
// everything around it: events on both hosts, final stats, the guest agent
// answering on the peer.
func (rs realStack) migrate(t testing.TB, name string, params hypervisor.MigrationParams) hypervisor.MigrationResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srcEvents, err := rs.src.Events(ctx)
	require.NoError(t, err)
	peerEvents, err := rs.peer.Events(ctx)
	require.NoError(t, err)

	params.DestinationURI = libvirttest.PeerURI
	params.MigrateURI = libvirttest.MigrateURI(t)
	params.Persist = true
	job, err := rs.src.StartMigration(ctx, name, params)
	require.NoError(t, err)
	res, err := job.Result(ctx)
	require.NoError(t, err)
	require.True(t, res.Succeeded)

	st := res.Stats
	assert.Equal(t, hypervisor.JobCompleted, st.Type)
	assert.True(t, st.Downtime.Valid, "actual downtime of a completed job")
	assert.True(t, st.Elapsed.Valid && st.Elapsed.Value > 0, "elapsed")
	assert.Greater(t, st.MemoryProcessed.Or(0), uint64(1<<20), "memory moved")
	assert.InDelta(t, float64(128<<20), float64(st.MemoryTotal.Or(0)), float64(16<<20), "memory total ~ guest size")

	// Source: the job completed and the domain left by migration; peer:
	// it arrived by migration.
	awaitEvent(t, srcEvents, func(ev hypervisor.Event) bool {
		return ev.Domain == name && ev.Kind == hypervisor.EventLifecycle &&
			ev.State == hypervisor.StateShutoff && ev.Reason == hypervisor.ReasonMigrated
	}, "source Shutoff/Migrated")
	awaitEvent(t, peerEvents, func(ev hypervisor.Event) bool {
		return ev.Domain == name && ev.Kind == hypervisor.EventLifecycle &&
			ev.State == hypervisor.StateRunning && ev.Reason == hypervisor.ReasonMigrated
	}, "peer Running/Migrated")

	// The real qemu-ga inside the guest answers on the new host (libvirt
	// reconnects the agent channel after the switchover).
	require.NoError(t, libvirttest.WaitAgent(ctx, rs.peer, name))
	reply, err := rs.peer.AgentCommand(ctx, name, `{"execute":"guest-get-osinfo"}`)
	require.NoError(t, err)
	assert.Contains(t, reply, "virtkit-tiny")
	return res
}

func awaitEvent(t testing.TB, events <-chan hypervisor.Event, match func(hypervisor.Event) bool, what string) hypervisor.Event {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-events:
			require.True(t, ok, "events closed before %s", what)
			if match(ev) {
				return ev
			}
		case <-timeout:
			t.Fatalf("no event %s within 30s", what)
		}
	}
}

func TestRealMigrationIdle(t *testing.T) {
	rs := newRealStack(t)
	name := "vkt-real-migrate-idle"
	rs.boot(t, name, libvirttest.GuestOptions{})
	res := rs.migrate(t, name, hypervisor.MigrationParams{DowntimeLimit: 500 * time.Millisecond})
	t.Logf("idle 128 MiB guest: total %v, downtime %v, %d MiB sent",
		res.Ended.Sub(res.Started).Round(time.Millisecond), res.Stats.Downtime.Value, res.Stats.DataProcessed.Value>>20)
	assert.Equal(t, hypervisor.ModePreCopy, res.Mode)
}

func TestRealMigrationDirtying(t *testing.T) {
	rs := newRealStack(t)
	name := "vkt-real-migrate-dirty"
	rs.boot(t, name, libvirttest.GuestOptions{DirtyMiBPerSec: dirtyMiBs, DirtyMiB: dirtyMiB})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srcEvents, err := rs.src.Events(ctx)
	require.NoError(t, err)
	res := rs.migrate(t, name, hypervisor.MigrationParams{AutoConverge: true, AutoConvergeInitial: 20, AutoConvergeIncrement: 10})
	t.Logf("dirtying (%d MiB/s) 128 MiB guest: total %v, downtime %v, %d MiB sent, %d iterations",
		dirtyMiBs, res.Ended.Sub(res.Started).Round(time.Millisecond), res.Stats.Downtime.Value,
		res.Stats.DataProcessed.Value>>20, res.Stats.MemoryIteration.Value)
	// A dirtying guest needs more than one pass; libvirt says so.
	ev := awaitEvent(t, srcEvents, func(ev hypervisor.Event) bool {
		return ev.Domain == name && ev.Kind == hypervisor.EventMigrationIteration
	}, "migration iteration")
	assert.Positive(t, ev.Iteration)
	assert.Greater(t, res.Stats.DataProcessed.Or(0), res.Stats.MemoryTotal.Or(0)/2)
}

// TestRealMigrationAbortSlowed: a migration slowed to 1 MiB/s is aborted;
// the guest keeps running on the source and its agent still answers there.
func TestRealMigrationAbortSlowed(t *testing.T) {
	rs := newRealStack(t)
	name := "vkt-real-migrate-abort"
	rs.boot(t, name, libvirttest.GuestOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	job, err := rs.src.StartMigration(ctx, name, hypervisor.MigrationParams{
		DestinationURI: libvirttest.PeerURI, MigrateURI: libvirttest.MigrateURI(t), Bandwidth: 1 << 20,
		DowntimeLimit: 123 * time.Millisecond,
	})
	require.NoError(t, err)
	require.NoError(t, job.SetMaxSpeed(ctx, 1<<20))
	// What libvirt itself reports for the job's knobs.
	downtime, speed := migrationKnobs(t, name)
	assert.Equal(t, uint64(123), downtime, "DowntimeLimit reached QEMU (ms)")
	assert.Equal(t, uint64(1), speed, "Bandwidth/SetMaxSpeed reached QEMU (MiB/s)")
	require.NoError(t, job.SetMaxDowntime(ctx, 77*time.Millisecond))
	downtime, _ = migrationKnobs(t, name)
	assert.Equal(t, uint64(77), downtime, "SetMaxDowntime reached QEMU (ms)")
	require.Eventually(t, func() bool {
		st, err := job.Stats(ctx)
		return err == nil && st.Type == hypervisor.JobUnbounded && st.DataProcessed.Or(0) > 0
	}, 30*time.Second, 100*time.Millisecond, "the slowed job moves data")
	st, err := job.Stats(ctx)
	require.NoError(t, err)
	assert.Positive(t, st.MemoryRemaining.Or(0))
	assert.LessOrEqual(t, st.MemoryBps.Or(0), uint64(4<<20), "transfer rate honours the 1 MiB/s cap")

	require.NoError(t, job.Abort(ctx))
	res, err := job.Result(ctx)
	require.ErrorIs(t, err, hypervisor.ErrMigrationAborted)
	assert.True(t, res.Aborted)
	info, err := rs.src.Info(ctx, name)
	require.NoError(t, err)
	assert.Equal(t, hypervisor.StateRunning, info.State)
	_, err = rs.src.AgentCommand(ctx, name, `{"execute":"guest-ping"}`)
	require.NoError(t, err, "the agent still answers on the source")
	_, err = rs.peer.Info(ctx, name)
	require.ErrorIs(t, err, hypervisor.ErrNotFound, "nothing left on the peer")
	require.ErrorIs(t, job.Abort(ctx), hypervisor.ErrNoJob)
}

// migrationKnobs reads the downtime limit and bandwidth libvirt holds for
// the domain's migration, with the bindings directly.
func migrationKnobs(t *testing.T, name string) (downtimeMs, speedMiBs uint64) {
	t.Helper()
	c, err := lv.NewConnect(libvirttest.SourceURI)
	require.NoError(t, err)
	defer c.Close()
	d, err := c.LookupDomainByName(name)
	require.NoError(t, err)
	defer d.Free()
	downtimeMs, err = d.MigrateGetMaxDowntime(0)
	require.NoError(t, err)
	speedMiBs, err = d.MigrateGetMaxSpeed(0)
	require.NoError(t, err)
	return downtimeMs, speedMiBs
}

// TestRealPostCopy switches a slowed migration to post-copy. QEMU runs as
// libvirt-qemu, so userfaultfd must be allowed for unprivileged users; the
// sysctl is set for this test only and restored.
func TestRealPostCopy(t *testing.T) {
	rs := newRealStack(t)
	const sysctl = "/proc/sys/vm/unprivileged_userfaultfd"
	old, err := os.ReadFile(sysctl)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(sysctl, []byte("1"), 0o644))
	t.Cleanup(func() { _ = os.WriteFile(sysctl, old, 0o644) })

	name := "vkt-real-postcopy"
	rs.boot(t, name, libvirttest.GuestOptions{DirtyMiBPerSec: dirtyMiBs, DirtyMiB: dirtyMiB})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	job, err := rs.src.StartMigration(ctx, name, hypervisor.MigrationParams{
		DestinationURI: libvirttest.PeerURI, MigrateURI: libvirttest.MigrateURI(t),
		Bandwidth: 8 << 20, PostCopy: true, Persist: true,
	})
	require.NoError(t, err)
	t0 := time.Now()
	require.Eventually(t, func() bool {
		st, err := job.Stats(ctx)
		return err == nil && st.DataProcessed.Or(0) > 4<<20
	}, 30*time.Second, 100*time.Millisecond, "pre-copy moves data first")
	t.Logf("pre-copy moved 4 MiB after %v", time.Since(t0))
	require.NoError(t, job.StartPostCopy(ctx))
	t.Logf("post-copy started after %v", time.Since(t0))
	// Bandwidth capped post-copy too; lift that cap.
	require.NoError(t, job.SetMaxSpeed(ctx, 0))
	require.ErrorIs(t, job.Abort(ctx), hypervisor.ErrInvalidState, "no abort in post-copy")

	res, err := job.Result(ctx)
	t.Logf("result after %v", time.Since(t0))
	require.NoError(t, err)
	assert.True(t, res.Succeeded)
	assert.Equal(t, hypervisor.ModePostCopy, res.Mode)
	t.Logf("post-copy: total %v, downtime %v, postcopy requests %v",
		res.Ended.Sub(res.Started).Round(time.Millisecond), res.Stats.Downtime, res.Stats.PostcopyRequests)
	// The guest's page faults served from the source (libvirt's
	// memory_postcopy_requests), what the engine reports as post-copy's
	// cost: the dirtier writes its 48 MiB while most of it is still on
	// the source.
	faults, ok := res.Stats.PostcopyRequests.Get()
	require.True(t, ok, "libvirt counts the post-copy page requests")
	assert.Positive(t, faults, "the dirtying guest faulted on pages still on the source")
	info, err := rs.peer.Info(ctx, name)
	require.NoError(t, err)
	assert.Equal(t, hypervisor.StateRunning, info.State)
	require.NoError(t, libvirttest.WaitAgent(ctx, rs.peer, name))
}

// TestRealErrors checks the translation of codes only a real daemon gives,
// and the guest agent's connect event.
func TestRealErrors(t *testing.T) {
	rs := newRealStack(t)
	name := "vkt-real-errors"
	removeEverywhere(name, rs.src, rs.peer)
	t.Cleanup(func() { removeEverywhere(name, rs.src, rs.peer) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	events, err := rs.src.Events(ctx)
	require.NoError(t, err)
	_, err = rs.src.Define(ctx, rs.guest.DomainXML(name, libvirttest.GuestOptions{}))
	require.NoError(t, err)
	require.NoError(t, rs.src.Start(ctx, name, hypervisor.StartOptions{}))
	// Before the guest's agent connects: code 86.
	_, err = rs.src.AgentCommand(ctx, name, `{"execute":"guest-ping"}`)
	if err != nil {
		require.ErrorIs(t, err, hypervisor.ErrAgentUnavailable)
	}
	require.NoError(t, libvirttest.WaitAgent(ctx, rs.src, name))
	// The agent's connection came as an event and shows in Info.
	awaitEvent(t, events, func(ev hypervisor.Event) bool {
		return ev.Domain == name && ev.Kind == hypervisor.EventAgentLifecycle && ev.Agent == hypervisor.ChannelConnected
	}, "agent connected")
	info, err := rs.src.Info(ctx, name)
	require.NoError(t, err)
	assert.Equal(t, hypervisor.ChannelConnected, info.Agent)
	// An unknown agent command is the guest's error, passed on.
	_, err = rs.src.AgentCommand(ctx, name, `{"execute":"no-such-command-virtkit"}`)
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "no-such-command-virtkit"), "%v", err)
	var de *hypervisor.DomainError
	require.True(t, errors.As(err, &de))
}

// TestRealHungAgentDoesNotStall: a guest whose agent stops answering makes
// AgentCommand wait for its deadline; calls about other things on the same
// Hypervisor must go on meanwhile (libvirt's client holds up calls that
// share a connection with a waiting one; the adapter's pool avoids that).
func TestRealHungAgentDoesNotStall(t *testing.T) {
	rs := newRealStack(t)
	name := "vkt-real-hung-agent"
	rs.boot(t, name, libvirttest.GuestOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Freeze qemu-ga inside the guest for 15 s: the channel stays open,
	// nothing answers.
	_, err := rs.src.AgentCommand(ctx, name, `{"execute":"guest-exec","arguments":{"path":"/bin/sh",`+
		`"arg":["-c","sleep 1; kill -STOP $(pidof qemu-ga); sleep 15; kill -CONT $(pidof qemu-ga)"]}}`)
	require.NoError(t, err)
	time.Sleep(2 * time.Second)

	agentDone := make(chan error, 1)
	go func() {
		actx, acancel := context.WithTimeout(ctx, 8*time.Second)
		defer acancel()
		_, err := rs.src.AgentCommand(actx, name, `{"execute":"guest-ping"}`)
		agentDone <- err
	}()
	time.Sleep(500 * time.Millisecond)
	for i := range 3 {
		ictx, icancel := context.WithTimeout(ctx, 2*time.Second)
		info, err := rs.src.Info(ictx, name)
		icancel()
		require.NoError(t, err, "Info #%d while the agent call waits", i)
		assert.Equal(t, hypervisor.StateRunning, info.State)
		_, err = rs.src.Stats(ctx, name)
		require.NoError(t, err)
	}
	select {
	case err := <-agentDone:
		t.Fatalf("the agent call returned before its deadline: %v", err)
	default:
	}
	err = <-agentDone
	require.Error(t, err, "a frozen agent does not answer")
	assert.True(t, errors.Is(err, context.DeadlineExceeded) || errors.Is(err, hypervisor.ErrAgentUnavailable), "%v", err)
}

// BenchmarkRealBootToAgent: define + start of the tiny TCG guest until its
// qemu-ga answers guest-ping.
func BenchmarkRealBootToAgent(b *testing.B) {
	rs := newRealStack(b)
	for i := 0; b.Loop(); i++ {
		name := fmt.Sprintf("vkt-bench-boot-%d", i)
		rs.boot(b, name, libvirttest.GuestOptions{})
		b.StopTimer()
		removeEverywhere(name, rs.src, rs.peer)
		b.StartTimer()
	}
}

// benchmarkMigration migrates a freshly booted 128 MiB guest per iteration
// and reports libvirt's own figures: total job time and downtime.
func benchmarkMigration(b *testing.B, opts libvirttest.GuestOptions) {
	rs := newRealStack(b)
	var total, downtime time.Duration
	n := 0
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		name := fmt.Sprintf("vkt-bench-migrate-%d", i)
		rs.boot(b, name, opts)
		if opts.DirtyMiBPerSec > 0 {
			time.Sleep(2 * time.Second) // let the dirtier reach its rate
		}
		b.StartTimer()
		res := rs.migrate(b, name, hypervisor.MigrationParams{})
		b.StopTimer()
		total += res.Stats.Elapsed.Value
		downtime += res.Stats.Downtime.Value
		n++
		removeEverywhere(name, rs.src, rs.peer)
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(n), "job-ms/op")
	b.ReportMetric(float64(downtime.Milliseconds())/float64(n), "downtime-ms/op")
}

func BenchmarkRealMigrationIdle(b *testing.B) { benchmarkMigration(b, libvirttest.GuestOptions{}) }

func BenchmarkRealMigrationDirtying(b *testing.B) {
	benchmarkMigration(b, libvirttest.GuestOptions{DirtyMiBPerSec: dirtyMiBs, DirtyMiB: dirtyMiB})
}
