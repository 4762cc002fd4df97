package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

// `virtkit port-forward vmi/NAME LOCAL:REMOTE` listens and forwards every
// connection to the guest's port for as long as it runs: HTTP requests on
// successive connections reach the simulated guest's http service.
func TestPortForwardListener(t *testing.T) {
	kc := startAPIController(t, "--nodes", "1", "--heartbeat-interval", "200ms")
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
	c.eventually("https://127.0.0.1:", "get", "nodes", "-o", "jsonpath={.items[0].metadata.annotations}")

	cmd := newRootCmd()
	var out lockedBuffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"port-forward", "vmi/vm-svc", "0:8080", "--kubeconfig", kc})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(20 * time.Second):
			t.Error("port-forward did not stop")
		}
	})
	listening := regexp.MustCompile(`Forwarding from (127\.0\.0\.1:\d+) -> 8080`)
	var addr string
	require.Eventually(t, func() bool {
		m := listening.FindStringSubmatch(out.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	}, 20*time.Second, 20*time.Millisecond, "port-forward listens: %s", &out)

	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for _, path := range []string{"/one", "/two"} {
		resp, err := client.Get("http://" + addr + path)
		require.NoError(t, err, "GET %s: port-forward said %s", path, &out)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "virtkit simulated guest vm-svc: GET "+path+" (http service on port 8080)\n", string(body))
	}
}
