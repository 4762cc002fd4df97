package main

import (
	"bufio"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

// simServicesVM declares the simulated guest's services and gives cloud-init
// an SSH key (%s) for user fedora.
const simServicesVM = `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: vm-svc
spec:
  runStrategy: Always
  template:
    metadata:
      annotations:
        sim.virtkit.io/services: "http:8080,echo:7"
    spec:
      domain:
        devices: {}
        memory:
          guest: 128Mi
      volumes:
      - name: containerdisk
        containerDisk:
          image: quay.io/kubevirt/cirros-container-disk-demo
      - name: cloudinitdisk
        cloudInitNoCloud:
          userData: |
            #cloud-config
            users:
            - name: fedora
              ssh_authorized_keys:
              - %s
`

// portForwardStdio runs `virtkit port-forward --stdio TARGET PORT` in
// process and returns its standard input and output as a connection.
func portForwardStdio(t *testing.T, kc, target string, port int) net.Conn {
	t.Helper()
	cmd := newRootCmd()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errOut lockedBuffer
	cmd.SetIn(inR)
	cmd.SetOut(outW)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"port-forward", "--stdio", target, fmt.Sprint(port), "--kubeconfig", kc})
	done := make(chan error, 1)
	go func() {
		err := cmd.ExecuteContext(t.Context())
		_ = outW.CloseWithError(fmt.Errorf("port-forward ended: %v: %s", err, &errOut))
		done <- err
	}()
	client, mine := net.Pipe()
	go func() { _, _ = io.Copy(inW, mine); _ = inW.Close() }()
	go func() { _, _ = io.Copy(mine, outR); _ = mine.Close() }()
	t.Cleanup(func() {
		_ = client.Close()
		_ = inW.Close()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("port-forward did not end")
		}
	})
	return client
}

// sshEcho logs into the guest over `virtkit port-forward --stdio vmi/NAME 22`
// with signer and runs `echo hello`.
func sshEcho(t *testing.T, kc string, signer ssh.Signer, hostKey ssh.HostKeyCallback) string {
	t.Helper()
	conn := portForwardStdio(t, kc, "vmi/vm-svc", 22)
	cc, chans, reqs, err := ssh.NewClientConn(conn, "vmi/vm-svc", &ssh.ClientConfig{User: "fedora",
		Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: hostKey, Timeout: 30 * time.Second})
	require.NoError(t, err)
	client := ssh.NewClient(cc, chans, reqs)
	defer client.Close()
	sess, err := client.NewSession()
	require.NoError(t, err)
	out, err := sess.CombinedOutput("echo hello")
	require.NoError(t, err)
	return string(out)
}

