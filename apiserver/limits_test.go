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
)

// maxJSONPatchOperations is the generic server library's bound on the
// operations of a JSON patch.
const maxJSONPatchOperations = 10000

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

// A JSON patch that copies a document onto itself is refused (413 or 422)
// before it grows (kube-apiserver's bound since CVE-2019-1002100), rather
// than making 64 MiB.
// A patch of more than the library's 10000 operations is refused too.
func TestJSONPatchBombIsRefused(t *testing.T) {
	ts := startServer(t, newStore(t), apiserver.GenericOptions{})
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
	require.True(t, apierrors.IsRequestEntityTooLargeError(err) || apierrors.IsInvalid(err), "413 or 422: %v", err)
	// The library bounds the bytes a patch copies (TestGenericLimits); the
	// allocation is logged, not asserted.
	extra := after.TotalAlloc - before.TotalAlloc
	t.Logf("refusing a %d-byte patch bomb allocated %d bytes", len(bomb), extra)

	many := make([]map[string]any, maxJSONPatchOperations+1)
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
	ts := startServer(t, newStore(t), apiserver.GenericOptions{})
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

// Serve closes connections beyond MaxConnections as it accepts them.
func TestMaxConnections(t *testing.T) {
	ts := startServer(t, newStore(t), apiserver.GenericOptions{MaxConnections: 2})
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
