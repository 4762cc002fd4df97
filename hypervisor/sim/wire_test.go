package sim_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

// tcpPair is a source host and a target host joined only by a migration
// listener on loopback, as two node processes are.
func tcpPair(t *testing.T, src sim.Options) (*sim.Host, *sim.Host, *sim.MigrationListener) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	src.Name = "tcp-src"
	a := sim.New(src)
	b := sim.New(sim.Options{Name: "tcp-dst"})
	l, err := sim.ListenMigration(ctx, b, "tcp://127.0.0.1:0", sim.ListenOptions{})
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- l.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-served)
	})
	return a, b, l
}

func runningDomain(t *testing.T, h *sim.Host, name string, memory uint64) {
	t.Helper()
	ctx := context.Background()
	_, err := h.Define(ctx, sizedDomainXML(name, memory, 1))
	require.NoError(t, err)
	require.NoError(t, h.Start(ctx, name, hypervisor.StartOptions{}))
}

func TestTCPMigrationMovesTheGuest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	src, dst, l := tcpPair(t, sim.Options{})
	const name, memory = "tcp-guest", 64 << 20
	runningDomain(t, src, name, memory)
	require.NoError(t, src.SetWorkload(name, sim.Workload{DirtyRate: 8 << 20, WorkingSet: 16 << 20}))
	srcInfo, err := src.Info(ctx, name)
	require.NoError(t, err)

	job, err := src.StartMigration(ctx, name, hypervisor.MigrationParams{DestinationURI: l.URI(), Persist: true})
	require.NoError(t, err)
	res, err := job.Result(ctx)
	require.NoError(t, err)
	require.True(t, res.Succeeded, "reason %q", res.Reason)

	got, err := dst.Info(ctx, name)
	require.NoError(t, err)
	assert.Equal(t, hypervisor.StateRunning, got.State)
	assert.Equal(t, srcInfo.UUID, got.UUID, "the domain keeps its UUID")
	gone, err := src.Info(ctx, name)
	require.NoError(t, err)
	assert.Equal(t, hypervisor.StateShutoff, gone.State, "the source copy is shut off")
	// Every byte the model sent crossed the socket: at least the guest's
	// memory (whole pages, so a page more at most per pass).
	assert.GreaterOrEqual(t, l.ReceivedBytes(), uint64(memory))
	assert.Equal(t, uint64(1), l.Completed())
	processed := res.Stats.MemoryProcessed.Value
	// The downtime includes the real switchover round trip on the socket.
	downtime, ok := res.Stats.Downtime.Get()
	assert.True(t, ok)
	assert.Greater(t, downtime, 30*time.Millisecond, "SwitchoverCost plus the real round trip")
	assert.InDelta(t, float64(processed), float64(l.ReceivedBytes()), float64(res.Stats.MemoryIteration.Value+2)*4096)
}

func TestTCPMigrationTargetRefuses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	src, dst, l := tcpPair(t, sim.Options{})
	runningDomain(t, src, "clash", 64<<20)
	runningDomain(t, dst, "clash", 64<<20) // already running on the target
	_, err := src.StartMigration(ctx, "clash", hypervisor.MigrationParams{DestinationURI: l.URI()})
	require.ErrorIs(t, err, hypervisor.ErrExists)
	info, err := src.Info(ctx, "clash")
	require.NoError(t, err)
	assert.Equal(t, hypervisor.StateRunning, info.State, "the source keeps running")
}

