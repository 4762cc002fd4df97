package subresources_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver/subresources"
	"github.com/virtkit/virtkit/store"
)

// nodeAgent is a fake node agent endpoint over TLS: its WebSockets echo
// what they get prefixed with the path, its guestosinfo answers JSON and
// its screenshot a tiny "PNG".
func nodeAgent(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/guestosinfo"):
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"hostname":"from-node"}`))
		case strings.HasSuffix(r.URL.Path, "/vnc/screenshot"):
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write([]byte("PNG:" + r.URL.RawQuery))
		case websocket.IsWebSocketUpgrade(r):
			up := websocket.Upgrader{Subprotocols: []string{subresources.StreamSubprotocol}}
			c, err := up.Upgrade(w, r, nil)
			if err != nil {
				return
			}
			defer c.Close()
			for {
				mt, data, err := c.ReadMessage()
				if err != nil {
					return
				}
				if err := c.WriteMessage(mt, append([]byte(r.URL.Path+" "), data...)); err != nil {
					return
				}
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// streamEnv is a handler in front of a fake node agent that runs VMI
// ns/vm, served over HTTP with the user named by the X-User header.
type streamEnv struct {
	url   string
	agent *httptest.Server
}

func startStreamEnv(t *testing.T, opts subresources.Options) *streamEnv {
	t.Helper()
	agent := nodeAgent(t)
	pool := x509.NewCertPool()
	pool.AddCert(agent.Certificate())
	opts.NodeTLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	st := store.NewMemory()
	opts.Store = st
	ctx := t.Context()
	require.NoError(t, st.Create(ctx, &virtkit.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1",
		Annotations: map[string]string{subresources.NodeEndpointAnnotation: agent.URL}}}))
	vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm"}}
	require.NoError(t, st.Create(ctx, vmi))
	vmi.Status.Phase, vmi.Status.NodeName = virtkit.Running, "n1"
	require.NoError(t, st.UpdateStatus(ctx, vmi))
	h, err := subresources.New(opts)
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u := &user.DefaultInfo{Name: r.Header.Get("X-User")}
		h.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), u)))
	}))
	t.Cleanup(srv.Close)
	return &streamEnv{url: srv.URL, agent: agent}
}

func (e *streamEnv) dial(t *testing.T, who, sub string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	d := websocket.Dialer{Subprotocols: []string{subresources.StreamSubprotocol}, HandshakeTimeout: 10 * time.Second}
	u := "ws" + strings.TrimPrefix(e.url, "http") + base + "/namespaces/ns/" + sub
	c, resp, err := d.Dial(u, http.Header{"X-User": {who}})
	if resp != nil && resp.Body != nil {
		t.Cleanup(func() { resp.Body.Close() })
	}
	if c != nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, resp, err
}

// Streams reach the node agent's endpoint at the VMI's path; a VM's
// portforward goes to its VMI's.
func TestStreamsReachNodeAgent(t *testing.T) {
	e := startStreamEnv(t, subresources.Options{})
	for sub, want := range map[string]string{
		"virtualmachineinstances/vm/console":            "/v1/namespaces/ns/virtualmachineinstances/vm/console hello",
		"virtualmachineinstances/vm/vnc":                "/v1/namespaces/ns/virtualmachineinstances/vm/vnc hello",
		"virtualmachineinstances/vm/portforward/22/udp": "/v1/namespaces/ns/virtualmachineinstances/vm/portforward/22/udp hello",
		"virtualmachines/vm/portforward/80":             "/v1/namespaces/ns/virtualmachineinstances/vm/portforward/80 hello",
	} {
		t.Run(sub, func(t *testing.T) {
			c, resp, err := e.dial(t, "bob", sub)
			require.NoError(t, err)
			assert.Equal(t, subresources.StreamSubprotocol, resp.Header.Get("Sec-WebSocket-Protocol"))
			require.NoError(t, c.WriteMessage(websocket.BinaryMessage, []byte("hello")))
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			mt, got, err := c.ReadMessage()
			require.NoError(t, err)
			assert.Equal(t, websocket.BinaryMessage, mt)
			assert.Equal(t, want, string(got))
		})
	}
	_, resp, err := e.dial(t, "bob", "virtualmachineinstances/other/console")
	require.Error(t, err)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "no such VMI")
}

// Guest information and screenshots come from the node agent's endpoint.
func TestNodeAgentRequests(t *testing.T) {
	e := startStreamEnv(t, subresources.Options{})
	get := func(path string) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, e.url+base+"/namespaces/ns/virtualmachineinstances/vm/"+path, nil)
		require.NoError(t, err)
		req.Header.Set("X-User", "bob")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	code, body := get("guestosinfo")
	assert.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"hostname":"from-node"}`, body)
	code, body = get("vnc/screenshot?moveCursor=true")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "PNG:moveCursor=true", body)
}

// Streams over the per-user or total bound are refused with 429 and a
// TooManyRequests Status naming the bound; a closed stream frees its slot.
func TestStreamLimits(t *testing.T) {
	e := startStreamEnv(t, subresources.Options{MaxStreams: 3, MaxStreamsPerUser: 2})
	refused := func(t *testing.T, resp *http.Response, err error, want string) {
		t.Helper()
		require.Error(t, err)
		require.NotNil(t, resp)
		assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		var st metav1.Status
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
		assert.Equal(t, metav1.StatusReasonTooManyRequests, st.Reason)
		assert.Contains(t, st.Message, want)
	}
	var bobs []*websocket.Conn
	for range 2 {
		c, _, err := e.dial(t, "bob", "virtualmachineinstances/vm/console")
		require.NoError(t, err)
		bobs = append(bobs, c)
	}
	_, resp, err := e.dial(t, "bob", "virtualmachineinstances/vm/console")
	refused(t, resp, err, "limit per user")
	_, _, err = e.dial(t, "alice", "virtualmachineinstances/vm/vnc")
	require.NoError(t, err, "alice has her own per-user budget")
	_, resp, err = e.dial(t, "alice", "virtualmachineinstances/vm/vnc")
	refused(t, resp, err, "streams open, its limit")

	require.NoError(t, bobs[0].WriteControl(websocket.CloseMessage,
		websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second)))
	_ = bobs[0].Close()
	require.Eventually(t, func() bool {
		_, _, err := e.dial(t, "bob", "virtualmachineinstances/vm/console")
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "slot freed")
}
