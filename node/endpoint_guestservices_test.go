package node_test

import (
	"bufio"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// wsConn turns a port-forward WebSocket into a byte stream, as virtkit
// port-forward does.
func wsConn(t *testing.T, ws *websocket.Conn) net.Conn {
	t.Helper()
	client, mine := net.Pipe()
	go func() {
		defer mine.Close()
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			if _, err := mine.Write(data); err != nil {
				return
			}
		}
	}()
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := mine.Read(buf)
			if err != nil {
				_ = ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
				return
			}
			if err := ws.WriteMessage(websocket.BinaryMessage, buf[:n]); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { _ = client.Close(); _ = ws.Close() })
	return client
}

// On the simulated hypervisor port-forward reaches the guest's modelled
// services through DialGuest: the SSH server admits the key the VMI's
// cloud-init gives and runs the simulated shell, the declared HTTP port
// answers GET, the echo port echoes, an undeclared port is refused.
func TestEndpointPortForwardSimulatedServices(t *testing.T) {
	ctx := t.Context()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	signer, err := ssh.NewSignerFromKey(priv)
	require.NoError(t, err)
	authorized := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))

	st := store.NewMemory()
	h := sim.New(sim.Options{Name: "svc-node"})
	agent, err := node.New(node.Options{NodeName: "svc-node", Store: st, Hypervisor: h})
	require.NoError(t, err)
	vmi := &virtkit.VirtualMachineInstance{
		TypeMeta: metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstance},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm",
			Annotations: map[string]string{sim.ServicesAnnotation: "http:8080,echo:7"}},
		Spec: virtkit.VirtualMachineInstanceSpec{Volumes: []virtkit.Volume{{Name: "cloudinit",
			VolumeSource: virtkit.VolumeSource{CloudInitNoCloud: &virtkit.CloudInitNoCloudSource{
				UserData: "#cloud-config\nusers:\n  - name: fedora\n    ssh_authorized_keys: [" + authorized + "]\n"}}}}},
	}
	require.NoError(t, st.Create(ctx, vmi))
	vmi.Status.NodeName = "svc-node"
	vmi.Status.Phase = virtkit.Running
	require.NoError(t, st.UpdateStatus(ctx, vmi))
	_, err = h.Define(ctx, `<domain type='qemu'><name>ns_vm</name><uuid>8e1c7a3e-1d7c-4c57-9d53-2f4f0f7a1b10</uuid><memory unit='MiB'>64</memory><vcpu>1</vcpu></domain>`)
	require.NoError(t, err)
	require.NoError(t, h.Start(ctx, "ns_vm", hypervisor.StartOptions{}))

	ca := newTestCA(t)
	certPEM, keyPEM := ca.issue(t, "svc-node", true)
	cfg, err := node.EndpointTLSConfig(ca.pem, certPEM, keyPEM)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(agent.Endpoint(node.EndpointOptions{}))
	srv.TLS = cfg
	srv.StartTLS()
	defer srv.Close()
	wsURL := strings.Replace(srv.URL, "https://", "wss://", 1) + "/v1/namespaces/ns/virtualmachineinstances/vm/portforward/"
	d := websocket.Dialer{TLSClientConfig: ca.clientTLS(t, node.EndpointClientUser), Subprotocols: []string{node.StreamSubprotocol}}
	forward := func(port int) (net.Conn, int, string) {
		ws, resp, err := d.DialContext(ctx, fmt.Sprintf("%s%d", wsURL, port), nil)
		if err != nil {
			require.NotNil(t, resp, "%v", err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return nil, resp.StatusCode, string(body)
		}
		resp.Body.Close()
		return wsConn(t, ws), resp.StatusCode, ""
	}

	conn, _, msg := forward(22)
	require.NotNil(t, conn, msg)
	cc, chans, reqs, err := ssh.NewClientConn(conn, "vm:22", &ssh.ClientConfig{User: "fedora",
		Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 10 * time.Second})
	require.NoError(t, err)
	client := ssh.NewClient(cc, chans, reqs)
	defer client.Close()
	sess, err := client.NewSession()
	require.NoError(t, err)
	out, err := sess.CombinedOutput("echo hello")
	require.NoError(t, err)
	assert.Equal(t, "hello\n", string(out))

	conn, _, msg = forward(8080)
	require.NotNil(t, conn, msg)
	req, err := http.NewRequest(http.MethodGet, "http://vm:8080/ready", nil)
	require.NoError(t, err)
	require.NoError(t, req.Write(conn))
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), "GET /ready")

	conn, _, msg = forward(7)
	require.NotNil(t, conn, msg)
	_, err = conn.Write([]byte("ping\n"))
	require.NoError(t, err)
	line, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "ping\n", line)

	conn, code, msg := forward(9)
	assert.Nil(t, conn)
	assert.Equal(t, http.StatusBadGateway, code)
	assert.Contains(t, msg, "connection refused")

	// A paused guest refuses.
	require.NoError(t, h.Pause(ctx, "ns_vm"))
	conn, code, msg = forward(7)
	assert.Nil(t, conn)
	assert.Equal(t, http.StatusConflict, code)
	assert.Contains(t, msg, "connection refused")
}
