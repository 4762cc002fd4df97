package metrics

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/virtkit/virtkit"
)

// TextWriter writes metric families in the Prometheus text exposition
// format (version 0.0.4). [DomainCollector] is one: it streams its per-VMI
// families without building a client_golang metric, a label pair or a
// sorted copy per series.
type TextWriter interface {
	WriteText(ctx context.Context, w io.Writer) error
}

// textContentType is the text format's content type.
const textContentType = "text/plain; version=0.0.4; charset=utf-8"

// NewHandler serves the families of g and those the streams write on one
// page in the text format. Register a streamed collector in no registry g
// gathers. A family both export (virtkit_scrape_list_errors_total, by
// collector) is written once: the gathered samples, then a
// [DomainCollector]'s. What could be gathered is served even when Gather
// reports an error, like Handler's ContinueOnError; a stream error ends
// the page where it happened.
func NewHandler(g prometheus.Gatherer, streams ...TextWriter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", textContentType)
		bw := bufio.NewWriterSize(w, 64<<10)
		defer bw.Flush()
		var (
			own    []*textStream
			owners []*DomainCollector
			others []TextWriter
		)
		for _, s := range streams {
			if d, ok := s.(*DomainCollector); ok && d != nil {
				own = append(own, d.textStream(r.Context()))
				owners = append(owners, d)
			} else if s != nil {
				others = append(others, s)
			}
		}
		written := map[*family]bool{}
		if g != nil {
			mfs, _ := g.Gather()
			for _, mf := range mfs {
				if _, err := expfmt.MetricFamilyToText(bw, mf); err != nil {
					return
				}
				// The same family from a stream continues right here,
				// without a second header.
				for _, ts := range own {
					for _, f := range ts.order {
						if f.name == mf.GetName() && !written[f] {
							written[f] = true
							if _, err := bw.Write(ts.fams[f].Bytes()); err != nil {
								return
							}
						}
					}
				}
			}
		}
		defer func() {
			for i, ts := range own {
				owners[i].release(ts)
			}
		}()
		for _, ts := range own {
			if err := ts.writeTo(bw, written); err != nil {
				return
			}
		}
		for _, s := range others {
			if err := s.WriteText(r.Context(), bw); err != nil {
				return
			}
		}
	})
}

// textStream collects one scrape's samples per family, in the text
// format, so each family is written whole after its header.
type textStream struct {
	fams    map[*family]*bytes.Buffer
	order   []*family
	scratch []byte
}

func newTextStream() *textStream { return &textStream{fams: map[*family]*bytes.Buffer{}} }

// reset empties the stream, keeping its buffers for the next scrape.
func (s *textStream) reset() {
	for _, b := range s.fams {
		b.Reset()
	}
	s.order = s.order[:0]
}

func (s *textStream) buf(f *family) *bytes.Buffer {
	b := s.fams[f]
	if b == nil {
		b = &bytes.Buffer{}
		s.fams[f] = b
	}
	if b.Len() == 0 {
		s.order = append(s.order, f)
	}
	return b
}

// sample writes `name{prefix,extra="value",...} v`.
func (s *textStream) sample(f *family, prefix string, names, values []string, v float64) {
	s.scratch = writeSample(s.buf(f), s.scratch, f, prefix, names, values, v)
}

// writeSample writes one sample line to b; scratch is reused for the value
// and returned.
func writeSample(b *bytes.Buffer, scratch []byte, f *family, prefix string, names, values []string, v float64) []byte {
	b.WriteString(f.name)
	if prefix == "" && len(names) == 0 {
		b.WriteByte(' ')
		scratch = appendFloat(scratch[:0], v)
		b.Write(scratch)
		b.WriteByte('\n')
		return scratch
	}
	b.WriteByte('{')
	b.WriteString(prefix)
	sep := prefix != ""
	for i, n := range names {
		if sep {
			b.WriteByte(',')
		}
		sep = true
		b.WriteString(n)
		b.WriteString(`="`)
		writeEscapedValue(b, values[i])
		b.WriteByte('"')
	}
	b.WriteString("} ")
	scratch = appendFloat(scratch[:0], v)
	b.Write(scratch)
	b.WriteByte('\n')
	return scratch
}

