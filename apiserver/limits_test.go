package apiserver_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/store"
)

// patchBomb is a JSON patch that adds a 1 KiB annotation and then copies
// the annotations into themselves copies times: each copy doubles them.
func patchBomb(copies int) []byte {
	ops := []map[string]any{
		{"op": "add", "path": "/metadata/annotations", "value": map[string]any{"k": strings.Repeat("x", 1024)}},
	}
	for i := range copies {
		ops = append(ops, map[string]any{"op": "copy", "from": "/metadata/annotations", "path": fmt.Sprintf("/metadata/annotations/c%d", i)})
	}
	b, _ := json.Marshal(ops)
	return b
}

// A JSON patch that copies a document onto itself is refused with 413
// before it grows (kube-apiserver's bound since CVE-2019-1002100): the
// server allocates less than 10 MB refusing one that would make 64 MiB.
// A patch of more than MaxJSONPatchOperations operations is refused too.
func TestJSONPatchBombIsRefused(t *testing.T) {
	ts := startServer(t, store.NewMemory(), apiserver.Options{})
	dc, err := dynamic.NewForConfig(ts.admin())
	require.NoError(t, err)
	ctx := t.Context()
	vms := dc.Resource(vmGVR).Namespace("default")
	_, err = vms.Create(ctx, vmObject(t, "bomb", "Halted"), metav1.CreateOptions{})
	require.NoError(t, err)

	bomb := patchBomb(16)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = vms.Patch(ctx, "bomb", types.JSONPatchType, bomb, metav1.PatchOptions{})
	runtime.ReadMemStats(&after)
	require.True(t, apierrors.IsRequestEntityTooLargeError(err), "413: %v", err)
	extra := after.TotalAlloc - before.TotalAlloc
	assert.Less(t, extra, uint64(10<<20), "bytes allocated refusing the patch")
	t.Logf("refusing a %d-byte patch bomb allocated %d bytes", len(bomb), extra)

	many := make([]map[string]any, apiserver.MaxJSONPatchOperations+1)
	for i := range many {
		many[i] = map[string]any{"op": "test", "path": "/metadata/name", "value": "bomb"}
	}
	b, err := json.Marshal(many)
	require.NoError(t, err)
	_, err = vms.Patch(ctx, "bomb", types.JSONPatchType, b, metav1.PatchOptions{})
	require.True(t, apierrors.IsRequestEntityTooLargeError(err), "413: %v", err)
	assert.ErrorContains(t, err, "maximum operations")

	// A patch within the bounds still applies, copies included.
	p, err := vms.Patch(ctx, "bomb", types.JSONPatchType, []byte(`[
		{"op":"add","path":"/metadata/labels","value":{"a":"1"}},
		{"op":"copy","from":"/metadata/labels/a","path":"/metadata/labels/b"},
		{"op":"move","from":"/metadata/labels/a","path":"/metadata/labels/c"},
		{"op":"test","path":"/metadata/labels/b","value":"1"}]`), metav1.PatchOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"b": "1", "c": "1"}, p.GetLabels())
}

// rawClient is an HTTP client authenticated as the admin.
func rawClient(t *testing.T, ts *testServer) *http.Client {
	t.Helper()
	tr, err := rest.TransportFor(ts.admin())
	require.NoError(t, err)
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

// Create and update bodies that are neither JSON nor YAML are refused with
// 415 Unsupported Media Type.
func TestWriteBodyMediaType(t *testing.T) {
	ts := startServer(t, store.NewMemory(), apiserver.Options{})
	client := rawClient(t, ts)
	body, err := json.Marshal(vmObject(t, "typed", "Halted").Object)
	require.NoError(t, err)
	tests := []struct {
		contentType string
		want        int
	}{
		{"text/plain", http.StatusUnsupportedMediaType},
		{"application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
		{"application/json; charset=utf-8", http.StatusCreated},
	}
	for _, tt := range tests {
		t.Run(tt.contentType, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost,
				ts.URL+"/apis/kubevirt.io/v1/namespaces/default/virtualmachines", bytes.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", tt.contentType)
			resp, err := client.Do(req)
			require.NoError(t, err)
			msg, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			assert.Equal(t, tt.want, resp.StatusCode, "%s", msg)
		})
	}
}

// A request body that does not arrive within RequestBodyTimeout is
// answered with an error instead of holding the request forever.
func TestRequestBodyTimeout(t *testing.T) {
	ts := startServer(t, store.NewMemory(), apiserver.Options{RequestBodyTimeout: 200 * time.Millisecond})
	client := rawClient(t, ts)
	pr, pw := io.Pipe()
	defer pw.Close()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost,
		ts.URL+"/apis/kubevirt.io/v1/namespaces/default/virtualmachines", pr)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = 1000
	go func() { _, _ = pw.Write([]byte(`{"apiVersion":`)) }()
	resp, err := client.Do(req)
	if err == nil {
		_ = resp.Body.Close()
		assert.NotEqual(t, http.StatusCreated, resp.StatusCode)
	}
	// Either way the client did not wait for its own 20 s timeout.
	if err != nil {
		assert.NotContains(t, err.Error(), "Client.Timeout", "the server waited for the body")
	}
}

