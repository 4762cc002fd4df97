package bench

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor/sim"
)

var update = flag.Bool("update", false, "update golden files")

func TestDecodeProfiles(t *testing.T) {
	data := []byte(`
- name: web
  memory: 8Gi
  bandwidth: 1250M
  dirtyRate: 300M
  workingSet: 2Gi
  shape: bursty
  burstPeriod: 30
  burstFactor: 3
  throttleSensitivity: 0.5
  dips:
  - {at: 20, duration: 10, factor: 0.5}
  allowPostCopy: true
  allowAutoConverge: true
  downtimeLimit: 150
- name: idle
  memory: 1Gi
  bandwidth: 115M
  dirtyRate: "0"
`)
	ps, err := DecodeProfiles(data)
	require.NoError(t, err)
	require.Len(t, ps, 2)
	web := ps[0]
	assert.Equal(t, uint64(8<<30), web.MemoryBytes())
	assert.Equal(t, 1.25e9, web.BandwidthBytes())
	assert.Equal(t, 150*time.Millisecond, web.Downtime())
	w := web.Workload()
	assert.Equal(t, uint64(300e6), w.DirtyRate)
	assert.Equal(t, uint64(2<<30), w.WorkingSet)
	assert.Equal(t, sim.ShapeBursty, w.Shape)
	assert.Equal(t, 30*time.Second, w.BurstPeriod)
	assert.Equal(t, 0.5, w.ThrottleSensitivity)
	l := web.Link()
	require.Len(t, l.Dips, 1)
	assert.Equal(t, sim.Dip{At: 20 * time.Second, Duration: 10 * time.Second, Factor: 0.5}, l.Dips[0])
	assert.Equal(t, 300*time.Millisecond, ps[1].Downtime(), "default downtime limit")
	assert.Equal(t, 1.0, ps[1].Workload().ThrottleSensitivity, "default sensitivity")
}

func TestDecodeProfilesErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown field", `[{name: a, memory: 1Gi, bandwidth: 1G, dirtyRate: 1M, colour: red}]`, "colour"},
		{"empty list", `[]`, "empty"},
		{"no bandwidth", `[{name: a, memory: 1Gi, dirtyRate: 1M}]`, "profiles[0].bandwidth"},
		{"bad shape", `[{name: a, memory: 1Gi, bandwidth: 1G, dirtyRate: 1M, shape: zigzag}]`, "profiles[0].shape"},
		{"bursty without period", `[{name: a, memory: 1Gi, bandwidth: 1G, dirtyRate: 1M, shape: bursty, burstFactor: 2}]`, "profiles[0].burstPeriod"},
		{"working set over memory", `[{name: a, memory: 1Gi, bandwidth: 1G, dirtyRate: 1M, workingSet: 2Gi}]`, "profiles[0].workingSet"},
		{"dip factor", `[{name: a, memory: 1Gi, bandwidth: 1G, dirtyRate: 1M, dips: [{at: 1, duration: 1, factor: 2}]}]`, "profiles[0].dips[0].factor"},
		{"sensitivity", `[{name: a, memory: 1Gi, bandwidth: 1G, dirtyRate: 1M, throttleSensitivity: 1.5}]`, "profiles[0].throttleSensitivity"},
		{"downtime", `[{name: a, memory: 1Gi, bandwidth: 1G, dirtyRate: 1M, downtimeLimit: 0}]`, "profiles[0].downtimeLimit"},
		{"downtime overflows", `[{name: a, memory: 1Gi, bandwidth: 1G, dirtyRate: 1M, downtimeLimit: 1e300}]`, "profiles[0].downtimeLimit"},
		{"burst period rounds to zero", `[{name: a, memory: 1Gi, bandwidth: 1G, dirtyRate: 1M, shape: bursty, burstFactor: 2, burstPeriod: 1e-300}]`, "profiles[0].burstPeriod"},
		{"burst period overflows", `[{name: a, memory: 1Gi, bandwidth: 1G, dirtyRate: 1M, shape: bursty, burstFactor: 2, burstPeriod: 1e300}]`, "profiles[0].burstPeriod"},
		{"dip at overflows", `[{name: a, memory: 1Gi, bandwidth: 1G, dirtyRate: 1M, dips: [{at: 1e300, duration: 1, factor: 0.5}]}]`, "profiles[0].dips[0].at"},
		{"dip duration rounds to zero", `[{name: a, memory: 1Gi, bandwidth: 1G, dirtyRate: 1M, dips: [{at: 1, duration: 1e-300, factor: 0.5}]}]`, "profiles[0].dips[0].duration"},
		{"duplicate", `[{name: a, memory: 1Gi, bandwidth: 1G, dirtyRate: 1M}, {name: a, memory: 1Gi, bandwidth: 1G, dirtyRate: 1M}]`, "profiles[1].name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeProfiles([]byte(tt.yaml))
			require.ErrorIs(t, err, ErrInvalidProfile)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestBuiltinProfilesAreValid(t *testing.T) {
	ps := BuiltinProfiles()
	assert.Len(t, ps, 8)
	assert.Empty(t, ValidateProfiles(ps))
	for _, p := range ps {
		require.NoError(t, p.Workload().Validate(p.MemoryBytes()), p.Name)
		require.NoError(t, p.Link().Validate(), p.Name)
	}
}

func TestFeasible(t *testing.T) {
	want := map[string]bool{"P1-idle": true, "P2-web": true, "P3-build": true, "P4-kv-dip": true,
		"P5-oltp": true, "P6-jvm": true, "P7-hog": false, "P8-io-ingest": true}
	for _, p := range BuiltinProfiles() {
		ok, why := p.Feasible()
		assert.Equal(t, want[p.Name], ok, "%s: %s", p.Name, why)
		assert.NotEmpty(t, why)
	}
	hopeless := BuiltinProfiles()[7] // P8 without post-copy: ε = 0.2 cannot be throttled
	hopeless.AllowPostCopy = false
	ok, why := hopeless.Feasible()
	assert.False(t, ok, why)
}

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create it")
	assert.Equal(t, string(want), string(got))
}

