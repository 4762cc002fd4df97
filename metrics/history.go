package metrics

import (
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
)

// phaseBuckets are the upper bounds, in seconds, of the phase-transition
// histograms (KubeVirt's spread: sub-second to an hour).
var phaseBuckets = []float64{0.5, 1, 2, 5, 10, 20, 30, 40, 50, 60, 90, 120, 150, 180, 240, 300, 480, 600, 900, 1200, 1800, 2400, 3600}

// cumulativeHistogram accumulates observations per label-value set, so a
// histogram derived from object status stays monotonic while objects come
// and go.
type cumulativeHistogram struct {
	f      *family
	series map[string]*histogramSeries
	keys   []string
}

type histogramSeries struct {
	labels []string
	count  uint64
	sum    float64
	// perBucket[i] counts observations in (bound[i-1], bound[i]].
	perBucket []uint64
}

func newCumulativeHistogram(f *family) *cumulativeHistogram {
	return &cumulativeHistogram{f: f, series: map[string]*histogramSeries{}}
}

func (h *cumulativeHistogram) observe(v float64, labels ...string) {
	key := strings.Join(labels, "\xff")
	s := h.series[key]
	if s == nil {
		s = &histogramSeries{labels: labels, perBucket: make([]uint64, len(phaseBuckets))}
		h.series[key] = s
		h.keys = append(h.keys, key)
		slices.Sort(h.keys)
	}
	s.count++
	s.sum += v
	if i, _ := slices.BinarySearch(phaseBuckets, v); i < len(phaseBuckets) {
		s.perBucket[i]++
	}
}

// metrics returns const histograms of everything observed so far.
func (h *cumulativeHistogram) metrics() []prometheus.Metric {
	out := make([]prometheus.Metric, 0, len(h.keys))
	for _, k := range h.keys {
		s := h.series[k]
		buckets := make(map[float64]uint64, len(phaseBuckets))
		var cum uint64
		for i, ub := range phaseBuckets {
			cum += s.perBucket[i]
			buckets[ub] = cum
		}
		if m := constHist(h.f, s.count, s.sum, buckets, s.labels...); m != nil {
			out = append(out, m)
		}
	}
	return out
}

// transitionLog remembers how many phase transitions of each object were
// already observed, so every transition is counted once.
type transitionLog struct {
	seen map[types.UID]int
}

// next returns the index of the first transition not yet observed and
// records that all n are now. Objects not marked in this round are
// forgotten by sweep.
func (l *transitionLog) next(uid types.UID, n int, alive map[types.UID]bool) int {
	if l.seen == nil {
		l.seen = map[types.UID]int{}
	}
	alive[uid] = true
	from := l.seen[uid]
	if from > n {
		// Status was rewritten with fewer entries: count what is new.
		from = n
	}
	l.seen[uid] = n
	return from
}

func (l *transitionLog) sweep(alive map[types.UID]bool) {
	for uid := range l.seen {
		if !alive[uid] {
			delete(l.seen, uid)
		}
	}
}
