package apiserver_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// streamEnv is a one-node simulated cluster whose node agent serves its
// endpoint, behind an API server that reaches it with its client
// certificate.
type streamEnv struct {
	ts       *testServer
	certs    *apiserver.Certificates
	c        *cluster.Cluster
	endpoint string // the node endpoint's URL
}

func startStreamEnv(t *testing.T) *streamEnv {
	t.Helper()
	return startStreamEnvWith(t, apiserver.GenericOptions{})
}

// startStreamEnvWith is startStreamEnv with opts for the API server
// (NodeTLS is set here).
func startStreamEnvWith(t *testing.T, opts apiserver.GenericOptions) *streamEnv {
	t.Helper()
	c, err := cluster.New(cluster.Options{Nodes: 1, Store: newStore(t)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Add(1)
	go func() { defer wg.Done(); _ = c.Start(ctx) }()

	certs, err := apiserver.EnsureCertificates(t.TempDir(), nil)
	require.NoError(t, err)
	certPEM, keyPEM, err := certs.IssueServingCert("node-1", []string{"127.0.0.1"})
	require.NoError(t, err)
	epTLS, err := node.EndpointTLSConfig(certs.CAPEM, certPEM, keyPEM)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "https://" + ln.Addr().String()
	ep := c.Node("node-1").Agent.Endpoint(node.EndpointOptions{})
	wg.Add(1)
	go func() { defer wg.Done(); _ = ep.Serve(ctx, ln, epTLS, url) }()

	nodeTLS, err := certs.NodeTLSConfig()
	require.NoError(t, err)
	opts.NodeTLS = nodeTLS
	ts := startServerWith(t, c.Store(), opts, certs)
	dc, err := dynamic.NewForConfig(ts.admin())
	require.NoError(t, err)
	_, err = dc.Resource(vmGVR).Namespace("default").Create(ctx, vmObject(t, "vm-0", "Always"), metav1.CreateOptions{})
	require.NoError(t, err)
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	defer wcancel()
	_, err = cluster.WaitFor(wctx, c.Store(), store.Key{Namespace: "default", Name: "vm-0"},
		func() *virtkit.VirtualMachineInstance { return &virtkit.VirtualMachineInstance{} },
		&virtkit.VirtualMachineInstanceList{}, func(v *virtkit.VirtualMachineInstance, found bool) bool {
			return found && v.Status.Phase == virtkit.Running
		})
	require.NoError(t, err, "VMI running")
	// The endpoint publishes its URL on the Node.
	require.Eventually(t, func() bool {
		n := &virtkit.Node{}
		return c.Store().Get(ctx, store.Key{Name: "node-1"}, n) == nil && n.Annotations[node.EndpointAnnotation] == url
	}, 30*time.Second, 50*time.Millisecond, "endpoint published")
	return &streamEnv{ts: ts, certs: certs, c: c, endpoint: url}
}

// adminTLS is a TLS client configuration with the admin certificate.
func (e *streamEnv) adminTLS(t *testing.T) *tls.Config {
	t.Helper()
	cert, err := tls.X509KeyPair(e.certs.AdminCert, e.certs.AdminKey)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(e.certs.CA)
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool}
}

// dial opens a stream subresource of vm-0 in ns; header carries a token.
func (e *streamEnv) dial(t *testing.T, cfg *tls.Config, header http.Header, ns, sub string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	d := websocket.Dialer{TLSClientConfig: cfg, Subprotocols: []string{apiserver.StreamSubprotocol}, HandshakeTimeout: 30 * time.Second}
	u := strings.Replace(e.ts.URL, "https://", "wss://", 1) + "/apis/subresources.kubevirt.io/v1/namespaces/" + ns + "/virtualmachineinstances/vm-0/" + sub
	c, resp, err := d.Dial(u, header)
	if resp != nil && resp.Body != nil {
		t.Cleanup(func() { resp.Body.Close() })
	}
	return c, resp, err
}

// wsReader reads a WebSocket's binary messages as a byte stream.
type wsReader struct {
	c   *websocket.Conn
	cur io.Reader
}

func (r *wsReader) Read(p []byte) (int, error) {
	for {
		if r.cur != nil {
			n, err := r.cur.Read(p)
			if n > 0 || err != io.EOF {
				return n, nil
			}
		}
		_, rd, err := r.c.NextReader()
		if err != nil {
			return 0, err
		}
		r.cur = rd
	}
}

func readUntil(t *testing.T, r *bufio.Reader, want string) string {
	t.Helper()
	var sb strings.Builder
	for !strings.Contains(sb.String(), want) {
		b, err := r.ReadByte()
		require.NoError(t, err, "read so far: %q", sb.String())
		sb.WriteByte(b)
	}
	return sb.String()
}

// The console of a simulated guest reaches the client through the API
// server and the node agent's endpoint: boot output, then a command and its
// answer.
func TestConsoleThroughNodeEndpoint(t *testing.T) {
	e := startStreamEnv(t)
	ws, resp, err := e.dial(t, e.adminTLS(t), nil, "default", "console")
	require.NoError(t, err)
	defer ws.Close()
	assert.Equal(t, apiserver.StreamSubprotocol, resp.Header.Get("Sec-WebSocket-Protocol"))
	r := bufio.NewReader(&wsReader{c: ws})
	_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	assert.Contains(t, readUntil(t, r, "/ # "), "Linux version")
	require.NoError(t, ws.WriteMessage(websocket.BinaryMessage, []byte("hostname\r")))
	assert.Contains(t, readUntil(t, r, "/ # "), "vm-0\r\n")
}

// Port-forward to a port on which the simulated guest runs no service is
// refused with a message saying how to declare one.
func TestPortForwardToUndeclaredPortOnSim(t *testing.T) {
	e := startStreamEnv(t)
	_, resp, err := e.dial(t, e.adminTLS(t), nil, "default", "portforward/22")
	require.Error(t, err)
	require.NotNil(t, resp)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	var st metav1.Status
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	assert.Contains(t, st.Message, "connection refused")
	assert.Contains(t, st.Message, "sim.virtkit.io/services")
	_, resp, err = e.dial(t, e.adminTLS(t), nil, "default", "portforward/0")
	require.Error(t, err)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "port 0")
}

