package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/internal/promcheck"
)

func page(t *testing.T, h http.Handler) []byte {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return body
}

// A control-plane collector streaming its per-VMI families serves, with
// the streamed domain families on one page, exactly the series both
// collectors gather, promtool-clean, on every scrape.
func TestControlPlaneStreamMatchesCollect(t *testing.T) {
	dom, cp := fullCollectors(t)
	src := cp.src
	src.StreamVMIFamilies = true
	scp, err := NewControlPlaneCollector(src, Options{})
	require.NoError(t, err)
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(scp))
	assert.NotContains(t, gatherMap(t, reg), "kubevirt_vmi_info", "streamed, not gathered")

	both := prometheus.NewPedanticRegistry()
	require.NoError(t, both.Register(dom))
	require.NoError(t, both.Register(cp))
	want := series(gatherMap(t, both))
	h := NewHandler(reg, dom, scp)
	for range 2 {
		body := page(t, h)
		assert.Equal(t, want, series(parsed(t, body)))
		promcheck.RequireClean(t, body)
	}
}

// A VMI's lines are rendered once per resourceVersion: an object changed
// under the same version is served as first rendered, a new version is
// rendered again, and a VMI that is gone is gone from the page.
func TestControlPlaneStreamCachesByResourceVersion(t *testing.T) {
	a := runningVMI("ns", "a", "n1", nil)
	a.UID, a.ResourceVersion = "ua", "1"
	b := runningVMI("ns", "b", "n1", nil)
	b.UID, b.ResourceVersion = "ub", "1"
	objs := &fakeObjects{vmis: []virtkit.VirtualMachineInstance{b, a}}
	cp, err := NewControlPlaneCollector(ControlPlaneSources{Objects: objs, StreamVMIFamilies: true}, Options{})
	require.NoError(t, err)
	text := func() string { return string(streamed(t, cp)) }

	first := text()
	assert.Less(t, strings.Index(first, `name="a"`), strings.Index(first, `name="b"`), "key order")
	assert.Contains(t, first, `phase="running"`)

	objs.set(func(f *fakeObjects) { f.vmis[1].Status.Phase = virtkit.Succeeded })
	assert.Equal(t, first, text(), "same resourceVersion: the cached lines")

	objs.set(func(f *fakeObjects) { f.vmis[1].ResourceVersion = "2" })
	assert.Contains(t, text(), `name="a",phase="succeeded"`)

	objs.set(func(f *fakeObjects) { f.vmis = f.vmis[1:] })
	assert.NotContains(t, text(), `name="b"`)
}
