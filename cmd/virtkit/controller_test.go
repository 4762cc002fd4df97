package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/virtkit/virtkit/internal/leader"
	"github.com/virtkit/virtkit/store/etcd/etcdtest"
)

func TestControllerAndNodeFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"controller nodes with etcd", []string{"controller", "--store", "etcd://127.0.0.1:1", "--nodes", "3"}, "--nodes"},
		{"controller zero nodes", []string{"controller", "--nodes", "0"}, "--nodes"},
		{"controller bad grace", []string{"controller", "--node-monitor-grace", "0s"}, "--node-monitor-grace"},
		{"controller bad log level", []string{"controller", "--log-level", "loud"}, "--log-level"},
		{"controller manifests with etcd", []string{"controller", "--store", "etcd://127.0.0.1:1", "-f", "x.yaml"}, "-f"},
		{"controller fence shorter than heartbeats", []string{"controller", "--heartbeat-interval", "1s", "--fence-timeout", "3s"}, "--fence-timeout"},
		{"node without name", []string{"node"}, "--name"},
		{"node fence shorter than heartbeats", []string{"node", "--name", "n1", "--fence-timeout", "2s"}, "--fence-timeout"},
		{"node watchdog with libvirt", []string{"node", "--name", "n1", "--hypervisor", "libvirt", "--watchdog"}, "--watchdog"},
		{"node watchdog without fencing", []string{"node", "--name", "n1", "--fence-timeout", "-1s", "--watchdog"}, "--watchdog"},
		{"node bad hypervisor", []string{"node", "--name", "n1", "--hypervisor", "xen"}, "--hypervisor"},
		{"node bad sim memory", []string{"node", "--name", "n1", "--sim-memory", "lots"}, "--sim-memory"},
		{"node sim state with libvirt", []string{"node", "--name", "n1", "--hypervisor", "libvirt", "--sim-state", "x"}, "--sim-state"},
		{"get bad output", []string{"get", "vms", "-o", "xml", "--store", "etcd://127.0.0.1:1"}, "output format"},
		{"get memory store", []string{"get", "vms"}, "memory store"},
		{"apply without files", []string{"apply", "--store", "etcd://127.0.0.1:1"}, "-f"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := newRootCmd()
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetArgs(tc.args)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			err := cmd.ExecuteContext(ctx)
			require.Error(t, err)
			// The API's verbs report kubectl-style, on stderr.
			assert.Contains(t, err.Error()+out.String(), tc.want)
		})
	}
}

// The single-process mode runs controllers and simulated nodes until it is
// interrupted, then stops cleanly.
func TestControllerSingleProcess(t *testing.T) {
	cmd := newRootCmd()
	var out lockedBuffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	manifest := filepath.Join(t.TempDir(), "vm.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(strings.ReplaceAll(twoVMs, "Halted", "Always")), 0o644))
	cmd.SetArgs([]string{"controller", "--nodes", "2", "--heartbeat-interval", "100ms", "-f", manifest, "--log-level", "debug"})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	require.Eventually(t, func() bool {
		return strings.Contains(out.String(), "started domain") && strings.Count(out.String(), "started domain") >= 2
	}, 20*time.Second, 20*time.Millisecond, "both VMs start")
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("controller did not stop")
	}
	assert.Contains(t, out.String(), "single-process control plane running")
	assert.Contains(t, out.String(), "controller stopped")
}

// A leader whose etcd lease is revoked stops its controllers and exits
// with an error (non-zero status), to be restarted as a candidate.
func TestControllerExitsWhenLeadershipIsLost(t *testing.T) {
	endpoints := etcdtest.StartServer(t)
	client, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })

	cmd := newRootCmd()
	var out lockedBuffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"controller", "--store", "etcd://" + strings.TrimPrefix(endpoints[0], "http://"),
		"--leader-id", "only", "--leader-ttl", "2s"})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(t.Context()) }()

	var lease int64
	require.Eventually(t, func() bool {
		resp, err := client.Get(t.Context(), "/virtkit/leader/controller/", clientv3.WithPrefix())
		if err != nil || len(resp.Kvs) == 0 {
			return false
		}
		lease = resp.Kvs[0].Lease
		return strings.Contains(out.String(), "controllers running")
	}, 20*time.Second, 20*time.Millisecond, "leading: %s", &out)
	_, err = client.Revoke(t.Context(), clientv3.LeaseID(lease))
	require.NoError(t, err)
	select {
	case err := <-done:
		require.ErrorIs(t, err, leader.ErrLeadershipLost)
	case <-time.After(20 * time.Second):
		t.Fatalf("controller kept running after losing its lease: %s", &out)
	}
	assert.Contains(t, out.String(), "leader session lost: stopping controllers")
}

// lockedBuffer is a bytes.Buffer safe for the command's goroutines and the
// test's reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
