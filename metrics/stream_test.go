package metrics

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/internal/promcheck"
)

// series flattens families into "name{sorted labels} value" lines, by
// family with help and type, for comparing two expositions.
func series(mfs map[string]*dto.MetricFamily) []string {
	var out []string
	for name, mf := range mfs {
		out = append(out, fmt.Sprintf("# %s %s %s", name, mf.GetType(), mf.GetHelp()))
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, lp := range m.GetLabel() {
				ls = append(ls, lp.GetName()+"="+fmt.Sprintf("%q", lp.GetValue()))
			}
			slices.Sort(ls)
			v := m.GetGauge().GetValue()
			if m.Counter != nil {
				v = m.GetCounter().GetValue()
			}
			out = append(out, fmt.Sprintf("%s{%s} %g", name, strings.Join(ls, ","), v))
		}
	}
	slices.Sort(out)
	return out
}

func gathered(t *testing.T, c prometheus.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	return gatherMap(t, reg)
}

func gatherMap(t *testing.T, g prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

func parsed(t *testing.T, text []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(text))
	require.NoError(t, err, "%s", text)
	return mfs
}

func streamed(t *testing.T, w TextWriter) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, w.WriteText(context.Background(), &buf))
	return buf.Bytes()
}

// The streamed exposition holds exactly the series Collect produces, with
// the same help, types and values, on the full fixture (every family).
func TestWriteTextMatchesCollect(t *testing.T) {
	dom, _ := fullCollectors(t)
	text := streamed(t, dom)
	assert.Equal(t, series(gathered(t, dom)), series(parsed(t, text)))
}

// VMI labels and guest-reported names with quotes, backslashes, newlines
// and invalid UTF-8 are escaped, and a VMI whose labels change (a new
// resourceVersion) is written with its new labels.
func TestWriteTextEscapesAndFollowsLabels(t *testing.T) {
	vmi := runningVMI("ns", "vm", "n1", map[string]string{"app": "a\"b\\c\nd", "team": "x\xffy"})
	vmi.UID, vmi.ResourceVersion = "u1", "1"
	st := fullStats()
	st.Net[0].Name = "tap\"0"
	objs := &fakeObjects{vmis: []virtkit.VirtualMachineInstance{vmi}}
	dom, err := NewDomainCollector(DomainSources{Objects: objs, Nodes: []NodeSource{{
		Name: "n1", Domains: &fakeDomains{stats: map[string]hypervisor.DomainStats{"ns_vm": st}},
	}}}, Options{})
	require.NoError(t, err)
	text := streamed(t, dom)
	assert.Equal(t, series(gathered(t, dom)), series(parsed(t, text)))
	assert.Contains(t, string(text), `kubernetes_vmi_label_app="a\"b\\c\nd"`)

	objs.set(func(f *fakeObjects) {
		f.vmis[0].Labels = map[string]string{"app": "new"}
		f.vmis[0].ResourceVersion = "2"
	})
	text = streamed(t, dom)
	assert.Contains(t, string(text), `kubernetes_vmi_label_app="new"`)
	assert.NotContains(t, string(text), "team")
	assert.Equal(t, series(gathered(t, dom)), series(parsed(t, text)))
}

// The handler serves a registry's families and streamed ones on one page
// that promtool accepts.
func TestNewHandlerPromtoolClean(t *testing.T) {
	dom, cp := fullCollectors(t)
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(cp))
	srv := httptest.NewServer(NewHandler(reg, dom))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, textContentType, resp.Header.Get("Content-Type"))
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)

	both := prometheus.NewPedanticRegistry()
	require.NoError(t, both.Register(dom))
	require.NoError(t, both.Register(cp))
	want := series(gatherMap(t, both))
	assert.Equal(t, want, series(parsed(t, body)))
	promcheck.RequireClean(t, body)
}

// Scrapes of one streamed collector may run at once (the label cache and
// the text buffers are shared between scrapes).
func TestWriteTextConcurrentScrapes(t *testing.T) {
	dom, _ := fullCollectors(t)
	want := series(gathered(t, dom))
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 5 {
				var buf bytes.Buffer
				if !assert.NoError(t, dom.WriteText(context.Background(), &buf)) {
					return
				}
				p := expfmt.NewTextParser(model.LegacyValidation)
				mfs, err := p.TextToMetricFamilies(bytes.NewReader(buf.Bytes()))
				if assert.NoError(t, err) {
					assert.Equal(t, want, series(mfs))
				}
			}
		})
	}
	wg.Wait()
}