// A user without rights on the namespace gets Forbidden for every stream
// verb, before anything reaches the node.
func TestStreamsForbidden(t *testing.T) {
	e := startStreamEnv(t)
	pool := x509.NewCertPool()
	pool.AddCert(e.certs.CA)
	alice := http.Header{"Authorization": {"Bearer alice-token"}}
	for _, sub := range []string{"console", "vnc", "portforward/22", "portforward/53/udp"} {
		t.Run(sub, func(t *testing.T) {
			_, resp, err := e.dial(t, &tls.Config{RootCAs: pool}, alice, "default", sub)
			require.Error(t, err)
			require.NotNil(t, resp)
			assert.Equal(t, http.StatusForbidden, resp.StatusCode)
			_, resp, err = e.dial(t, &tls.Config{RootCAs: pool}, nil, "default", sub)
			require.Error(t, err)
			assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "anonymous")
		})
	}
}

// Guest information comes from the node endpoint when the API server has
// no in-process source (node agents in other processes).
func TestGuestInfoThroughNodeEndpoint(t *testing.T) {
	e := startStreamEnv(t)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: e.adminTLS(t)}}
	var got map[string]any
	require.Eventually(t, func() bool {
		resp, err := client.Get(e.ts.URL + "/apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachineinstances/vm-0/guestosinfo")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&got) == nil
	}, 60*time.Second, 100*time.Millisecond, "guest agent connected")
	assert.Equal(t, "VirtualMachineInstanceGuestAgentInfo", got["kind"])
	assert.Equal(t, "vm-0", got["hostname"])
}

// The node endpoint refuses callers without a client certificate signed by
// the CA, and callers whose certificate is not the API server's.
func TestNodeEndpointRefusesOtherCallers(t *testing.T) {
	e := startStreamEnv(t)
	pool := x509.NewCertPool()
	pool.AddCert(e.certs.CA)
	path := "/v1/namespaces/default/virtualmachineinstances/vm-0/guestosinfo"
	noCert := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	_, err := noCert.Get(e.endpoint + path)
	require.Error(t, err, "no client certificate: the TLS handshake fails")

	admin := &http.Client{Transport: &http.Transport{TLSClientConfig: e.adminTLS(t)}}
	resp, err := admin.Get(e.endpoint + path)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "the admin's certificate is not the API server's")

	nodeTLS, err := e.certs.NodeTLSConfig()
	require.NoError(t, err)
	api := &http.Client{Transport: &http.Transport{TLSClientConfig: nodeTLS}}
	resp, err = api.Get(e.endpoint + "/v1/namespaces/default/virtualmachineinstances/missing/console")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}
