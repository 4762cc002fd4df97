//go:build faults

package faults

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

// TestDetector checks the double-run detector itself, on simulated hosts
// in this process writing the same state files node agents write: a guest
// active on two running nodes is reported, a guest on a stopped or dead
// node is not, and a guest that stopped on one node before it started on
// the other is not.
func TestDetector(t *testing.T) {
	// Not t.TempDir: the simulated hosts save asynchronously and may
	// still write a file while the directory is being removed.
	dir, err := os.MkdirTemp("", "faults-detector-")
	require.NoError(t, err)
	defer func() {
		for range 20 {
			if os.RemoveAll(dir) == nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	c := &testCluster{t: t, dir: dir, nodes: map[string]*testNode{}}
	hosts := map[string]*sim.Persistent{}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel() // runs before the removal above
	for _, name := range nodeNames {
		n := &testNode{name: name, state: filepath.Join(dir, name+".state.json"), proc: newVProc(dir, name)}
		n.proc.state = procRunning // no process: the test plays it
		c.nodes[name] = n
		h, err := sim.OpenPersistent(ctx, sim.New(sim.Options{Name: name}), n.state)
		require.NoError(t, err)
		hosts[name] = h
	}
	m := newMonitor(c)
	run := func(node, dom string) {
		t.Helper()
		_, err := hosts[node].Define(ctx, `<domain type='kvm'><name>`+dom+`</name><memory unit='MiB'>64</memory><vcpu>1</vcpu><os><type arch='x86_64'>hvm</type></os></domain>`)
		require.NoError(t, err)
		require.NoError(t, hosts[node].Start(ctx, dom, hypervisor.StartOptions{}))
	}
	destroy := func(node, dom string) {
		t.Helper()
		require.NoError(t, hosts[node].Destroy(ctx, dom))
	}
	doubles := func() []string {
		m.sample()
		v, _ := m.report()
		return v["double run"]
	}

	// A guest handed over: stopped on node-a before it starts on node-b.
	run("node-a", "default_moved")
	require.Empty(t, doubles())
	destroy("node-a", "default_moved")
	run("node-b", "default_moved")
	require.Empty(t, doubles())

	// A frozen node's guests execute nothing; a dead node's neither.
	run("node-c", "default_moved")
	c.nodes["node-c"].proc.state = procStopped
	require.Empty(t, doubles())
	c.nodes["node-c"].proc.state = procDown
	require.Empty(t, doubles())

	// The node runs again with its guest: two nodes run one VM.
	c.nodes["node-c"].proc.state = procRunning
	got := doubles()
	require.Len(t, got, 1)
	assert.Contains(t, got[0], "default_moved active on [node-b node-c] at once: 1 samples")

	// A paused guest still holds its VM.
	run("node-a", "default_paused")
	run("node-b", "default_paused")
	require.NoError(t, hosts["node-b"].Pause(ctx, "default_paused"))
	got = doubles()
	require.Len(t, got, 2)
	assert.Contains(t, got[1], "default_paused active on [node-a node-b]")
	assert.Equal(t, 6, m.samples)
}