// Requests beyond MaxRequestsInFlight are refused with 429; watches are
// counted apart, and bounded per user by MaxWatchesPerUser.
func TestMaxInFlightAndWatchesPerUser(t *testing.T) {
	ts := startServer(t, store.NewMemory(), apiserver.Options{MaxRequestsInFlight: 1, MaxWatchesPerUser: 2})
	client := rawClient(t, ts)
	dc, err := dynamic.NewForConfig(ts.admin())
	require.NoError(t, err)
	vms := dc.Resource(vmGVR).Namespace("default")
	ctx := t.Context()

	// Two watches open; the third of the same user is refused.
	w1, err := vms.Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	w2, err := vms.Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer w2.Stop()
	_, err = vms.Watch(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsTooManyRequests(err), "third watch: %v", err)
	w1.Stop()
	require.Eventually(t, func() bool {
		w, err := vms.Watch(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		w.Stop()
		return true
	}, 10*time.Second, 10*time.Millisecond, "a watch closed frees its place")

	// A request whose body has not arrived holds the only slot.
	pr, pw := io.Pipe()
	held, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/apis/kubevirt.io/v1/namespaces/default/virtualmachines", pr)
	require.NoError(t, err)
	held.Header.Set("Content-Type", "application/json")
	done := make(chan int, 1)
	go func() {
		resp, err := client.Do(held)
		if err != nil {
			done <- 0
			return
		}
		_ = resp.Body.Close()
		done <- resp.StatusCode
	}()
	require.Eventually(t, func() bool {
		_, err := vms.List(ctx, metav1.ListOptions{})
		return apierrors.IsTooManyRequests(err)
	}, 10*time.Second, 10*time.Millisecond, "a second request in flight is refused")
	// Watches do not take the slot.
	w3, err := vms.Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	w3.Stop()
	body, err := json.Marshal(vmObject(t, "held", "Halted").Object)
	require.NoError(t, err)
	_, err = pw.Write(body)
	require.NoError(t, err)
	require.NoError(t, pw.Close())
	assert.Equal(t, http.StatusCreated, <-done)
	_, err = vms.List(ctx, metav1.ListOptions{})
	require.NoError(t, err, "the slot is free again")
}

// Serve closes connections beyond MaxConnections as it accepts them.
func TestMaxConnections(t *testing.T) {
	ts := startServer(t, store.NewMemory(), apiserver.Options{MaxConnections: 2})
	u, err := url.Parse(ts.URL)
	require.NoError(t, err)
	cfg := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the test checks connection counting only
	dial := func() (*tls.Conn, error) {
		d := &tls.Dialer{Config: cfg}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		c, err := d.DialContext(ctx, "tcp", u.Host)
		if err != nil {
			return nil, err
		}
		return c.(*tls.Conn), nil
	}
	c1, err := dial()
	require.NoError(t, err)
	c2, err := dial()
	require.NoError(t, err)
	defer c2.Close()
	_, err = dial()
	require.Error(t, err, "a third connection is closed")
	require.NoError(t, c1.Close())
	require.Eventually(t, func() bool {
		c, err := dial()
		if err != nil {
			return false
		}
		_ = c.Close()
		return true
	}, 10*time.Second, 10*time.Millisecond, "a closed connection frees its place")
}
