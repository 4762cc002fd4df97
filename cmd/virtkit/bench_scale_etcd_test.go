package main

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/cluster"
)

func TestBenchScaleFlagErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown store", []string{"--store", "redis"}, "--store: want memory or etcd"},
		{"endpoints without etcd", []string{"--etcd-endpoints", "http://127.0.0.1:2379"}, "--etcd-endpoints: only with --store etcd"},
		{"no nodes", []string{"--nodes", "0"}, "--nodes, --workers: must be positive"},
		{"no VMs", []string{"--vms", "0"}, "--vms: 0 is not positive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := newRootCmd()
			root.SetOut(&bytes.Buffer{})
			root.SetErr(&bytes.Buffer{})
			root.SetArgs(append([]string{"bench", "scale"}, tc.args...))
			err := root.Execute()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// The per-process figures come from /proc: this process's own CPU grows
// with work and its peak RSS is known.
func TestProcessFiguresFromProc(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	before, err := procCPU(os.Getpid())
	require.NoError(t, err)
	deadline := time.Now().Add(200 * time.Millisecond)
	x := 0
	for time.Now().Before(deadline) {
		x++
	}
	after, err := procCPU(os.Getpid())
	require.NoError(t, err)
	assert.Greater(t, after, before, "CPU after %d spins", x)
	assert.Positive(t, peakRSSOf(os.Getpid()))
	_, err = procCPU(-1)
	assert.Error(t, err)
}

func TestProcessTable(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, writeProcessTable(&out, []cluster.ScaleResult{
		{VMs: 10},
		{VMs: 100, Processes: []cluster.ProcessCounts{{Name: "controller", CPU: time.Second, PeakRSS: 64 << 20, Reconciles: 450}}},
	}))
	assert.Contains(t, out.String(), "PROCESS")
	assert.Regexp(t, `100\s+controller\s+1\.00s\s+10\.00ms\s+4\.5\s+64 MiB`, out.String())
}
