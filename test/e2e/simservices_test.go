package e2e

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/internal/rfb"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// servicesVM declares the simulated guest's http and echo services and
// gives cloud-init an SSH key (%s) for user fedora.
const servicesVM = `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: svc
spec:
  runStrategy: Always
  template:
    metadata:
      annotations:
        sim.virtkit.io/services: "http:8080,echo:7"
    spec:
      domain:
        memory:
          guest: 64Mi
        devices:
          interfaces:
          - name: default
            masquerade: {}
      networks:
      - name: default
        pod: {}
      volumes:
      - name: cloudinitdisk
        cloudInitNoCloud:
          userData: |
            #cloud-config
            users:
            - name: fedora
              ssh_authorized_keys:
              - %s
`

// apiCluster is a testCluster whose controller serves the API and whose
// nodes serve their endpoints, so the CLI reaches guests through both.
type apiCluster struct {
	*testCluster
	kubeconfig string
}

func newAPICluster(t *testing.T, nodes ...string) *apiCluster {
	t.Helper()
	c := &apiCluster{testCluster: newCluster(t)}
	c.kubeconfig = filepath.Join(c.dir, "admin.kubeconfig")
	pki := filepath.Join(c.dir, "pki")
	ctl := c.start("controller-api", "controller", "--store", c.store, "--leader-ttl", leaderTTL,
		"--api-addr", "127.0.0.1:0", "--api-cert-dir", pki, "--write-kubeconfig", c.kubeconfig)
	c.waitFor("the API and its kubeconfig", 60*time.Second, func() (bool, string) {
		_, err := os.Stat(c.kubeconfig)
		return err == nil && ctl.logHas("api: https://"), fmt.Sprintf("kubeconfig: %v", err)
	})
	for _, n := range nodes {
		c.start(n, "node", "--name", n, "--store", c.store, "--hypervisor", "sim",
			"--sim-state", c.statePath(n), "--heartbeat-interval", heartbeat, "--status-interval", "1s",
			"--endpoint-addr", "127.0.0.1:0", "--endpoint-cert-dir", pki)
	}
	c.waitFor("ready nodes that take migrations and serve streams", 60*time.Second, func() (bool, string) {
		var state []string
		ok := true
		for _, name := range nodes {
			n := &virtkit.Node{}
			if err := c.st.Get(t.Context(), store.Key{Name: name}, n); err != nil {
				return false, err.Error()
			}
			_, unsupported := n.Annotations[virtkit.MigrationUnsupportedAnnotation]
			endpoint := n.Annotations[node.EndpointAnnotation]
			ready := virtkit.IsConditionTrue(n.Status.Conditions, virtkit.NodeReady)
			ok = ok && ready && !unsupported && endpoint != ""
			state = append(state, fmt.Sprintf("%s ready=%v unsupported=%v endpoint=%q", name, ready, unsupported, endpoint))
		}
		return ok, strings.Join(state, "; ")
	})
	return c
}

// portForward runs `virtkit port-forward --stdio vmi/NAME PORT` and returns
// its standard input and output as a connection; closing it ends the
// process.
func (c *apiCluster) portForward(t *testing.T, vmi string, port int) net.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	cmd := exec.CommandContext(ctx, binary, "port-forward", "--stdio", "vmi/"+vmi, fmt.Sprint(port), "--kubeconfig", c.kubeconfig)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	client, mine := net.Pipe()
	go func() { _, _ = io.Copy(stdin, mine); _ = stdin.Close() }()
	go func() { _, _ = io.Copy(mine, stdout); _ = mine.Close() }()
	t.Cleanup(func() {
		_ = client.Close()
		_ = cmd.Wait()
		cancel()
	})
	return client
}

// httpGet sends GET path to the guest's port 8080 through port-forward.
func (c *apiCluster) httpGet(t *testing.T, vmi, path string) string {
	t.Helper()
	conn := c.portForward(t, vmi, 8080)
	defer conn.Close()
	req, err := http.NewRequest(http.MethodGet, "http://"+vmi+":8080"+path, nil)
	require.NoError(t, err)
	require.NoError(t, conn.SetDeadline(time.Now().Add(time.Minute)))
	require.NoError(t, req.Write(conn))
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	return string(body)
}

// sshRun logs into the guest's port 22 through port-forward and runs cmd;
// it returns the output and the host key the server presented.
func (c *apiCluster) sshRun(t *testing.T, vmi string, signer ssh.Signer, cmd string) (string, ssh.PublicKey) {
	t.Helper()
	var hostKey ssh.PublicKey
	conn := c.portForward(t, vmi, 22)
	cc, chans, reqs, err := ssh.NewClientConn(conn, "vmi/"+vmi, &ssh.ClientConfig{User: "fedora",
		Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, Timeout: time.Minute,
		HostKeyCallback: func(_ string, _ net.Addr, k ssh.PublicKey) error { hostKey = k; return nil }})
	require.NoError(t, err)
	client := ssh.NewClient(cc, chans, reqs)
	defer client.Close()
	sess, err := client.NewSession()
	require.NoError(t, err)
	out, err := sess.CombinedOutput(cmd)
	require.NoError(t, err, "%s", out)
	return string(out), hostKey
}

// vncViewer runs `virtkit vnc NAME --proxy-only` and connects an RFB
// client to the port it prints.
func (c *apiCluster) vncViewer(t *testing.T, vmi string) *rfb.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	cmd := exec.CommandContext(ctx, binary, "vnc", vmi, "--proxy-only", "--kubeconfig", c.kubeconfig)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	var proxy struct{ Port int }
	require.NoError(t, json.Unmarshal([]byte(line), &proxy), "%q", line)
	conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", proxy.Port))
	require.NoError(t, err)
	rc, err := rfb.Handshake(ctx, conn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rc.Close() })
	return rc
}

