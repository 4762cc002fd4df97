package node_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// testCA issues certificates for the endpoint tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

func (ca *testCA) issue(t *testing.T, cn string, server bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	kd, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})
}

func (ca *testCA) clientTLS(t *testing.T, cn string) *tls.Config {
	t.Helper()
	c, k := ca.issue(t, cn, false)
	pair, err := tls.X509KeyPair(c, k)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool}
}

// Port-forward carries a TCP connection from the WebSocket to the address
// the VMI's status lists, both ways, over the endpoint's mutual TLS, when
// the operator allowed that network; without the allowance a reported
// loopback address is refused and never dialled.
func TestEndpointPortForward(t *testing.T) {
	ctx := t.Context()
	// The "guest": an echo server on loopback, the address in status.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port

	st := store.NewMemory()
	h := sim.New(sim.Options{Name: "ep-node"})
	var hv hypervisor.Hypervisor = struct {
		hypervisor.Hypervisor
	}{h} // only the Hypervisor methods: reached over the host's network like libvirt's guests; no console
	agent, err := node.New(node.Options{NodeName: "ep-node", Store: st, Hypervisor: hv})
	require.NoError(t, err)
	vmi := &virtkit.VirtualMachineInstance{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstance},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm"},
	}
	require.NoError(t, st.Create(ctx, vmi))
	vmi.Status.NodeName = "ep-node"
	vmi.Status.Phase = virtkit.Running
	vmi.Status.Interfaces = []virtkit.VirtualMachineInstanceNetworkInterface{{Name: "default", IP: "127.0.0.1", MAC: "52:54:00:00:00:01"}}
	require.NoError(t, st.UpdateStatus(ctx, vmi))
	_, err = h.Define(ctx, `<domain type='qemu'><name>ns_vm</name><uuid>8e1c7a3e-1d7c-4c57-9d53-2f4f0f7a1b09</uuid><memory unit='MiB'>64</memory><vcpu>1</vcpu></domain>`)
	require.NoError(t, err)

	ca := newTestCA(t)
	certPEM, keyPEM := ca.issue(t, "ep-node", true)
	cfg, err := node.EndpointTLSConfig(ca.pem, certPEM, keyPEM)
	require.NoError(t, err)
	// The test's "guest" is on loopback: the operator allows it.
	srv := httptest.NewUnstartedServer(agent.Endpoint(node.EndpointOptions{AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}))
	srv.TLS = cfg
	srv.StartTLS()
	defer srv.Close()
	wsURL := strings.Replace(srv.URL, "https://", "wss://", 1) + "/v1/namespaces/ns/virtualmachineinstances/vm/"

	// By default an address the node did not assign (here the guest's
	// report of 127.0.0.1) is refused before anything is dialled.
	strict := httptest.NewUnstartedServer(agent.Endpoint(node.EndpointOptions{}))
	strict.TLS = cfg
	strict.StartTLS()
	defer strict.Close()
	strictURL := strings.Replace(strict.URL, "https://", "wss://", 1) + "/v1/namespaces/ns/virtualmachineinstances/vm/"

	d := websocket.Dialer{TLSClientConfig: ca.clientTLS(t, node.EndpointClientUser), Subprotocols: []string{node.StreamSubprotocol}}
	ws, resp, err := d.DialContext(ctx, wsURL+"portforward/"+strconv.Itoa(port), nil)
	require.NoError(t, err)
	resp.Body.Close()
	defer ws.Close()
	assert.Equal(t, node.StreamSubprotocol, ws.Subprotocol())
	for _, msg := range []string{"hello", "guest port"} {
		require.NoError(t, ws.WriteMessage(websocket.BinaryMessage, []byte(msg)))
		_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		var got []byte
		for len(got) < len(msg) {
			_, data, err := ws.ReadMessage()
			require.NoError(t, err)
			got = append(got, data...)
		}
		assert.Equal(t, msg, string(got))
	}

	// UDP: each message is one datagram each way.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer pc.Close()
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo(append([]byte("echo:"), buf[:n]...), from)
		}
	}()
	uws, resp, err := d.DialContext(ctx, wsURL+"portforward/"+strconv.Itoa(pc.LocalAddr().(*net.UDPAddr).Port)+"/udp", nil)
	require.NoError(t, err)
	resp.Body.Close()
	defer uws.Close()
	for _, msg := range []string{"one", "two"} {
		require.NoError(t, uws.WriteMessage(websocket.BinaryMessage, []byte(msg)))
		_ = uws.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, data, err := uws.ReadMessage()
		require.NoError(t, err)
		assert.Equal(t, "echo:"+msg, string(data))
	}

	// Errors before the upgrade carry their status.
	for _, tc := range []struct {
		sub  string
		code int
	}{
		{"console", http.StatusNotImplemented}, // the wrapped hypervisor has no console
		{"portforward/1", http.StatusBadGateway},
	} {
		_, resp, err := d.DialContext(ctx, wsURL+tc.sub, nil)
		require.Error(t, err, tc.sub)
		require.NotNil(t, resp, tc.sub)
		resp.Body.Close()
		assert.Equal(t, tc.code, resp.StatusCode, tc.sub)
	}
	// Another certificate of the same CA is not the API server's.
	other := websocket.Dialer{TLSClientConfig: ca.clientTLS(t, "someone"), Subprotocols: []string{node.StreamSubprotocol}}
	_, resp, err = other.DialContext(ctx, wsURL+"portforward/"+strconv.Itoa(port), nil)
	require.Error(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)

	before := accepted.Load()
	_, resp, err = d.DialContext(ctx, strictURL+"portforward/"+strconv.Itoa(port), nil)
	require.Error(t, err)
	require.NotNil(t, resp)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.NotEqual(t, http.StatusSwitchingProtocols, resp.StatusCode)
	assert.Contains(t, string(body), "127.0.0.1")
	assert.Equal(t, before, accepted.Load(), "the reported loopback address was never dialled")
}