func TestTCPMigrationTargetLost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A slow modelled link keeps the job in pre-copy long enough.
	src, dst, l := tcpPair(t, sim.Options{MigrationLink: sim.Link{Bandwidth: 16 << 20}})
	runningDomain(t, src, "lost", 256<<20)
	job, err := src.StartMigration(ctx, "lost", hypervisor.MigrationParams{DestinationURI: l.URI()})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		info, err := dst.Info(ctx, "lost")
		return err == nil && info.State == hypervisor.StatePaused
	}, 10*time.Second, 10*time.Millisecond, "the paused incoming copy appears on the target")
	require.NoError(t, dst.Destroy(ctx, "lost"))
	res, err := job.Result(ctx)
	require.ErrorIs(t, err, hypervisor.ErrMigrationFailed)
	assert.False(t, res.Succeeded)
	assert.Contains(t, res.Reason, "went away on the target")
	info, err := src.Info(ctx, "lost")
	require.NoError(t, err)
	assert.Equal(t, hypervisor.StateRunning, info.State, "the source keeps the guest")
}

func TestTCPMigrationHonoursContextAndAddresses(t *testing.T) {
	src, _, _ := tcpPair(t, sim.Options{})
	runningDomain(t, src, "ctx", 64<<20)
	// A listener that accepts and never answers: the caller's ctx ends the hello.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			defer c.Close()
			_, _ = c.Read(make([]byte, 1))
			time.Sleep(5 * time.Second)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = src.StartMigration(ctx, "ctx", hypervisor.MigrationParams{DestinationURI: "tcp://" + ln.Addr().String()})
	require.Error(t, err)
	assert.Less(t, time.Since(start), 4*time.Second, "the hello waits no longer than ctx")

	for _, tc := range []struct {
		uri     string
		wantErr error
	}{
		{"tls://127.0.0.1:1", hypervisor.ErrNotSupported},
		{"tcp://127.0.0.1", hypervisor.ErrInvalidArgument},
		{"tcp://127.0.0.1:1/path", hypervisor.ErrInvalidArgument},
	} {
		_, err := src.StartMigration(context.Background(), "ctx", hypervisor.MigrationParams{DestinationURI: tc.uri})
		assert.ErrorIs(t, err, tc.wantErr, tc.uri)
	}
	_, err = sim.ListenMigration(context.Background(), src, "tls://127.0.0.1:0", sim.ListenOptions{})
	assert.ErrorIs(t, err, hypervisor.ErrNotSupported)
}

// TestTCPMigrationListenerRejectsBadFrames sends the listener frames a
// source never would: an oversized length, an unknown type, a hello that
// is not JSON. Each is refused without creating a domain.
func TestTCPMigrationListenerRejectsBadFrames(t *testing.T) {
	_, dst, l := tcpPair(t, sim.Options{})
	frame := func(typ byte, n uint32, body []byte) []byte {
		b := make([]byte, 5, 5+len(body))
		b[0] = typ
		binary.BigEndian.PutUint32(b[1:], n)
		return append(b, body...)
	}
	for name, raw := range map[string][]byte{
		"oversized hello": frame(1, 1<<30, nil),
		"unknown type":    frame(200, 0, nil),
		"not JSON":        frame(1, 3, []byte("{{{")),
		"pages first":     frame(3, 4, []byte{0, 0, 0, 1}),
		"bad XML":         frame(1, 26, []byte(`{"version":1,"xml":"<dom"}`)),
	} {
		t.Run(name, func(t *testing.T) {
			c, err := net.Dial("tcp", l.Addr().String())
			require.NoError(t, err)
			defer c.Close()
			_, err = c.Write(raw)
			require.NoError(t, err)
			require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
			// The listener answers with a ready that carries an error, or
			// closes the connection; either way the read ends.
			hdr := make([]byte, 5)
			_, _ = c.Read(hdr)
			doms, err := dst.List(context.Background())
			require.NoError(t, err)
			assert.Empty(t, doms)
		})
	}
}