// vncWait requests updates until a line of the display equals want.
func vncWait(ctx context.Context, t *testing.T, c *rfb.Client, want string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	incremental := false
	for {
		img, err := c.Update(ctx, incremental)
		require.NoError(t, err, "waiting for %q on the display", want)
		lines, err := sim.VNCText(img)
		require.NoError(t, err)
		if slices.Contains(lines, want) {
			return lines
		}
		incremental = true
	}
}

// TestMultiProcessGuestServicesAcrossMigration runs `virtkit controller`
// with its API and two `virtkit node --hypervisor sim` processes serving
// their endpoints, on a real etcd. Through the API and the node that runs
// the guest, port-forward reaches its HTTP service and SSH (with the key
// cloud-init gives) before a live migration between the node processes
// and, on the other node, after it, with the same SSH host key; open
// connections break at the switchover; the VNC display shows after the
// migration what was typed into it before.
func TestMultiProcessGuestServicesAcrossMigration(t *testing.T) {
	nodes := []string{"node-a", "node-b"}
	c := newAPICluster(t, nodes...)
	ctx := t.Context()

	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	signer, err := ssh.NewSignerFromKey(priv)
	require.NoError(t, err)
	pub := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))
	vmPath := filepath.Join(c.dir, "vm.yaml")
	require.NoError(t, os.WriteFile(vmPath, []byte(fmt.Sprintf(servicesVM, pub)), 0o644))
	c.run("apply", "-f", vmPath, "--kubeconfig", c.kubeconfig)
	var source string
	c.waitFor("the VMI running", 60*time.Second, func() (bool, string) {
		vmi := &virtkit.VirtualMachineInstance{}
		if err := c.st.Get(ctx, store.Key{Namespace: "default", Name: "svc"}, vmi); err != nil {
			return false, err.Error()
		}
		source = vmi.Status.NodeName
		return vmi.Status.Phase == virtkit.Running && source != "", fmt.Sprintf("phase %s on %q", vmi.Status.Phase, source)
	})
	target := nodes[0]
	if source == target {
		target = nodes[1]
	}

	const wantHTTP = "virtkit simulated guest svc: GET /status (http service on port 8080)\n"
	assert.Equal(t, wantHTTP, c.httpGet(t, "svc", "/status"))
	out, hostKey := c.sshRun(t, "svc", signer, "echo hello && hostname")
	assert.Equal(t, "hello\nsvc\n", out)

	// Open across the migration: an echo connection and a VNC viewer
	// that typed a command.
	echo := c.portForward(t, "svc", 7)
	_, err = io.WriteString(echo, "ping\n")
	require.NoError(t, err)
	echoed := bufio.NewReader(echo)
	line, err := echoed.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "ping\n", line)
	viewer := c.vncViewer(t, "svc")
	require.NoError(t, viewer.Type(ctx, rfb.Keysyms("echo typed-on-"+source+"\n")...))
	vncWait(ctx, t, viewer, "typed-on-"+source)

	c.run("migrate", "svc", "--kubeconfig", c.kubeconfig)
	c.waitFor("the migration to complete on "+target, 90*time.Second, func() (bool, string) {
		vmi := &virtkit.VirtualMachineInstance{}
		require.NoError(t, c.st.Get(ctx, store.Key{Namespace: "default", Name: "svc"}, vmi))
		ms := vmi.Status.MigrationState
		if ms == nil {
			return false, "no migrationState"
		}
		if ms.Failed {
			t.Fatalf("migration failed: %+v", ms)
		}
		return ms.Completed && vmi.Status.NodeName == target && vmi.Status.Phase == virtkit.Running,
			fmt.Sprintf("completed=%v node=%s phase=%s", ms.Completed, vmi.Status.NodeName, vmi.Status.Phase)
	})

	// The switchover broke the connections to the source.
	_ = echo.SetReadDeadline(time.Now().Add(30 * time.Second)) // fails once the pipe closed
	_, err = echoed.ReadString('\n')
	assert.ErrorIs(t, err, io.EOF, "the echo connection ends with the guest's run on the source")
	uctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	_, err = viewer.Update(uctx, true)
	cancel()
	require.Error(t, err, "the VNC viewer is disconnected")
	assert.NotErrorIs(t, err, context.DeadlineExceeded)

	// The guest answers on the target node.
	assert.Equal(t, wantHTTP, c.httpGet(t, "svc", "/status"))
	out, after := c.sshRun(t, "svc", signer, "echo hello && hostname")
	assert.Equal(t, "hello\nsvc\n", out)
	assert.Equal(t, hostKey.Marshal(), after.Marshal(), "the same SSH host key answers on the target")
	shot := filepath.Join(c.dir, "after.png")
	c.run("vnc", "svc", "--screenshot", shot, "--kubeconfig", c.kubeconfig)
	f, err := os.Open(shot)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	lines, err := sim.VNCText(img)
	require.NoError(t, err)
	assert.Contains(t, lines, "virtkit simulated guest svc ready")
	i := slices.Index(lines, "/ # echo typed-on-"+source)
	require.GreaterOrEqual(t, i, 0, "the display typed on the source shows on the target: %q", lines)
	assert.Equal(t, []string{"typed-on-" + source, "/ #"}, lines[i+1:i+3])

	// The guest really runs in the target's process now.
	dom := node.DomainName("default", "svc")
	for _, n := range nodes {
		doms, err := sim.ReadState(c.statePath(n))
		require.NoError(t, err)
		active := slices.ContainsFunc(doms, func(d sim.PersistedDomain) bool { return d.Name == dom && d.State.IsActive() })
		assert.Equal(t, n == target, active, "guest active on %s", n)
	}
}