// plain writes a sample of a family without VMI labels.
func (s *textStream) plain(f *family, v float64, values ...string) {
	s.sample(f, "", f.labels, values, v)
}

// writeTo writes every family but those in skip, by name, each after its
// HELP and TYPE.
func (s *textStream) writeTo(w io.Writer, skip map[*family]bool) error {
	slices.SortFunc(s.order, func(a, b *family) int { return strings.Compare(a.name, b.name) })
	bw, ok := w.(*bufio.Writer)
	if !ok {
		bw = bufio.NewWriterSize(w, 64<<10)
	}
	for _, f := range s.order {
		if skip[f] {
			continue
		}
		bw.WriteString("# HELP ")
		bw.WriteString(f.name)
		bw.WriteByte(' ')
		bw.WriteString(escapeHelp(f.help))
		bw.WriteString("\n# TYPE ")
		bw.WriteString(f.name)
		if f.typ == prometheus.CounterValue {
			bw.WriteString(" counter\n")
		} else {
			bw.WriteString(" gauge\n")
		}
		if _, err := bw.Write(s.fams[f].Bytes()); err != nil {
			return err
		}
	}
	if !ok {
		return bw.Flush()
	}
	return nil
}

// appendFloat formats like the text format's encoder.
func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, +1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)

func escapeHelp(s string) string { return helpEscaper.Replace(s) }

// writeEscapedValue writes a label value escaped for the text format, with
// invalid UTF-8 replaced (guest-reported names may hold any bytes).
func writeEscapedValue(b *bytes.Buffer, v string) {
	if !utf8.ValidString(v) {
		v = strings.ToValidUTF8(v, "\uFFFD")
	}
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteByte(c)
		}
	}
}

// labelPrefix is an object's escaped label set: its VMI labels, then node,
// namespace and name.
func labelPrefix(vl *vmiLabels, node, namespace, name string) string {
	var b bytes.Buffer
	for i, n := range vl.names {
		b.WriteString(n)
		b.WriteString(`="`)
		writeEscapedValue(&b, vl.values[i])
		b.WriteString(`",`)
	}
	b.WriteString(`node="`)
	writeEscapedValue(&b, node)
	b.WriteString(`",namespace="`)
	writeEscapedValue(&b, namespace)
	b.WriteString(`",name="`)
	writeEscapedValue(&b, name)
	b.WriteByte('"')
	return b.String()
}

// prefixCache keeps each VMI's escaped label set between scrapes, keyed by
// its UID (namespace/name without one) and checked against its
// resourceVersion and node; a scrape keeps only the VMIs it saw.
type prefixCache struct {
	mu   sync.Mutex
	cur  map[string]cachedPrefix
	next map[string]cachedPrefix
}

type cachedPrefix struct {
	rv, node, prefix string
}

func prefixKey(vmi *virtkit.VirtualMachineInstance) string {
	if vmi.UID != "" {
		return string(vmi.UID)
	}
	return vmi.Namespace + "/" + vmi.Name
}

// get returns vmi's label set on node; the caller holds nothing.
func (c *prefixCache) get(vmi *virtkit.VirtualMachineInstance, node string) string {
	k := prefixKey(vmi)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.next == nil {
		c.next = make(map[string]cachedPrefix, len(c.cur))
	}
	if p, ok := c.cur[k]; ok && p.rv == vmi.ResourceVersion && p.rv != "" && p.node == node {
		c.next[k] = p
		return p.prefix
	}
	vl := labelsOf(vmi.Labels)
	p := cachedPrefix{rv: vmi.ResourceVersion, node: node, prefix: labelPrefix(&vl, node, vmi.Namespace, vmi.Name)}
	c.next[k] = p
	return p.prefix
}

// endScrape forgets the VMIs the scrape did not see.
func (c *prefixCache) endScrape() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cur, c.next = c.next, nil
}