func TestTCPMigrationPostCopy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A guest dirtying faster than the link never converges in pre-copy;
	// post-copy moves it.
	src, dst, l := tcpPair(t, sim.Options{MigrationLink: sim.Link{Bandwidth: 64 << 20}})
	runningDomain(t, src, "pc", 128<<20)
	require.NoError(t, src.SetWorkload("pc", sim.Workload{DirtyRate: 256 << 20, WorkingSet: 64 << 20}))
	job, err := src.StartMigration(ctx, "pc", hypervisor.MigrationParams{DestinationURI: l.URI(), PostCopy: true})
	require.NoError(t, err)
	time.Sleep(300 * time.Millisecond) // the first pass is under way
	require.NoError(t, job.StartPostCopy(ctx))
	res, err := job.Result(ctx)
	require.NoError(t, err)
	require.True(t, res.Succeeded, res.Reason)
	assert.Equal(t, hypervisor.ModePostCopy, res.Mode)
	info, err := dst.Info(ctx, "pc")
	require.NoError(t, err)
	assert.Equal(t, hypervisor.StateRunning, info.State)
}

func TestTCPMigrationTargetProcessGone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	src := sim.New(sim.Options{Name: "gone-src", MigrationLink: sim.Link{Bandwidth: 16 << 20}})
	dst := sim.New(sim.Options{Name: "gone-dst"})
	lctx, stop := context.WithCancel(ctx)
	l, err := sim.ListenMigration(lctx, dst, "127.0.0.1:0", sim.ListenOptions{})
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- l.Serve(lctx) }()
	runningDomain(t, src, "gone", 256<<20)
	job, err := src.StartMigration(ctx, "gone", hypervisor.MigrationParams{DestinationURI: l.URI()})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return l.ReceivedBytes() > 0 }, 10*time.Second, 10*time.Millisecond)
	stop() // the target process goes away mid-migration
	require.NoError(t, <-served)
	res, err := job.Result(ctx)
	require.ErrorIs(t, err, hypervisor.ErrMigrationFailed)
	assert.Contains(t, res.Reason, "migration stream")
	info, err := src.Info(ctx, "gone")
	require.NoError(t, err)
	assert.Equal(t, hypervisor.StateRunning, info.State, "the source keeps the guest")
	_, err = dst.Info(ctx, "gone")
	assert.ErrorIs(t, err, hypervisor.ErrNotFound, "the target dropped its incoming copy")
}

// BenchmarkTCPMigration moves an idle 256 MiB guest between two hosts
// joined only by a loopback migration listener, on the real clock with an
// unbounded modelled link, so the socket sets the pace: socket-MB/s is
// the bytes that crossed it per second of migration, downtime-ms the
// pause including the real switchover round trip.
func BenchmarkTCPMigration(b *testing.B) {
	ctx := context.Background()
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	link := sim.Link{Bandwidth: 1 << 40}
	var bytes uint64
	var took, down time.Duration
	for i := 0; b.Loop(); i++ {
		src := sim.New(sim.Options{Name: "bench-src", MigrationLink: link})
		dst := sim.New(sim.Options{Name: "bench-dst"})
		l, err := sim.ListenMigration(lctx, dst, "127.0.0.1:0", sim.ListenOptions{})
		if err != nil {
			b.Fatal(err)
		}
		go func() { _ = l.Serve(lctx) }()
		name := fmt.Sprintf("bench-%d", i)
		if _, err := src.Define(ctx, sizedDomainXML(name, 256<<20, 1)); err != nil {
			b.Fatal(err)
		}
		if err := src.Start(ctx, name, hypervisor.StartOptions{}); err != nil {
			b.Fatal(err)
		}
		job, err := src.StartMigration(ctx, name, hypervisor.MigrationParams{DestinationURI: l.URI()})
		if err != nil {
			b.Fatal(err)
		}
		res, err := job.Result(ctx)
		if err != nil || !res.Succeeded {
			b.Fatal(err, res.Reason)
		}
		bytes += l.ReceivedBytes()
		took += res.Ended.Sub(res.Started)
		down += res.Stats.Downtime.Value
		_ = l.Close()
	}
	b.ReportMetric(float64(bytes)/1e6/took.Seconds(), "socket-MB/s")
	b.ReportMetric(float64(down.Milliseconds())/float64(b.N), "downtime-ms")
}
