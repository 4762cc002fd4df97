package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor/sim"
)

// realRun is one measured real-QEMU migration (testdata/realqemu-validation.json).
type realRun struct {
	Run                 int      `json:"run"`
	Profile             string   `json:"profile"`
	Policy              string   `json:"policy"`
	Outcome             string   `json:"outcome"`
	JobSeconds          float64  `json:"jobSeconds"`
	DowntimeMs          float64  `json:"downtimeMs"`
	Iterations          float64  `json:"iterations"`
	BytesSent           float64  `json:"bytesSent"`
	DirtyRateBeforeMiBs *float64 `json:"dirtyRateBeforeMiBs"`
}

// Calibration of the simulator to the real stack, measured on the idle
// profile alone (no dirtying): the job's fixed setup (the destination QEMU
// starting, libvirt's handshake, up to libvirt's completion of the job)
// and the guest's zero memory (256 MiB guest, ~101 MiB sent when idle).
const (
	realSetup      = 700 * time.Millisecond
	realNonZeroMiB = 101
	// realLinkMiBs is the loopback's speed for one TCG migration stream
	// here: an uncapped migration of the tiny guest (about 100 MiB of data)
	// takes 0.35-0.5 s.
	realLinkMiBs = 256
)

func simulateReal(t *testing.T, p Profile, policy string) Row {
	t.Helper()
	opts := Options{
		LinkCapacity: realLinkMiBs << 20,
		Host:         func(o *sim.Options) { o.MigrationSetup = realSetup },
		Workload: func(w *sim.Workload) {
			w.ZeroMemory = p.MemoryBytes() - realNonZeroMiB<<20 - w.WorkingSet
		},
	}
	row, err := RunOne(context.Background(), p, policy, opts)
	require.NoError(t, err)
	return row
}

// knownGaps are the cells where the simulator and real QEMU differ by more
// than 15 %, with the bound they stay within (BENCHMARKS.md says why).
var knownGaps = map[string]float64{
	// The dirtier's guest holds less non-zero memory than the idle guest
	// plus the working set: the first pass is shorter on real QEMU, and
	// so is the job.
	"convergent/kubevirt/bytes":      0.2,
	"convergent/virtkit/bytes":       0.2,
	"convergent/kubevirt/job":        0.2,
	"convergent/virtkit/job":         0.2,
	"convergent/kubevirt/iterations": 0.55,
	"convergent/virtkit/iterations":  0.25,
	"moderate/virtkit/iterations":    0.45,
	// Downtime under TCG is tens of ms with outliers (37-864 ms in the
	// same cell); the simulator's stop-and-copy carries what is pending at
	// the calibrated stream speed, where real QEMU's tail holds zero pages.
	"idle/kubevirt/downtime":       0.35,
	"idle/virtkit/downtime":        0.35,
	"convergent/kubevirt/downtime": 0.7,
	"convergent/virtkit/downtime":  0.7,
	"moderate/kubevirt/downtime":   0.5,
	"moderate/virtkit/downtime":    0.5,
}

// TestSimMatchesRealQEMU runs the simulator, calibrated on the real idle
// runs only (setup time, zero memory, the loopback's speed), on the
// profiles measured on real QEMU (testdata/realqemu-validation.json: three
// runs each) and holds job time, downtime, iterations and bytes sent within
// 15 % of the real medians, or within the bound of a documented gap.
func TestSimMatchesRealQEMU(t *testing.T) {
	data, err := os.ReadFile("testdata/validation-profiles.yaml")
	require.NoError(t, err)
	profiles, err := DecodeProfiles(data)
	require.NoError(t, err)
	raw, err := os.ReadFile("testdata/realqemu-validation.json")
	require.NoError(t, err)
	var doc struct {
		Runs []realRun `json:"runs"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))

	var b strings.Builder
	b.WriteString("| profile | policy | quantity | real (median of 3) | real range | sim | sim/real |\n|---|---|---|---|---|---|---|\n")
	for _, p := range profiles {
		for _, policy := range []string{"kubevirt", "virtkit"} {
			var job, down, iters, bytes []float64
			for _, r := range doc.Runs {
				if r.Profile == p.Name && r.Policy == policy && r.Outcome == "Succeeded" {
					job, down, iters, bytes = append(job, r.JobSeconds), append(down, r.DowntimeMs), append(iters, r.Iterations), append(bytes, r.BytesSent/(1<<20))
				}
			}
			require.Len(t, job, 3, "%s/%s", p.Name, policy)
			row := simulateReal(t, p, policy)
			require.Equal(t, "Succeeded", row.Outcome)
			for _, q := range []struct {
				name string
				real []float64
				sim  float64
				unit string
			}{
				{"job", job, row.TotalSeconds - row.MeasureSeconds, "s"},
				{"downtime", down, *row.DowntimeMs, "ms"},
				{"iterations", iters, float64(row.Iterations), ""},
				{"bytes", bytes, float64(row.BytesSent) / (1 << 20), "MiB"},
			} {
				m := median(q.real)
				ratio := q.sim / m
				fmt.Fprintf(&b, "| %s | %s | %s | %.4g %s | %.4g–%.4g | %.4g | %.2f |\n", p.Name, policy, q.name, m, q.unit,
					slices.Min(q.real), slices.Max(q.real), q.sim, ratio)
				bound := 0.15
				if g, ok := knownGaps[p.Name+"/"+policy+"/"+q.name]; ok {
					bound = g
				}
				assert.InDelta(t, 1, ratio, bound, "%s/%s %s: sim %.4g, real median %.4g", p.Name, policy, q.name, q.sim, m)
			}
		}
	}
	t.Log("\n" + b.String())
}
