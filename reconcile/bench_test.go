package reconcile

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkRunnerThroughput measures the work queue and worker pool alone:
// distinct keys through a reconciler that does nothing.
func BenchmarkRunnerThroughput(b *testing.B) {
	for _, workers := range []int{1, 4} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			var done sync.WaitGroup
			rec := ReconcilerFunc(func(context.Context, Request) (Result, error) {
				done.Done()
				return Result{}, nil
			})
			c, err := New(newFakeSource(), rec, Options{MaxConcurrentReconciles: workers}, thingWatch(nil))
			require.NoError(b, err)
			ctx, cancel := context.WithCancel(context.Background())
			stopped := make(chan struct{})
			go func() { _ = c.Start(ctx); close(stopped) }()
			i := 0
			start := time.Now()
			for b.Loop() {
				done.Add(1)
				c.Enqueue(Request{"ns", strconv.Itoa(i)})
				i++
			}
			done.Wait() // the rate counts until the last reconcile returned
			b.ReportMetric(float64(i)/time.Since(start).Seconds(), "reconciles/s")
			cancel()
			<-stopped
		})
	}
}