// The simulated guest's declared services are reached through the API and
// the node's port-forward: ssh with the key cloud-init gives, an HTTP GET
// and echo; after a live migration to the other simulated node they answer
// again, with the same SSH host key.
func TestSimulatedGuestServicesOnAPI(t *testing.T) {
	kc := startAPIController(t, "--nodes", "2", "--heartbeat-interval", "200ms")
	c := cli{t: t, kubeconfig: kc}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	signer, err := ssh.NewSignerFromKey(priv)
	require.NoError(t, err)
	manifest := filepath.Join(t.TempDir(), "vm.yaml")
	pub := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))
	require.NoError(t, os.WriteFile(manifest, []byte(fmt.Sprintf(simServicesVM, pub)), 0o644))
	c.ok("apply", "-f", manifest)
	c.eventually("Running", "get", "vmi", "vm-svc")
	require.Eventually(t, func() bool {
		out, _, _ := c.run(t.Context(), "get", "nodes", "-o", "jsonpath={.items[*].metadata.annotations}")
		return strings.Count(out, "https://127.0.0.1:") == 2
	}, 30*time.Second, 100*time.Millisecond, "both nodes publish their endpoints")

	var hostKey ssh.PublicKey
	record := func(_ string, _ net.Addr, k ssh.PublicKey) error { hostKey = k; return nil }
	assert.Equal(t, "hello\n", sshEcho(t, kc, signer, record))
	checkServices := func() {
		t.Helper()
		conn := portForwardStdio(t, kc, "vmi/vm-svc", 8080)
		req, err := http.NewRequest(http.MethodGet, "http://vm-svc:8080/status", nil)
		require.NoError(t, err)
		require.NoError(t, req.Write(conn))
		resp, err := http.ReadResponse(bufio.NewReader(conn), req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "virtkit simulated guest vm-svc: GET /status (http service on port 8080)\n", string(body))

		conn = portForwardStdio(t, kc, "vm/vm-svc", 7)
		_, err = io.WriteString(conn, "ping\n")
		require.NoError(t, err)
		line, err := bufio.NewReader(conn).ReadString('\n')
		require.NoError(t, err)
		assert.Equal(t, "ping\n", line)
	}
	checkServices()
	assert.Contains(t, c.fails("port-forward", "--stdio", "vmi/vm-svc", "9"), "connection refused")

	src := c.ok("get", "vmi", "vm-svc", "-o", "jsonpath={.status.nodeName}")
	require.NotEmpty(t, src)
	c.ok("migrate", "vm-svc")
	require.Eventually(t, func() bool {
		out, _, _ := c.run(t.Context(), "get", "vmim", "-o", "jsonpath={.items[0].status.phase}")
		return out == "Succeeded"
	}, 60*time.Second, 100*time.Millisecond, "the migration succeeds")
	dst := c.ok("get", "vmi", "vm-svc", "-o", "jsonpath={.status.nodeName}")
	require.NotEqual(t, src, dst, "the guest moved")

	same := func(_ string, _ net.Addr, k ssh.PublicKey) error {
		if string(k.Marshal()) != string(hostKey.Marshal()) {
			return fmt.Errorf("host key changed")
		}
		return nil
	}
	assert.Equal(t, "hello\n", sshEcho(t, kc, signer, same))
	checkServices()
}

// `virtkit ssh` runs the system's OpenSSH client through port-forward to
// the simulated guest's SSH server: the key cloud-init gives logs in, the
// command runs in the simulated shell and the host key is recorded under
// the vmi/NAME.NAMESPACE alias.
func TestSimulatedGuestOpenSSH(t *testing.T) {
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("no ssh client on PATH (Debian: openssh-client)")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command builds the virtkit binary ssh runs as its ProxyCommand")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "virtkit")
	out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	block, err := ssh.MarshalPrivateKey(priv, "")
	require.NoError(t, err)
	key := filepath.Join(dir, "id_ed25519")
	require.NoError(t, os.WriteFile(key, pem.EncodeToMemory(block), 0o600))
	signer, err := ssh.NewSignerFromKey(priv)
	require.NoError(t, err)

	kc := startAPIController(t, "--nodes", "1", "--heartbeat-interval", "200ms")
	c := cli{t: t, kubeconfig: kc}
	manifest := filepath.Join(dir, "vm.yaml")
	pub := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))
	require.NoError(t, os.WriteFile(manifest, []byte(fmt.Sprintf(simServicesVM, pub)), 0o644))
	c.ok("apply", "-f", manifest)
	c.eventually("Running", "get", "vmi", "vm-svc")
	c.eventually("https://127.0.0.1:", "get", "nodes", "-o", "jsonpath={.items[0].metadata.annotations}")

	knownHosts := filepath.Join(dir, "known_hosts")
	cmd := exec.CommandContext(t.Context(), bin, "ssh", "--kubeconfig", kc, "-i", key, "--known-hosts", knownHosts,
		"-t", "-o BatchMode=yes -o StrictHostKeyChecking=accept-new -o ConnectTimeout=30", "fedora@vmi/vm-svc", "--", "echo", "hello")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "virtkit ssh: %s", stderr.String())
	assert.Equal(t, "hello\n", stdout.String())
	recorded, err := os.ReadFile(knownHosts)
	require.NoError(t, err)
	assert.Contains(t, string(recorded), "ssh-ed25519 ")
}
