package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		{"node without name", []string{"node"}, "--name"},
		{"node bad hypervisor", []string{"node", "--name", "n1", "--hypervisor", "xen"}, "--hypervisor"},
		{"node bad sim memory", []string{"node", "--name", "n1", "--sim-memory", "lots"}, "--sim-memory"},
		{"node sim state with libvirt", []string{"node", "--name", "n1", "--hypervisor", "libvirt", "--sim-state", "x"}, "--sim-state"},
		{"get unknown kind", []string{"get", "pods", "--store", "etcd://127.0.0.1:1"}, "unknown resource type"},
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
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// The single-process mode runs controllers and simulated nodes until it is
// interrupted, then stops cleanly.
func TestControllerSingleProcess(t *testing.T) {
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"controller", "--nodes", "2", "--heartbeat-interval", "100ms"})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	time.Sleep(300 * time.Millisecond)
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
