package importer_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/cdi/importer"
)

// countingServer serves a small binary "disk" on addr and counts requests.
func countingServer(t *testing.T, addr string, h http.Handler) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	var n atomic.Int32
	if h == nil {
		h = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(make([]byte, 1<<20)) })
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h.ServeHTTP(w, r)
	})}}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &n
}

// A tenant's URL may not make the node dial loopback, link-local (the
// metadata address) or the node itself, by literal, by name or through a
// redirect from an allowed host; the refusal is permanent and the refused
// server never sees a request.
func TestImportAddressPolicy(t *testing.T) {
	lo, loHits := countingServer(t, "127.0.0.1:0", nil)
	_, port, _ := net.SplitHostPort(lo.Listener.Addr().String())
	redirector, _ := countingServer(t, "127.0.0.2:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	}))
	onlyRedirector := []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}
	tests := []struct {
		name    string
		url     string
		allowed []netip.Prefix
	}{
		{"loopback literal", lo.URL + "/disk.raw", nil},
		{"loopback by name", "http://localhost:" + port + "/disk.raw", nil},
		{"IPv6 loopback", "http://[::1]:" + port + "/disk.raw", nil},
		{"metadata address", "http://169.254.169.254/latest/meta-data/", nil},
		{"unspecified", "http://0.0.0.0:" + port + "/disk.raw", nil},
		{"redirect to loopback literal", redirector.URL + "/?to=" + url.QueryEscape(lo.URL+"/disk.raw"), onlyRedirector},
		{"redirect to loopback name", redirector.URL + "/?to=" + url.QueryEscape("http://localhost:"+port+"/disk.raw"), onlyRedirector},
		{"redirect to metadata", redirector.URL + "/?to=" + url.QueryEscape("http://169.254.169.254/"), onlyRedirector},
		{"redirect to a file", redirector.URL + "/?to=" + url.QueryEscape("file:///etc/passwd"), onlyRedirector},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			im, err := importer.New(importer.Options{ScratchDir: t.TempDir(), AllowedNetworks: tt.allowed})
			require.NoError(t, err)
			target := filepath.Join(t.TempDir(), "disk.img")
			_, err = im.Import(context.Background(), importer.Request{HTTP: &importer.HTTPSource{URL: tt.url}, Target: target, Size: 8 << 20, Key: "k"})
			require.ErrorIs(t, err, importer.ErrAddressNotAllowed)
			assert.True(t, importer.Permanent(err))
			_, serr := os.Stat(target)
			assert.True(t, os.IsNotExist(serr))
		})
	}
	assert.Zero(t, loHits.Load(), "the refused server saw no request")
}
