package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/migration/bench"
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

// TestBenchMigrateComparison: with virtkit and a baseline, the table ends
// with the comparison the held-out tests compute (bench.WriteVersus over
// the same rows: the simulator's virtual clock makes them identical);
// without a baseline or without virtkit there is nothing to compare.
func TestBenchMigrateComparison(t *testing.T) {
	dir := t.TempDir()
	profiles := filepath.Join(dir, "profiles.yaml")
	require.NoError(t, os.WriteFile(profiles, []byte(`
- name: small-hog
  memory: 1Gi
  bandwidth: 1150M
  dirtyRate: 4G
- name: web
  memory: 1Gi
  bandwidth: 115M
  dirtyRate: 40M
  workingSet: 256Mi
`), 0o644))
	tests := []struct {
		name     string
		policies string
		compare  bool
	}{
		{"virtkit and a baseline", "virtkit,kubevirt", true},
		{"virtkit alone", "virtkit", false},
		{"a baseline alone", "kubevirt", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			root := newRootCmd()
			root.SetOut(&out)
			root.SetArgs([]string{"bench", "migrate", "--profiles", profiles, "--policies", tt.policies})
			require.NoError(t, root.Execute())
			got := out.String()
			if !tt.compare {
				assert.NotContains(t, got, "virtkit/best")
				return
			}
			data, err := os.ReadFile(profiles)
			require.NoError(t, err)
			ps, err := bench.DecodeProfiles(data)
			require.NoError(t, err)
			rows, err := bench.Run(context.Background(), ps, strings.Split(tt.policies, ","), bench.Options{})
			require.NoError(t, err)
			var want bytes.Buffer
			require.NoError(t, bench.WriteTable(&want, rows))
			want.WriteString("\n")
			require.NoError(t, bench.WriteVersus(&want, ps, rows))
			assert.Equal(t, want.String(), got)
			for _, s := range []string{"best within limit", "fastest regardless", "virtkit/best", "virtkit/fastest",
				"median virtkit total/(M/B) over the movable:", "Regardless of the pause:", "web", "small-hog"} {
				assert.Contains(t, got, s)
			}
		})
	}
}
