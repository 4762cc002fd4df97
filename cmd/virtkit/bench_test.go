package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBenchMigrate(t *testing.T) {
	dir := t.TempDir()
	profiles := filepath.Join(dir, "profiles.yaml")
	require.NoError(t, os.WriteFile(profiles, []byte(`
- name: small-hog
  memory: 1Gi
  bandwidth: 1150M
  dirtyRate: 4G
- name: idle
  memory: 1Gi
  bandwidth: 1150M
  dirtyRate: 1M
  workingSet: 16Mi
`), 0o644))
	plot := filepath.Join(dir, "plot.svg")
	var out bytes.Buffer
	root := newRootCmd()
	root.SetOut(&out)
	root.SetArgs([]string{"bench", "migrate", "--profiles", profiles, "--policies", "virtkit,kubevirt",
		"--output", "json", "--plot", plot, "--plot-profile", "small-hog"})
	require.NoError(t, root.Execute())

	var rows []map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &rows))
	require.Len(t, rows, 4)
	for _, key := range []string{"profile", "policy", "outcome", "reason", "mode", "totalSeconds", "downtimeMs",
		"bytesSent", "lowerBoundSeconds", "decisionSeconds", "maxThrottlePercent", "capabilities",
		"measureSeconds", "throttleCpuSeconds", "postCopySeconds"} {
		assert.Contains(t, rows[0], key)
	}
	assert.Equal(t, "small-hog", rows[0]["profile"])
	assert.Equal(t, "virtkit", rows[0]["policy"])
	assert.Equal(t, "libvirt", rows[0]["capabilities"], "libvirt's capabilities by default")
	assert.Equal(t, "Failed", rows[0]["outcome"])
	assert.Equal(t, "kubevirt", rows[1]["policy"])
	assert.Equal(t, "Succeeded", rows[2]["outcome"])
	svg, err := os.ReadFile(plot)
	require.NoError(t, err)
	assert.Contains(t, string(svg), "<svg")
	assert.Contains(t, string(svg), "small-hog")

	out.Reset()
	root = newRootCmd()
	root.SetOut(&out)
	root.SetArgs([]string{"bench", "migrate", "--profiles", profiles, "--policies", "virtkit", "--capabilities", "full"})
	require.NoError(t, root.Execute())
	assert.Contains(t, out.String(), "total/lower")
	assert.Contains(t, out.String(), " full ", "every row names the capabilities")
}

func TestBenchMigrateErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown policy", []string{"--policies", "oracle"}, "--policies"},
		{"bad output", []string{"--output", "xml"}, "--output"},
		{"missing file", []string{"--profiles", "/nonexistent.yaml"}, "--profiles"},
		{"unknown capabilities", []string{"--capabilities", "qemu"}, "--capabilities"},
		{"unknown auto-converge schedule", []string{"--qemu-auto-converge", "9.0"}, "--qemu-auto-converge"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := newRootCmd()
			root.SetOut(&bytes.Buffer{})
			root.SetArgs(append([]string{"bench", "migrate"}, tt.args...))
			err := root.Execute()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
