package apiserver_test

import (
	"bytes"
	"context"
	"image/png"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/virtkit/virtkit/hypervisor/sim"
)

const screenshotPath = "/apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachineinstances/vm-0/vnc/screenshot"

// virtctl vnc screenshot's request (client-go, moveCursor as a query
// parameter) gets a PNG of the guest's VNC display, the node agent's
// frame of the simulated text console.
func TestVNCScreenshotThroughNodeEndpoint(t *testing.T) {
	e := startStreamEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cfg := e.ts.admin()
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	client, err := rest.UnversionedRESTClientFor(cfg)
	require.NoError(t, err)
	const banner = "virtkit simulated guest vm-0 ready"
	shot := func(move string) ([]string, error) {
		raw, err := client.Get().AbsPath(screenshotPath).Param("moveCursor", move).Do(ctx).Raw()
		if err != nil {
			return nil, err
		}
		img, err := png.Decode(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		return sim.VNCText(img)
	}
	// The guest boots while the test looks: its banner comes in time.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		lines, err := shot("false")
		require.NoError(c, err)
		assert.Contains(c, lines, banner)
	}, 30*time.Second, 50*time.Millisecond)
	lines, err := shot("true")
	require.NoError(t, err, "moveCursor=true")
	assert.Contains(t, lines, banner, "moveCursor=true")
}

// Bad screenshot requests get API errors before any node is asked.
func TestVNCScreenshotErrors(t *testing.T) {
	e := startStreamEnv(t)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: e.adminTLS(t)}}
	for _, tc := range []struct {
		name, method, path string
		code               int
	}{
		{"bad moveCursor", http.MethodGet, screenshotPath + "?moveCursor=maybe", http.StatusBadRequest},
		{"post", http.MethodPost, screenshotPath, http.StatusMethodNotAllowed},
		{"no such vmi", http.MethodGet, "/apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachineinstances/nope/vnc/screenshot", http.StatusNotFound},
		{"unknown vnc subresource", http.MethodGet, screenshotPath + "x", http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), tc.method, e.ts.URL+tc.path, nil)
			require.NoError(t, err)
			resp, err := hc.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			assert.Equal(t, tc.code, resp.StatusCode, "%s", body)
		})
	}
}
