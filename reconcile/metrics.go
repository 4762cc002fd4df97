package reconcile

import (
	"math"
	"sync/atomic"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// latencyBuckets are the upper bounds, in seconds, of the histograms in
// [Stats]. They span 1 µs to about 1 min, enough for a queue wait and a
// reconcile alike.
var latencyBuckets = [...]float64{
	0.000001, 0.00001, 0.0001, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
}

// LatencyBuckets returns a copy of the bucket upper bounds used by every
// [Histogram] in [Stats], in seconds.
func LatencyBuckets() []float64 {
	out := make([]float64, len(latencyBuckets))
	copy(out, latencyBuckets[:])
	return out
}

// Histogram is a cumulative histogram snapshot, shaped so a Prometheus
// collector can turn it into a const histogram directly.
type Histogram struct {
	Count uint64
	Sum   float64 // seconds
	// Buckets[i] counts observations <= LatencyBuckets()[i] (cumulative).
	Buckets []uint64
}

// Stats is a point-in-time snapshot of one controller's numbers. The metrics
// package reads it at scrape time; the controller package itself knows
// nothing about Prometheus.
type Stats struct {
	// Name is Options.Name: the label value for every number below.
	Name string

	// Work queue (the same quantities as client-go's workqueue metrics).
	QueueDepth                     int64
	QueueAdds                      uint64
	QueueRetries                   uint64
	QueueWait                      Histogram // time an item waited in the queue
	WorkDuration                   Histogram // time from Get to Done
	UnfinishedWorkSeconds          float64
	LongestRunningProcessorSeconds float64

	// Reconciles.
	Reconciles      uint64 // every call, whatever the outcome
	ReconcileErrors uint64 // retried errors (panics included)
	TerminalErrors  uint64
	Requeues        uint64 // results with RequeueAfter > 0
	ReconcileTime   Histogram
	ActiveWorkers   int64

	// Watches.
	Relists uint64 // lists after start, resync or expiry
}

// StatsSource is what a metrics collector needs from a runner; a
// [Controller] is one, and so is anything else that keeps a work queue.
type StatsSource interface {
	Stats() Stats
}

var _ StatsSource = (*Controller)(nil)

// histogram is a lock-free cumulative histogram over latencyBuckets.
type histogram struct {
	count   atomic.Uint64
	sumBits atomic.Uint64
	buckets [len(latencyBuckets)]atomic.Uint64
}

func (h *histogram) Observe(seconds float64) {
	for i, ub := range latencyBuckets {
		if seconds <= ub {
			h.buckets[i].Add(1)
		}
	}
	h.count.Add(1)
	for {
		old := h.sumBits.Load()
		if h.sumBits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+seconds)) {
			return
		}
	}
}

func (h *histogram) snapshot() Histogram {
	out := Histogram{
		Count:   h.count.Load(),
		Sum:     math.Float64frombits(h.sumBits.Load()),
		Buckets: make([]uint64, len(latencyBuckets)),
	}
	for i := range h.buckets {
		out.Buckets[i] = h.buckets[i].Load()
	}
	return out
}

type counter struct{ n atomic.Uint64 }

func (c *counter) Inc() { c.n.Add(1) }

type gauge struct{ n atomic.Int64 }

func (g *gauge) Inc() { g.n.Add(1) }
func (g *gauge) Dec() { g.n.Add(-1) }

type floatGauge struct{ bits atomic.Uint64 }

func (g *floatGauge) Set(v float64) { g.bits.Store(math.Float64bits(v)) }
func (g *floatGauge) get() float64  { return math.Float64frombits(g.bits.Load()) }

// stats collects one controller's numbers in memory. It is also the
// workqueue.MetricsProvider for that controller's queue, so the queue's own
// instrumentation lands here instead of in a global registry.
type stats struct {
	name string

	depth         gauge
	adds          counter
	retries       counter
	queueWait     histogram
	workDuration  histogram
	unfinished    floatGauge
	longest       floatGauge
	reconciles    counter
	errs          counter
	terminal      counter
	requeues      counter
	reconcileTime histogram
	active        gauge
	relists       counter
}

var _ workqueue.MetricsProvider = (*stats)(nil)

func (s *stats) NewDepthMetric(string) workqueue.GaugeMetric       { return &s.depth }
func (s *stats) NewAddsMetric(string) workqueue.CounterMetric      { return &s.adds }
func (s *stats) NewLatencyMetric(string) workqueue.HistogramMetric { return &s.queueWait }
func (s *stats) NewRetriesMetric(string) workqueue.CounterMetric   { return &s.retries }
func (s *stats) NewWorkDurationMetric(string) workqueue.HistogramMetric {
	return &s.workDuration
}
func (s *stats) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return &s.unfinished
}
func (s *stats) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return &s.longest
}

func (s *stats) observeReconcile(d time.Duration) { s.reconcileTime.Observe(d.Seconds()) }

func (s *stats) snapshot() Stats {
	return Stats{
		Name:                           s.name,
		QueueDepth:                     s.depth.n.Load(),
		QueueAdds:                      s.adds.n.Load(),
		QueueRetries:                   s.retries.n.Load(),
		QueueWait:                      s.queueWait.snapshot(),
		WorkDuration:                   s.workDuration.snapshot(),
		UnfinishedWorkSeconds:          s.unfinished.get(),
		LongestRunningProcessorSeconds: s.longest.get(),
		Reconciles:                     s.reconciles.n.Load(),
		ReconcileErrors:                s.errs.n.Load(),
		TerminalErrors:                 s.terminal.n.Load(),
		Requeues:                       s.requeues.n.Load(),
		ReconcileTime:                  s.reconcileTime.snapshot(),
		ActiveWorkers:                  s.active.n.Load(),
		Relists:                        s.relists.n.Load(),
	}
}
