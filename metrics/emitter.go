package metrics

import (
	"cmp"
	"log/slog"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// emitter writes the series of one object (a VMI, a migration): the base
// labels node, namespace and name, the family's extra labels, and the
// object's own labels.
//
// prometheus.NewConstMetric allocates and sorts every label pair of every
// series; with ~40 series per VMI that dominated a scrape. The emitter
// builds the object's label pairs once, sorted, and shares them between
// its series, merging in only each family's few extra labels. Shared pairs
// are never modified: a dto.Metric's labels are immutable by contract.
type emitter struct {
	ch    chan<- prometheus.Metric
	descs *descCache
	log   *slog.Logger
	vl    *vmiLabels
	// shared are the object's label pairs, sorted by name.
	shared []*dto.LabelPair

	// text, when set, receives the series in the text format instead of
	// ch (a streamed scrape); prefix is the object's escaped label set.
	text   *textStream
	prefix string
}

func (e *emitter) reset(vl *vmiLabels, node, namespace, name string) {
	e.vl = vl
	if e.text != nil {
		e.prefix = labelPrefix(vl, node, namespace, name)
		return
	}
	shared := make([]*dto.LabelPair, 0, 3+len(vl.names))
	for i, n := range vl.names {
		shared = append(shared, labelPair(n, vl.values[i]))
	}
	shared = append(shared, labelPair("node", node), labelPair("namespace", namespace), labelPair("name", name))
	slices.SortFunc(shared, byName)
	e.shared = shared
}

func byName(a, b *dto.LabelPair) int { return cmp.Compare(a.GetName(), b.GetName()) }

// labelPair makes a pair whose value is valid UTF-8 (guest-reported names
// may not be; the registry would reject the whole scrape).
func labelPair(name, value string) *dto.LabelPair {
	if !utf8.ValidString(value) {
		value = strings.ToValidUTF8(value, "\uFFFD")
	}
	return &dto.LabelPair{Name: &name, Value: &value}
}

func (e *emitter) value(f *family, v float64, extra ...string) {
	names := f.labels[len(vmiBase):]
	if len(names) != len(extra) {
		e.log.Error("metrics: wrong number of label values", "metric", f.name, "want", len(names), "got", len(extra))
		return
	}
	if e.text != nil {
		e.text.sample(f, e.prefix, names, extra, v)
		return
	}
	// Families without VMI labels are emitted with an empty vmiLabels.
	d := e.descs.get(f, e.vl)
	labels := e.shared
	if len(extra) > 0 {
		add := make([]*dto.LabelPair, len(extra))
		for i, n := range names {
			add[i] = labelPair(n, extra[i])
		}
		slices.SortFunc(add, byName)
		labels = mergeSorted(e.shared, add)
	}
	e.ch <- &sharedMetric{desc: d, typ: f.typ, value: v, labels: labels}
}

// plain writes a series of a family without VMI labels.
func (e *emitter) plain(f *family, v float64, values ...string) {
	if e.text != nil {
		e.text.plain(f, v, values...)
		return
	}
	send(e.ch, f, v, values...)
}

// mergeSorted merges two label lists sorted by name into a new one.
func mergeSorted(a, b []*dto.LabelPair) []*dto.LabelPair {
	out := make([]*dto.LabelPair, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if a[i].GetName() <= b[j].GetName() {
			out = append(out, a[i])
			i++
		} else {
			out = append(out, b[j])
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// sharedMetric is a counter or gauge sample whose label pairs are sorted
// and may be shared with other samples of the same object.
type sharedMetric struct {
	desc   *prometheus.Desc
	typ    prometheus.ValueType
	value  float64
	labels []*dto.LabelPair
}

func (m *sharedMetric) Desc() *prometheus.Desc { return m.desc }

func (m *sharedMetric) Write(out *dto.Metric) error {
	out.Label = m.labels
	v := m.value
	if m.typ == prometheus.CounterValue {
		out.Counter = &dto.Counter{Value: &v}
	} else {
		out.Gauge = &dto.Gauge{Value: &v}
	}
	return nil
}

// validValues replaces invalid UTF-8 in label values (status fields copied
// from guests may hold any bytes), so building a series cannot fail on it.
func validValues(values []string) []string {
	for i, v := range values {
		if !utf8.ValidString(v) {
			values[i] = strings.ToValidUTF8(v, "\uFFFD")
		}
	}
	return values
}

// send writes one counter or gauge of a family without VMI labels. It never
// panics: a series that cannot be built is left out.
func send(ch chan<- prometheus.Metric, f *family, v float64, values ...string) {
	m, err := prometheus.NewConstMetric(f.plain, f.typ, v, validValues(values)...)
	if err == nil {
		ch <- m
	}
}

// constHist builds a const histogram, or nil when it cannot be built.
func constHist(f *family, count uint64, sum float64, buckets map[float64]uint64, values ...string) prometheus.Metric {
	m, err := prometheus.NewConstHistogram(f.plain, count, sum, buckets, validValues(values)...)
	if err != nil {
		return nil
	}
	return m
}

func sendMetric(ch chan<- prometheus.Metric, m prometheus.Metric) {
	if m != nil {
		ch <- m
	}
}
