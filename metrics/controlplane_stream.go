package metrics

import (
	"bytes"
	"cmp"
	"context"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// WriteText writes the per-VMI object families in the text format when
// ControlPlaneSources.StreamVMIFamilies is set (nothing otherwise), for
// [NewHandler]: each VMI's lines are rendered once per resourceVersion and
// written again from that cache, VMIs in namespace/name order, without a
// client_golang metric, label pair or sort per series. The collector's
// Collect then leaves these families out, so register it in the handler's
// registry too: it still serves every other family.
func (c *ControlPlaneCollector) WriteText(ctx context.Context, w io.Writer) error {
	if !c.src.StreamVMIFamilies || c.src.Objects == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.ScrapeTimeout)
	defer cancel()
	var vmis []*virtkit.VirtualMachineInstance
	add := func(v *virtkit.VirtualMachineInstance) bool { vmis = append(vmis, v); return true }
	if c.src.VMIs == nil || !c.src.VMIs.RangeVMIs(add) {
		var list virtkit.VirtualMachineInstanceList
		if err := c.src.Objects.List(ctx, &list, store.ListOptions{}); err != nil {
			// Collect counts and logs the same failure.
			return nil
		}
		for i := range list.Items {
			vmis = append(vmis, &list.Items[i])
		}
		slices.SortFunc(vmis, func(a, b *virtkit.VirtualMachineInstance) int {
			return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
		})
	}
	ts := newTextStream()
	for _, vmi := range vmis {
		for _, l := range c.lines.get(vmi, c.renderVMI) {
			ts.buf(l.f).Write(l.text)
		}
	}
	c.lines.endScrape()
	return ts.writeTo(w, nil)
}

// renderedLine is one sample line of a family.
type renderedLine struct {
	f    *family
	text []byte
}

// renderVMI renders the VMI's object families' lines.
func (c *ControlPlaneCollector) renderVMI(vmi *virtkit.VirtualMachineInstance) []renderedLine {
	var (
		lines   []renderedLine
		scratch []byte
	)
	c.vmiSeries(vmi, func(f *family, v float64, values ...string) {
		var b bytes.Buffer
		scratch = writeSample(&b, scratch, f, "", f.labels, values, v)
		lines = append(lines, renderedLine{f: f, text: b.Bytes()})
	})
	return lines
}

// lineCache keeps each VMI's rendered lines between scrapes, keyed by its
// UID (namespace/name without one) and checked against its
// resourceVersion; a scrape keeps only the VMIs it saw. An object without
// a resourceVersion is rendered every time.
type lineCache struct {
	mu   sync.Mutex
	cur  map[string]cachedLines
	next map[string]cachedLines
}

type cachedLines struct {
	rv    string
	lines []renderedLine
}

func (c *lineCache) get(vmi *virtkit.VirtualMachineInstance, render func(*virtkit.VirtualMachineInstance) []renderedLine) []renderedLine {
	k := prefixKey(vmi)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.next == nil {
		c.next = make(map[string]cachedLines, len(c.cur))
	}
	if l, ok := c.cur[k]; ok && l.rv == vmi.ResourceVersion && l.rv != "" {
		c.next[k] = l
		return l.lines
	}
	l := cachedLines{rv: vmi.ResourceVersion, lines: render(vmi)}
	c.next[k] = l
	return l.lines
}

// endScrape forgets the VMIs the scrape did not see.
func (c *lineCache) endScrape() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cur, c.next = c.next, nil
}

var _ TextWriter = (*ControlPlaneCollector)(nil)
