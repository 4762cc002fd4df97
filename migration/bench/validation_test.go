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
	// Passes, where each iteration began (sampled every 20 ms).
	Passes []Pass `json:"passes"`
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
		// As the real runs were sampled (the engine sees nothing of it).
		SamplePasses: 20 * time.Millisecond,
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
	profiles, runs := loadRealRuns(t, "testdata/realqemu-validation.json")

	var b strings.Builder
	b.WriteString("| profile | policy | quantity | real (median of 3) | real range | sim | sim/real |\n|---|---|---|---|---|---|---|\n")
	for _, p := range profiles {
		for _, policy := range []string{"kubevirt", "virtkit"} {
			var job, down, iters, bytes []float64
			for _, r := range runs {
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

// TestSimPassesAgainstRealQEMU compares the simulator pass by pass with
// real QEMU (testdata/realqemu-passes.json, three runs each, sampled every
// 20 ms): the data remaining and sent when each iteration from the second
// on began, where at least two real runs saw it. Within 15 % of the real
// median or within a documented gap (BENCHMARKS.md, "The simulator against
// real QEMU, pass by pass"). The first iteration is left out: QEMU counts
// the guest's zero pages as remaining until its first pass reaches them,
// the simulator sends them at the start.
func TestSimPassesAgainstRealQEMU(t *testing.T) {
	profiles, runs := loadRealRuns(t, "testdata/realqemu-passes.json")
	table, cells := passTable(t, profiles, runs)
	t.Log("\n" + table)
	require.Len(t, cells, 12, "the cells the real runs saw in at least two runs")
	for _, c := range cells {
		bound := 0.15
		if g, ok := knownPassGaps[c.key]; ok {
			bound = g
		}
		assert.InDelta(t, 1, c.ratio, bound, "%s: sim/real %.2f", c.key, c.ratio)
	}
}

// knownPassGaps are the pass-by-pass cells where the simulator and real
// QEMU differ by more than 15 %, with the bound they stay within. The
// dirtying guest holds about 20 MiB less data than the idle guest plus its
// working set (the dirtier's pages reuse memory the idle guest had
// written), so the simulator's first pass is longer and the later passes
// start from more.
var knownPassGaps = map[string]float64{
	"convergent/kubevirt/2/remaining": 0.2,
	"convergent/kubevirt/2/sent":      0.2,
	"convergent/virtkit/2/sent":       0.2,
	"convergent/kubevirt/3/remaining": 0.6,
	"convergent/virtkit/3/remaining":  0.5,
	"moderate/kubevirt/2/sent":        0.25,
	"moderate/virtkit/2/sent":         0.25,
}

// passCell is one compared quantity: its key (profile/policy/iteration/
// quantity) and the simulator's value over the real median.
type passCell struct {
	key   string
	ratio float64
}

// passTable compares, iteration by iteration, the data remaining and sent
// when each pre-copy iteration began on real QEMU (the median of the runs
// that saw it) and in the simulator.
func passTable(t *testing.T, profiles []Profile, runs []realRun) (string, []passCell) {
	var (
		b     strings.Builder
		cells []passCell
	)
	b.WriteString("| profile | policy | iteration | real remaining MiB (runs) | sim | sim/real | real sent MiB | sim | sim/real |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, p := range profiles {
		for _, policy := range []string{"kubevirt", "virtkit"} {
			row := simulateReal(t, p, policy)
			sim := map[uint64]Pass{}
			for _, ps := range row.Passes {
				sim[ps.Iteration] = ps
			}
			rem, sent := map[uint64][]float64{}, map[uint64][]float64{}
			var its []uint64
			for _, r := range runs {
				if r.Profile != p.Name || r.Policy != policy || r.Outcome != "Succeeded" {
					continue
				}
				for _, ps := range r.Passes {
					if _, ok := rem[ps.Iteration]; !ok {
						its = append(its, ps.Iteration)
					}
					rem[ps.Iteration] = append(rem[ps.Iteration], float64(ps.RemainingBytes)/(1<<20))
					sent[ps.Iteration] = append(sent[ps.Iteration], float64(ps.SentBytes)/(1<<20))
				}
			}
			slices.Sort(its)
			for _, it := range its {
				s, ok := sim[it]
				simRem, simSent := "-", "-"
				rr, rs := "-", "-"
				mr, ms := median(rem[it]), median(sent[it])
				if ok {
					sr, ss := float64(s.RemainingBytes)/(1<<20), float64(s.SentBytes)/(1<<20)
					simRem, simSent = fmt.Sprintf("%.1f", sr), fmt.Sprintf("%.1f", ss)
					if mr > 0 {
						rr = fmt.Sprintf("%.2f", sr/mr)
					}
					if ms > 0 {
						rs = fmt.Sprintf("%.2f", ss/ms)
					}
					if key := fmt.Sprintf("%s/%s/%d/", p.Name, policy, it); it >= 2 && len(rem[it]) >= 2 && mr > 0 {
						cells = append(cells, passCell{key + "remaining", sr / mr}, passCell{key + "sent", ss / ms})
					}
				}
				fmt.Fprintf(&b, "| %s | %s | %d | %.1f (%d) | %s | %s | %.1f | %s | %s |\n", p.Name, policy, it, mr, len(rem[it]), simRem, rr, ms, simSent, rs)
			}
		}
	}
	return b.String(), cells
}

// loadRealRuns reads the validation's profiles and the real runs vendored
// in file.
func loadRealRuns(t *testing.T, file string) ([]Profile, []realRun) {
	t.Helper()
	data, err := os.ReadFile("testdata/validation-profiles.yaml")
	require.NoError(t, err)
	profiles, err := DecodeProfiles(data)
	require.NoError(t, err)
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	var doc struct {
		Runs []realRun `json:"runs"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	return profiles, doc.Runs
}
