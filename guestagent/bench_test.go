package guestagent_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/virtkit/virtkit/guestagent"
	"github.com/virtkit/virtkit/guestagent/qgaserver"
)

// benchRealCall measures one call per iteration against the real qemu-ga
// over its unix socket (one connection, synced once).
func benchRealCall(b *testing.B, call func(ctx context.Context, c *guestagent.Client) error) {
	benchRealCallUnit(b, "calls/s", call)
}

func benchRealCallUnit(b *testing.B, unit string, call func(ctx context.Context, c *guestagent.Client) error) {
	sock := startRealAgent(b)
	tr := guestagent.DialUnix(sock, guestagent.Options{})
	b.Cleanup(func() { _ = tr.Close() })
	c := guestagent.New(tr, guestagent.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := call(ctx, c); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	start := time.Now()
	n := 0
	for b.Loop() {
		if err := call(ctx, c); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), unit)
}

func BenchmarkRealAgentPing(b *testing.B) {
	benchRealCall(b, func(ctx context.Context, c *guestagent.Client) error { return c.Ping(ctx) })
}

func BenchmarkRealAgentInfo(b *testing.B) {
	benchRealCall(b, func(ctx context.Context, c *guestagent.Client) error { _, err := c.Info(ctx); return err })
}

func BenchmarkRealAgentOSInfo(b *testing.B) {
	benchRealCall(b, func(ctx context.Context, c *guestagent.Client) error { _, err := c.OSInfo(ctx); return err })
}

func BenchmarkRealAgentNetworkInterfaces(b *testing.B) {
	benchRealCall(b, func(ctx context.Context, c *guestagent.Client) error { _, err := c.NetworkInterfaces(ctx); return err })
}

func BenchmarkRealAgentFSInfo(b *testing.B) {
	benchRealCall(b, func(ctx context.Context, c *guestagent.Client) error { _, err := c.FSInfo(ctx); return err })
}

// BenchmarkRealAgentPollCycle: one full poll cycle (every worker once, nine
// agent calls) against the real qemu-ga.
func BenchmarkRealAgentPollCycle(b *testing.B) {
	benchRealCallUnit(b, "cycles/s", func(ctx context.Context, c *guestagent.Client) error {
		return guestagent.NewPoller(c, guestagent.PollerOptions{}).PollOnce(ctx)
	})
}

// benchPollFleet measures one poll cycle (every worker once: nine calls)
// for each of guests simulated guests, polled concurrently by up to
// parallel goroutines.
func benchPollFleet(b *testing.B, guests, parallel int, stream bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pollers := make([]*guestagent.Poller, guests)
	var transports []*guestagent.StreamTransport
	for i := range pollers {
		cfg := qgaserver.LinuxGuest(fmt.Sprintf("guest-%d", i), fmt.Sprintf("52:54:00:00:%02x:%02x", i/256, i%256), fmt.Sprintf("10.0.%d.%d", i/256, i%256+1))
		srv := qgaserver.New(cfg)
		var tr guestagent.Transport
		if stream {
			st := guestagent.NewStreamTransport(pipeDialer(ctx, srv), guestagent.Options{})
			transports = append(transports, st)
			tr = st
		} else {
			tr = guestagent.NewPassthroughTransport(passthrough{srv}, cfg.HostName, guestagent.Options{})
		}
		pollers[i] = guestagent.NewPoller(guestagent.New(tr, guestagent.Options{}), guestagent.PollerOptions{})
	}
	defer func() {
		for _, t := range transports {
			_ = t.Close()
		}
	}()
	cycle := func() {
		sem := make(chan struct{}, parallel)
		var wg sync.WaitGroup
		for _, p := range pollers {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				if err := p.PollOnce(ctx); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
	}
	cycle() // connect and sync every stream once
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		cycle()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(guests), "ns/guest")
}

func BenchmarkPollCycle1000GuestsStream(b *testing.B) { benchPollFleet(b, 1000, 64, true) }

func BenchmarkPollCycle1000GuestsPassthrough(b *testing.B) { benchPollFleet(b, 1000, 64, false) }
