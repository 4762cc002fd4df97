package export_test

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/cdi/export"
)

func TestManagerEnsureStop(t *testing.T) {
	dir := t.TempDir()
	data, p := disk(t, dir, "vol.img", 1<<20)
	m, err := export.NewManager(export.ManagerOptions{AllowedDirs: []string{dir}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan error, 1)
	go func() { started <- m.Start(ctx) }()
	vols := []export.Volume{{Name: "vol", Path: p}}

	ep, err := m.Ensure(ctx, "ns", "exp", []byte(token), vols)
	require.NoError(t, err)
	assert.True(t, m.Running("ns", "exp"))
	assert.Equal(t, m.CA().CertPEM(), ep.CACert)
	assert.Equal(t, ep.InternalURL+export.ExternalPrefix("ns", "exp"), ep.ExternalURL)
	again, err := m.Ensure(ctx, "ns", "exp", []byte(token), vols)
	require.NoError(t, err)
	assert.Equal(t, ep, again, "the same export keeps its server")

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: m.CA().Pool()}}, Timeout: 30 * time.Second}
	get := func(url, tok string) (int, []byte) {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		require.NoError(t, err)
		req.Header.Set(export.TokenHeader, tok)
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, b
	}
	code, body := get(ep.ExternalURL+"/volumes/vol/disk.img", token)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, data, body)

	// A new token replaces the server: the old token stops working.
	ep2, err := m.Ensure(ctx, "ns", "exp", []byte("another"), vols)
	require.NoError(t, err)
	code, _ = get(ep2.InternalURL+"/volumes/vol/disk.img", token)
	assert.Equal(t, http.StatusUnauthorized, code)

	require.NoError(t, m.Stop(ctx, "ns", "exp"))
	assert.False(t, m.Running("ns", "exp"))
	require.NoError(t, m.Stop(ctx, "ns", "exp"), "stopping twice is fine")

	cancel()
	select {
	case err := <-started:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Start did not return")
	}
	_, err = m.Ensure(context.Background(), "ns", "exp", []byte(token), vols)
	require.Error(t, err, "a stopped manager starts no servers")
}
