package upload_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/cdi/importer"
	"github.com/virtkit/virtkit/cdi/upload"
)

// elsewhere is a proxy's receiver whose volumes are all on other
// processes' nodes.
type elsewhere struct{}

func (elsewhere) ReceiveUpload(_ context.Context, ns, name string, _ io.Reader) (func(context.Context) error, error) {
	return nil, fmt.Errorf("%w: datavolume %s/%s is on node n2: %w", importer.ErrNotUploadReady, ns, name, upload.ErrElsewhere)
}

// busyFor refuses uploads to claim name as busy.
type busyFor struct {
	*receiver
	name string
}

func (b busyFor) ReceiveUpload(ctx context.Context, ns, name string, body io.Reader) (func(context.Context) error, error) {
	if name == b.name {
		return nil, fmt.Errorf("%w: %s/%s", importer.ErrUploadInProgress, ns, name)
	}
	return b.receiver.ReceiveUpload(ctx, ns, name, body)
}

// locator finds every volume at one upload server.
type locator string

func (l locator) LocateUpload(context.Context, string, string) (string, error) { return string(l), nil }

func TestParseServerPath(t *testing.T) {
	ns, name, ok := upload.ParseServerPath(upload.ServerPath("ns", "disk"))
	require.True(t, ok)
	assert.Equal(t, "ns/disk", ns+"/"+name)
	for _, p := range []string{"/v1/namespaces/ns/datavolumes/disk", "/v1/namespaces//datavolumes/disk/upload",
		"/v1/namespaces/ns/virtualmachineinstances/disk/upload", "/v1/namespaces/ns/datavolumes/disk/upload/x"} {
		_, _, ok := upload.ParseServerPath(p)
		assert.False(t, ok, p)
	}
}

// The proxy forwards an upload its receiver refuses with ErrElsewhere to
// the volume's upload server, sync (answered once converted) and async
// (answered once received); the server's refusal reaches the uploader
// with its status and message.
func TestProxyForwardsToUploadServer(t *testing.T) {
	rec := &receiver{got: map[string]string{}, finished: map[string]bool{}}
	var mu sync.Mutex
	var background []func(context.Context)
	node := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ns, name, ok := upload.ParseServerPath(r.URL.Path)
		if !ok {
			http.NotFound(w, r)
			return
		}
		upload.ServeUpload(w, r, busyFor{rec, "busy"}, ns, name, func(f func(context.Context)) {
			mu.Lock()
			defer mu.Unlock()
			background = append(background, f)
		})
	}))
	defer node.Close()
	tokens := &upload.Tokens{Key: testKey(0)}
	p, err := upload.NewProxy(upload.ProxyOptions{Tokens: tokens, Receiver: elsewhere{},
		Forwarder: &upload.Forwarder{Client: node.Client(), Locator: locator(node.URL)}})
	require.NoError(t, err)
	defer p.Close()
	proxy := httptest.NewTLSServer(p)
	defer proxy.Close()
	post := func(path, claim, body string) (int, string) {
		tok, err := tokens.Issue("ns", claim)
		require.NoError(t, err)
		req, err := http.NewRequest(http.MethodPost, proxy.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := proxy.Client().Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		msg, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(msg))
	}

	code, msg := post(upload.PathUpload, "sync", "sync-data")
	require.Equal(t, http.StatusOK, code, msg)
	rec.mu.Lock()
	assert.Equal(t, "sync-data", rec.got["ns/sync"])
	assert.True(t, rec.finished["ns/sync"], "a sync upload is converted before the answer")
	rec.mu.Unlock()

	code, msg = post(upload.PathUploadAsync, "async", "async-data")
	require.Equal(t, http.StatusOK, code, msg)
	rec.mu.Lock()
	assert.Equal(t, "async-data", rec.got["ns/async"])
	assert.False(t, rec.finished["ns/async"], "an async upload is answered before its conversion")
	rec.mu.Unlock()
	mu.Lock()
	require.Len(t, background, 1)
	background[0](context.Background())
	mu.Unlock()
	rec.mu.Lock()
	assert.True(t, rec.finished["ns/async"])
	rec.mu.Unlock()

	code, msg = post(upload.PathUpload, "busy", "x")
	assert.Equal(t, http.StatusConflict, code, "the upload server's status reaches the uploader")
	assert.NotEmpty(t, msg)
}

// Without a forwarder, an upload to another process's node is refused
// with 503 naming the volume.
func TestProxyWithoutForwarder(t *testing.T) {
	tokens := &upload.Tokens{Key: testKey(0)}
	p, err := upload.NewProxy(upload.ProxyOptions{Tokens: tokens, Receiver: elsewhere{}})
	require.NoError(t, err)
	defer p.Close()
	srv := httptest.NewTLSServer(p)
	defer srv.Close()
	tok, err := tokens.Issue("ns", "disk")
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, srv.URL+upload.PathUpload, strings.NewReader("x"))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Contains(t, string(msg), "ns/disk")

	_, err = upload.NewProxy(upload.ProxyOptions{Tokens: tokens})
	assert.ErrorIs(t, err, upload.ErrInvalidProxyOptions, "a receiver or a forwarder is required")
}
