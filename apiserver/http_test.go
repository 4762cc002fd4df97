package apiserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver"
)

func decodeStatus(t *testing.T, body io.Reader) metav1.Status {
	t.Helper()
	var st metav1.Status
	require.NoError(t, json.NewDecoder(body).Decode(&st))
	return st
}

// Anonymous requests get Unauthorized, except a GET of the health checks
// and the version, which answer as kube-apiserver's do for
// system:unauthenticated (system:public-info-viewer); a request without
// TLS is not served.
func TestAnonymous(t *testing.T) {
	ts := startServer(t, newStore(t), apiserver.GenericOptions{})
	c := ts.anonymous(t)
	for _, p := range []string{"/healthz", "/readyz", "/livez", "/version"} {
		resp, err := c.Get(ts.URL + p)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", p, body)
		if p == "/version" {
			assert.Contains(t, string(body), `"gitVersion"`)
		} else {
			assert.Equal(t, "ok", string(body), p)
		}
	}
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/apis"},
		{http.MethodGet, "/api/v1/namespaces"},
		{http.MethodGet, "/healthz/ping"},
		{http.MethodGet, "/openapi/v2"},
		{http.MethodGet, "/apis/kubevirt.io/v1/namespaces/default/virtualmachines"},
		{http.MethodPost, "/healthz"},
		{http.MethodPost, "/apis/kubevirt.io/v1/namespaces/default/virtualmachines"},
	} {
		req, err := http.NewRequest(r.method, ts.URL+r.path, strings.NewReader("{}"))
		require.NoError(t, err)
		resp, err := c.Do(req)
		require.NoError(t, err)
		st := decodeStatus(t, resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, r)
		assert.Equal(t, metav1.StatusReasonUnauthorized, st.Reason, r)
	}
	resp, err := http.Get(strings.Replace(ts.URL, "https://", "http://", 1) + "/healthz")
	if err == nil {
		resp.Body.Close()
		assert.NotEqual(t, http.StatusOK, resp.StatusCode, "plain HTTP is not served")
	}
}

// watchLines opens a raw watch and returns a function reading its events.
func watchLines(t *testing.T, ts *testServer, ctx context.Context, path string) (int, func() (metav1.WatchEvent, bool)) {
	t.Helper()
	tr, err := rest.TransportFor(ts.admin())
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+path, nil)
	require.NoError(t, err)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	dec := json.NewDecoder(bufio.NewReader(resp.Body))
	return resp.StatusCode, func() (metav1.WatchEvent, bool) {
		var ev metav1.WatchEvent
		if err := dec.Decode(&ev); err != nil {
			return ev, false
		}
		return ev, true
	}
}

func objectMeta(t *testing.T, ev metav1.WatchEvent) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON(ev.Object.Raw))
	return u
}

// Watches: initial events end with the initial-events-end bookmark
// (periodic bookmarks: TestGenericWatchBookmarks), resuming from a
// resourceVersion, 410 Gone after a compaction (an ERROR event, as
// kube-apiserver sends it), field selectors turning changes into
// ADDED/DELETED.
func TestWatchProtocol(t *testing.T) {
	st := newStore(t)
	ts := startServer(t, st, apiserver.GenericOptions{})
	ctx := t.Context()
	dc, err := dynamic.NewForConfig(ts.admin())
	require.NoError(t, err)
	vms := dc.Resource(vmGVR).Namespace("default")
	first, err := vms.Create(ctx, vmObject(t, "vm-0", "Halted"), metav1.CreateOptions{})
	require.NoError(t, err)

	base := "/apis/kubevirt.io/v1/namespaces/default/virtualmachines?watch=true"
	code, next := watchLines(t, ts, ctx, base+"&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true")
	require.Equal(t, http.StatusOK, code)
	ev, ok := next()
	require.True(t, ok)
	assert.Equal(t, "ADDED", ev.Type)
	assert.Equal(t, "vm-0", objectMeta(t, ev).GetName())
	ev, ok = next()
	require.True(t, ok)
	assert.Equal(t, "BOOKMARK", ev.Type)
	assert.Equal(t, "true", objectMeta(t, ev).GetAnnotations()[metav1.InitialEventsAnnotationKey])
	_, err = vms.Create(ctx, vmObject(t, "vm-1", "Halted"), metav1.CreateOptions{})
	require.NoError(t, err)
	for {
		ev, ok = next()
		require.True(t, ok)
		if ev.Type != "BOOKMARK" {
			break
		}
	}
	assert.Equal(t, "ADDED", ev.Type)
	assert.Equal(t, "vm-1", objectMeta(t, ev).GetName())

	// Resume from the first object's resourceVersion: vm-1 comes again.
	code, next = watchLines(t, ts, ctx, base+"&resourceVersion="+first.GetResourceVersion())
	require.Equal(t, http.StatusOK, code)
	ev, ok = next()
	require.True(t, ok)
	assert.Equal(t, "vm-1", objectMeta(t, ev).GetName())

	// After a compaction an old resourceVersion is Gone.
	require.NoError(t, st.Compact(ctx))
	code, next = watchLines(t, ts, ctx, base+"&resourceVersion="+first.GetResourceVersion())
	require.Equal(t, http.StatusOK, code)
	ev, ok = next()
	require.True(t, ok)
	require.Equal(t, "ERROR", ev.Type)
	var gone metav1.Status
	require.NoError(t, json.Unmarshal(ev.Object.Raw, &gone))
	assert.Equal(t, int32(http.StatusGone), gone.Code, "%s", gone.Message)

	// A field selector on status.phase: a VMI entering the selection is
	// ADDED, one leaving it DELETED.
	vmi := &virtkit.VirtualMachineInstance{}
	vmi.Name, vmi.Namespace = "vmi-0", "default"
	virtkit.SetDefaults(vmi)
	require.NoError(t, st.Create(ctx, vmi))
	code, next = watchLines(t, ts, ctx,
		"/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstances?watch=true&fieldSelector=status.phase%3DRunning")
	require.Equal(t, http.StatusOK, code)
	vmi.Status.Phase = virtkit.Running
	require.NoError(t, st.UpdateStatus(ctx, vmi))
	ev, ok = next()
	require.True(t, ok)
	assert.Equal(t, "ADDED", ev.Type, "enters the selection")
	vmi.Status.Phase = virtkit.Succeeded
	require.NoError(t, st.UpdateStatus(ctx, vmi))
	ev, ok = next()
	require.True(t, ok)
	assert.Equal(t, "DELETED", ev.Type, "leaves the selection")
}