func sampleRows() []Row {
	down := 278.2
	rows := []Row{
		{Profile: "P7-hog", Policy: "virtkit", Outcome: "Failed", Reason: "pre-copy cannot converge", Mode: "PreCopy",
			TotalSeconds: 5.5, BytesSent: 6_300_000_000, LowerBoundSeconds: 7.47, DecisionSeconds: 5.5, MemoryBytes: 8 << 30,
			Samples: []Sample{{0.5, 8 << 30}, {5.5, 2 << 30}}},
		{Profile: "P7-hog", Policy: "kubevirt", Outcome: "Failed", Reason: "live migration is not completed after 1350 s", Mode: "PreCopy",
			TotalSeconds: 1350.4, BytesSent: 1_553_000_000_000, LowerBoundSeconds: 7.47, DecisionSeconds: 1350.4, MemoryBytes: 8 << 30,
			Samples: []Sample{{0.4, 8 << 30}, {7.5, 4 << 30}, {700, 4 << 30}, {1350.4, 4 << 30}}},
		{Profile: "P1-idle", Policy: "virtkit", Outcome: "Succeeded", Reason: "completed: PreCopy", Mode: "PreCopy",
			TotalSeconds: 3.778, DowntimeMs: &down, BytesSent: 4_310_383_052, LowerBoundSeconds: 3.735, MemoryBytes: 4 << 30,
			Samples: []Sample{{0.5, 4 << 30}, {3.778, 0}}},
	}
	for i := range rows {
		rows[i].DowntimeLimit = 300 * time.Millisecond
		rows[i].ApplyDowntimeRule()
	}
	return rows
}

// overLimitRow is a baseline that completed with a pause over its
// 300 ms limit (QEMU's threshold plus the switchover's fixed cost).
func overLimitRow() Row {
	over := 328.4
	r := Row{Profile: "P1-idle", Policy: "kubevirt", Outcome: "Succeeded", Reason: "completed: PreCopy", Mode: "PreCopy",
		TotalSeconds: 3.712, DowntimeMs: &over, BytesSent: 4_300_000_000, LowerBoundSeconds: 3.735, MemoryBytes: 4 << 30,
		DowntimeLimit: 300 * time.Millisecond}
	r.ApplyDowntimeRule()
	return r
}

func TestWriteOutputsGolden(t *testing.T) {
	var js, table, svg bytes.Buffer
	rows := append(sampleRows(), overLimitRow())
	require.NoError(t, WriteJSON(&js, rows))
	require.NoError(t, WriteTable(&table, rows))
	require.NoError(t, WritePlot(&svg, "P7-hog", sampleRows()))
	golden(t, "rows.json", js.Bytes())
	golden(t, "rows.txt", table.Bytes())
	golden(t, "p7.svg", svg.Bytes())
	assert.Contains(t, svg.String(), "log scale", "an abort after seconds next to an hour-long run needs a log axis")
	assert.Error(t, WritePlot(&svg, "P9", sampleRows()))
}
