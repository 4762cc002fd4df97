package corev1_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// kubectl runs kubectl against the test server.
func (ts *testServer) kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	path, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not installed")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(cfg, []byte(`apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: "`+ts.config.Host+`"}}]
users: [{name: test, user: {}}]
contexts: [{name: test, context: {cluster: test, user: test}}]
current-context: test
`), 0o600))
	ctx, cancel := context.WithTimeout(t.Context(), 60e9)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, append([]string{"--kubeconfig", cfg, "--cache-dir", filepath.Join(dir, "cache")}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestKubectl(t *testing.T) {
	ts := newTestServer(t)
	ctx := t.Context()
	require.NoError(t, ts.store.Create(ctx, &virtkit.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}))

	out, err := ts.kubectl(t, "create", "namespace", "team")
	require.NoError(t, err, out)
	assert.Contains(t, out, "namespace/team created")

	out, err = ts.kubectl(t, "get", "ns")
	require.NoError(t, err, out)
	assert.Regexp(t, `(?m)^team\s+Active\s`, out)
	assert.Regexp(t, `(?m)^kube-system\s+Active\s`, out)

	out, err = ts.kubectl(t, "create", "configmap", "cfg", "-n", "team", "--from-literal=a=b")
	require.NoError(t, err, out)
	// cm is Kubernetes' short name for configmaps.
	out, err = ts.kubectl(t, "get", "cm", "-n", "team")
	require.NoError(t, err, out)
	assert.Regexp(t, `(?m)^NAME\s+DATA\s+AGE\n(.*\n)*cfg\s+1\s`, out)
	out, err = ts.kubectl(t, "create", "configmap", "cfg", "-n", "nowhere", "--from-literal=a=b")
	require.Error(t, err, out)
	assert.Contains(t, out, `namespaces "nowhere" not found`)

	out, err = ts.kubectl(t, "cordon", "node-1")
	require.NoError(t, err, out)
	assert.Contains(t, out, "node/node-1 cordoned")
	node := &virtkit.Node{}
	require.NoError(t, ts.store.Get(ctx, store.Key{Name: "node-1"}, node))
	assert.True(t, node.Spec.Unschedulable)

	out, err = ts.kubectl(t, "get", "nodes")
	require.NoError(t, err, out)
	assert.Contains(t, out, "SchedulingDisabled")

	out, err = ts.kubectl(t, "drain", "node-1", "--ignore-daemonsets", "--timeout=30s")
	require.NoError(t, err, out)
	assert.Contains(t, out, "node/node-1 drained")

	out, err = ts.kubectl(t, "uncordon", "node-1")
	require.NoError(t, err, out)
	require.NoError(t, ts.store.Get(ctx, store.Key{Name: "node-1"}, node))
	assert.False(t, node.Spec.Unschedulable)

	out, err = ts.kubectl(t, "get", "pvc,events,secrets,sa,configmaps", "-A")
	require.NoError(t, err, out)
	assert.True(t, strings.Contains(out, "cfg"), out)
}
