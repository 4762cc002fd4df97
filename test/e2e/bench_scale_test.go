package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store/etcd/etcdtest"
)

// `virtkit bench scale --store etcd` runs a controller process and node
// agent processes against an etcd and reports the whole run: every VM
// Running, CPU and peak RSS per process, writes and reconciles per VM.
func TestBenchScaleEtcd(t *testing.T) {
	if binary == "" {
		t.Skip("end-to-end test skipped in -short mode")
	}
	endpoints := etcdtest.StartServer(t)
	c := &testCluster{t: t, dir: t.TempDir()}
	out := c.run("bench", "scale", "--store", "etcd", "--etcd-endpoints", strings.Join(endpoints, ","),
		"--vms", "24", "--nodes", "2", "--workers", "4", "-o", "json")
	var results []cluster.ScaleResult
	require.NoError(t, json.Unmarshal([]byte(out), &results), out)
	require.Len(t, results, 1)
	r := results[0]
	assert.Equal(t, "etcd", r.Backend)
	assert.Equal(t, 24, r.VMs)
	assert.Positive(t, r.Total)
	assert.LessOrEqual(t, r.P50, r.P99)
	var names []string
	var cpu uint64
	for _, p := range r.Processes {
		names = append(names, p.Name)
		cpu += uint64(p.CPU)
		assert.Positive(t, p.PeakRSS, p.Name)
	}
	assert.ElementsMatch(t, []string{"bench", "controller", "scale-node-0", "scale-node-1"}, names,
		"an etcd given by --etcd-endpoints is not the bench's to measure")
	assert.Equal(t, cpu, uint64(r.CPU), "CPU is the processes' sum")
	assert.Positive(t, r.CPU)
	// Each VM is created, gets a VMI, and both get status writes.
	assert.GreaterOrEqual(t, r.WritesPerVM, 4.0)
	assert.Less(t, r.WritesPerVM, 30.0)
	assert.Positive(t, r.ReconcilesPerVM)
	for _, p := range r.Processes {
		if p.Name != "bench" {
			assert.Positive(t, p.Reconciles, "%s reconciled", p.Name)
		}
	}
}