// Tables carry KubeVirt's printer columns.
func TestTable(t *testing.T) {
	st := newStore(t)
	ts := startServer(t, st, apiserver.GenericOptions{})
	ctx := t.Context()
	dc, err := dynamic.NewForConfig(ts.admin())
	require.NoError(t, err)
	_, err = dc.Resource(vmGVR).Namespace("default").Create(ctx, vmObject(t, "vm-0", "Halted"), metav1.CreateOptions{})
	require.NoError(t, err)
	tr, err := rest.TransportFor(ts.admin())
	require.NoError(t, err)
	columns := func(path string) []string {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+path, nil)
		require.NoError(t, err)
		req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
		resp, err := (&http.Client{Transport: tr}).Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var tbl metav1.Table
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&tbl))
		var out []string
		for _, c := range tbl.ColumnDefinitions {
			if c.Priority == 0 {
				out = append(out, c.Name)
			}
		}
		return out
	}
	for path, want := range map[string][]string{
		"/apis/kubevirt.io/v1/namespaces/default/virtualmachines":                   {"Name", "Age", "Status", "Ready"},
		"/apis/kubevirt.io/v1/namespaces/default/virtualmachines/vm-0":              {"Name", "Age", "Status", "Ready"},
		"/apis/kubevirt.io/v1/virtualmachineinstances":                              {"Name", "Age", "Phase", "IP", "NodeName", "Ready"},
		"/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstancemigrations":  {"Name", "Phase", "VMI"},
		"/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstancereplicasets": {"Name", "Desired", "Current", "Ready", "Age"},
		"/apis/cdi.kubevirt.io/v1beta1/namespaces/default/datavolumes":              {"Name", "Phase", "Progress", "Restarts", "Age"},
	} {
		assert.Equal(t, want, columns(path), path)
	}
}

// Discovery lists every kind with KubeVirt's names; kubectl get all covers
// KubeVirt's and CDI's kinds but not Events.
func TestDiscovery(t *testing.T) {
	ts := startServer(t, newStore(t), apiserver.GenericOptions{})
	dc, err := discovery.NewDiscoveryClientForConfig(ts.admin())
	require.NoError(t, err)
	kv, err := dc.ServerResourcesForGroupVersion("kubevirt.io/v1")
	require.NoError(t, err)
	byName := map[string]metav1.APIResource{}
	for _, r := range kv.APIResources {
		byName[r.Name] = r
	}
	assert.Equal(t, []string{"vmi", "vmis"}, byName["virtualmachineinstances"].ShortNames)
	assert.Equal(t, []string{"all"}, byName["virtualmachines"].Categories)
	assert.Contains(t, byName, "virtualmachines/status")
	ev, err := dc.ServerResourcesForGroupVersion("events.k8s.io/v1")
	require.NoError(t, err)
	require.Len(t, ev.APIResources, 1)
	assert.Empty(t, ev.APIResources[0].Categories)
	sub, err := dc.ServerResourcesForGroupVersion("subresources.kubevirt.io/v1")
	require.NoError(t, err)
	assert.NotEmpty(t, sub.APIResources)
	v, err := dc.ServerVersion()
	require.NoError(t, err)
	assert.Equal(t, "1", v.Major)
}
