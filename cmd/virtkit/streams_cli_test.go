package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// consoleSession runs `virtkit console NAME`, waits for the prompt, types
// line, waits for want and detaches with ^].
func consoleSession(t *testing.T, kc, name, line, want string) string {
	t.Helper()
	cmd := newRootCmd()
	pr, pw := io.Pipe()
	var out, errOut lockedBuffer
	cmd.SetIn(pr)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"console", name, "--kubeconfig", kc})
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	waitFor := func(s string) {
		t.Helper()
		require.Eventually(t, func() bool { return strings.Contains(out.String(), s) }, 60*time.Second, 20*time.Millisecond,
			"console shows %q; out %q err %q", s, &out, &errOut)
	}
	waitFor("/ # ")
	_, err := io.WriteString(pw, line+"\r")
	require.NoError(t, err)
	waitFor(want)
	_, err = pw.Write([]byte{consoleEscape})
	require.NoError(t, err)
	select {
	case err := <-done:
		require.NoError(t, err, "stderr: %s", &errOut)
	case <-time.After(30 * time.Second):
		t.Fatal("console did not detach on ^]")
	}
	return out.String()
}

// virtkit console, vnc, port-forward and their authorization against the
// API of `virtkit controller` with in-process simulated nodes.
func TestStreamsCLIOnAPI(t *testing.T) {
	kc := startAPIController(t, "--nodes", "1", "--heartbeat-interval", "200ms")
	c := cli{t: t, kubeconfig: kc}
	manifest := filepath.Join(t.TempDir(), "vm.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(apiVM), 0o644))
	c.ok("apply", "-f", manifest)
	c.eventually("Running", "get", "vmi", "vm-api")
	c.eventually("https://127.0.0.1:", "get", "nodes", "-o", "jsonpath={.items[0].metadata.annotations}")

	out := consoleSession(t, kc, "vm-api", "uname -n", "vm-api\r\n")
	assert.Contains(t, out, "Linux version")

	assert.Contains(t, c.fails("port-forward", "--stdio", "vmi/vm-api", "22"), "DialGuest")
	assert.Contains(t, c.fails("port-forward", "vmi/vm-api", "70000"), "want PORT or LOCAL:REMOTE")
	assert.Contains(t, c.fails("console", "nope"), "Error from server (NotFound)")

	alice := cli{t: t, kubeconfig: tokenUserKubeconfig(t, kc, "alice-token")}
	for _, args := range [][]string{
		{"console", "vm-api"},
		{"vnc", "vm-api", "--proxy-only"},
		{"port-forward", "--stdio", "vm/vm-api", "22"},
	} {
		assert.Contains(t, alice.fails(args...), "Error from server (Forbidden)", "%v", args)
	}
}

// On etcd with a separate `virtkit node` process: its endpoint (certificate
// issued from the controller's CA directory) serves the console and guest
// information through the API.
func TestStreamsCLIOnAPIEtcd(t *testing.T) {
	kc, _ := startAPIControllerOnEtcd(t, "stream-node-1", "--endpoint-addr", "127.0.0.1:0",
		"--endpoint-cert-dir", "PKI")
	c := cli{t: t, kubeconfig: kc}
	manifest := filepath.Join(t.TempDir(), "vm.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(apiVM), 0o644))
	c.ok("apply", "-f", manifest)
	c.eventually("Running", "get", "vmi", "vm-api")
	assert.Equal(t, "stream-node-1", c.ok("get", "vmi", "vm-api", "-o", "jsonpath={.status.nodeName}"))
	c.eventually("https://127.0.0.1:", "get", "nodes", "-o", "jsonpath={.items[0].metadata.annotations}")
	assert.Contains(t, consoleSession(t, kc, "vm-api", "hostname", "vm-api\r\n"), "Linux version")
	// Guest information through the node endpoint.
	c.eventually(`"hostname": "vm-api"`, "guestosinfo", "vm-api")
	var users map[string]any
	require.NoError(t, json.Unmarshal([]byte(c.ok("userlist", "vm-api")), &users))
	assert.Equal(t, "VirtualMachineInstanceGuestOSUserList", users["kind"])
	alice := cli{t: t, kubeconfig: tokenUserKubeconfig(t, kc, "alice-token")}
	assert.Contains(t, alice.fails("console", "vm-api"), "Error from server (Forbidden)")
	assert.Contains(t, alice.fails("guestosinfo", "vm-api"), "Error from server (Forbidden)")
}

func TestSSHArgs(t *testing.T) {
	kf := &kubeFlags{kubeconfig: "/tmp/my config", context: "admin"}
	kh := filepath.Join(t.TempDir(), "ssh", "kube_known_hosts")
	argv, err := sshArgs("vm-0", "team-a", sshOptions{user: "root", port: 2222, identity: "/k/id", knownHosts: kh,
		sshOpts: []string{"StrictHostKeyChecking=no"}, localOpts: []string{"-o BatchMode=yes  -v"}}, kf, []string{"uname", "-a"})
	require.NoError(t, err)
	self, _ := os.Executable()
	assert.Equal(t, []string{
		"-o", "ProxyCommand=" + shellQuote(self) + " port-forward --stdio -n team-a --kubeconfig '/tmp/my config' --context admin vmi/vm-0 2222",
		"-o", "HostKeyAlias=vmi/vm-0.team-a", "-o", "UserKnownHostsFile=" + kh, "-i", "/k/id", "-o", "StrictHostKeyChecking=no",
		"-o", "BatchMode=yes", "-v", "root@vm-0.team-a", "--", "uname", "-a",
	}, argv)
	assert.DirExists(t, filepath.Dir(kh), "the known_hosts directory is made")
}
