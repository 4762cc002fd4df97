package metrics

import (
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// vmiLabelPrefix prefixes every VMI label turned into a metric label.
const vmiLabelPrefix = "kubernetes_vmi_label_"

// family is one metric name with its help, type and fixed labels. Families
// whose series carry VMI labels get one Desc per distinct VMI label-name
// set, from a [descCache].
type family struct {
	name   string
	help   string
	typ    prometheus.ValueType
	labels []string
	// hist marks a histogram (typ is then unused).
	hist bool
	// plain: desc built once, no VMI labels.
	plain *prometheus.Desc
}

func newFamily(name, help string, typ prometheus.ValueType, labels ...string) *family {
	f := &family{name: name, help: help, typ: typ, labels: labels}
	f.plain = prometheus.NewDesc(name, help, labels, nil)
	return f
}

func newHistogramFamily(name, help string, labels ...string) *family {
	f := newFamily(name, help, prometheus.UntypedValue, labels...)
	f.hist = true
	return f
}

// vmiLabels are a VMI's labels in metric form, sorted by original key.
type vmiLabels struct {
	names  []string
	values []string
	sig    string
}

// sanitizeLabelName turns a Kubernetes label key into a Prometheus label
// name as KubeVirt does: prefix + the key with every character outside
// [a-zA-Z0-9_] ('.', '/', '-' in a valid key) replaced by '_'. Case is
// kept (kubevirt.io/nodeName -> kubernetes_vmi_label_kubevirt_io_nodeName).
func sanitizeLabelName(prefix, key string) string {
	var b strings.Builder
	b.Grow(len(prefix) + len(key))
	b.WriteString(prefix)
	for i := 0; i < len(key); i++ {
		c := key[i]
		if (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// labelsOf converts VMI labels, dropping keys that collide after
// sanitizing (the first key in sorted order wins).
func labelsOf(labels map[string]string) vmiLabels {
	return labelsWithPrefix(labels, vmiLabelPrefix)
}

// labelsWithPrefix converts Kubernetes labels to metric labels named
// prefix + sanitized key, sorted by key; keys that collide after
// sanitizing keep the first in key order.
func labelsWithPrefix(labels map[string]string, prefix string) vmiLabels {
	if len(labels) == 0 {
		return vmiLabels{}
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := vmiLabels{names: make([]string, 0, len(keys)), values: make([]string, 0, len(keys))}
	seen := make(map[string]bool, len(keys))
	var sig strings.Builder
	for _, k := range keys {
		n := sanitizeLabelName(prefix, k)
		if seen[n] {
			continue
		}
		seen[n] = true
		out.names = append(out.names, n)
		out.values = append(out.values, labels[k])
		sig.WriteString(n)
		sig.WriteByte(0xff)
	}
	out.sig = sig.String()
	return out
}

// descCache holds the Descs of families with VMI labels, per label-name
// set. Building a Desc is costly; VMIs mostly share label keys.
type descCache struct {
	mu sync.Mutex
	m  map[descKey]*prometheus.Desc
}

type descKey struct {
	f   *family
	sig string
}

// maxCachedDescs bounds the cache; past it the cache starts over, which
// only costs rebuilding Descs.
const maxCachedDescs = 50_000

func (c *descCache) get(f *family, vl *vmiLabels) *prometheus.Desc {
	if vl.sig == "" {
		return f.plain
	}
	k := descKey{f, vl.sig}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.m[k]; ok {
		return d
	}
	if c.m == nil || len(c.m) >= maxCachedDescs {
		c.m = make(map[descKey]*prometheus.Desc)
	}
	names := make([]string, 0, len(f.labels)+len(vl.names))
	names = append(names, f.labels...)
	names = append(names, vl.names...)
	d := prometheus.NewDesc(f.name, f.help, names, nil)
	c.m[k] = d
	return d
}
