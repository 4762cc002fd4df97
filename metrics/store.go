package metrics

import (
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/virtkit/virtkit/store"
)

// CorruptObjectSource lists the stored values a store could not decode;
// store.CorruptReporter (the etcd store) satisfies it. It must be cheap and
// not block.
type CorruptObjectSource interface {
	CorruptObjects() []store.CorruptError
}

var _ CorruptObjectSource = store.CorruptReporter(nil)

// maxKeyLabel bounds the key label: an etcd key can be far longer than a
// useful label value.
const maxKeyLabel = 256

// StoreCollector exports the store's corrupt values, one series per
// value, so an alert can name the key to repair:
//
//	virtkit_store_undecodable_objects{kind,key,reason} 1
//
// key is the backend's key (the etcd key: what `etcdctl del` takes),
// reason one of store's CorruptReason values (size, json, kind, key).
// A series disappears once the store has seen its key repaired.
type StoreCollector struct {
	src  CorruptObjectSource
	desc *prometheus.Desc
	log  func(msg string, args ...any)
}

// NewStoreCollector returns a collector over src.
func NewStoreCollector(src CorruptObjectSource, opts Options) (*StoreCollector, error) {
	if src == nil {
		return nil, fmt.Errorf("%w: NewStoreCollector: nil source", errInvalidOptions)
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &StoreCollector{
		src: src,
		desc: prometheus.NewDesc("virtkit_store_undecodable_objects",
			"Stored objects the store skips because they are not valid objects for their key (1 per key; repair by rewriting or deleting the key).",
			[]string{"kind", "key", "reason"}, nil),
		log: opts.Logger.Warn,
	}, nil
}

// Describe implements prometheus.Collector.
func (c *StoreCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *StoreCollector) Collect(ch chan<- prometheus.Metric) {
	seen := map[[2]string]bool{}
	for _, ce := range c.src.CorruptObjects() {
		key := labelValue(ce.StorageKey, maxKeyLabel)
		if seen[[2]string{ce.Kind, key}] {
			continue // two keys equal once cut: one series
		}
		seen[[2]string{ce.Kind, key}] = true
		m, err := prometheus.NewConstMetric(c.desc, prometheus.GaugeValue, 1,
			labelValue(ce.Kind, maxKeyLabel), key, labelValue(string(ce.Reason), maxKeyLabel))
		if err != nil {
			c.log("store collector: skipping a series", "err", err)
			continue
		}
		ch <- m
	}
}

// labelValue makes s a valid, bounded label value.
func labelValue(s string, limit int) string {
	if len(s) > limit {
		s = s[:limit] + "..."
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
