package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBenchMigratePlots: without --plot-profile the plot shows the profile
// whose policies differ (not the first, where they all run alike), and
// --plot-summary draws every profile.
func TestBenchMigratePlots(t *testing.T) {
	dir := t.TempDir()
	profiles := filepath.Join(dir, "profiles.yaml")
	require.NoError(t, os.WriteFile(profiles, []byte(`
- name: idle
  memory: 1Gi
  bandwidth: 1150M
  dirtyRate: 1M
  workingSet: 16Mi
- name: small-hog
  memory: 1Gi
  bandwidth: 1150M
  dirtyRate: 4G
`), 0o644))
	plot, summary := filepath.Join(dir, "plot.svg"), filepath.Join(dir, "summary.svg")
	root := newRootCmd()
	root.SetOut(&bytes.Buffer{})
	root.SetArgs([]string{"bench", "migrate", "--profiles", profiles, "--policies", "virtkit,kubevirt",
		"--plot", plot, "--plot-summary", summary})
	require.NoError(t, root.Execute())

	svg, err := os.ReadFile(plot)
	require.NoError(t, err)
	assert.Contains(t, string(svg), "Remaining data against time: small-hog")
	sum, err := os.ReadFile(summary)
	require.NoError(t, err)
	for _, want := range []string{"idle", "small-hog", "virtkit", "kubevirt", "Downtime"} {
		assert.Contains(t, string(sum), want)
	}

	root = newRootCmd()
	root.SetOut(&bytes.Buffer{})
	root.SetArgs([]string{"bench", "migrate", "--profiles", profiles, "--plot", plot, "--plot-profile", "nope"})
	err = root.Execute()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `--plot-profile: no profile "nope"`)
}

func TestBenchScalePlot(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two control planes")
	}
	plot := filepath.Join(t.TempDir(), "scale.svg")
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"bench", "scale", "--vms", "4,8", "--nodes", "2", "--workers", "2", "--plot", plot})
	require.NoError(t, root.Execute())
	svg, err := os.ReadFile(plot)
	require.NoError(t, err)
	for _, want := range []string{"<svg", "p50 latency", "p99 latency", "CPU per VM", "VMs created at once", "at 8 VMs"} {
		assert.Contains(t, string(svg), want)
	}
}
