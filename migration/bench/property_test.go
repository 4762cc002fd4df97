package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/virtkit/virtkit/hypervisor/sim"
)

// randomProfiles draws n profiles from a fixed seed: memory 1–6 GiB on
// 0.2–2 GB/s, dirty rates from idle to 2.5× the bandwidth over working sets
// of 2–100 % of memory, every shape, throttle sensitivities 0.1–1, dips,
// downtime limits 50–500 ms and random permissions.
func randomProfiles(seed int64, n int) []Profile {
	rng := rand.New(rand.NewSource(seed))
	shapes := []sim.Shape{sim.ShapeUniform, sim.ShapeHotset, sim.ShapeSequential, sim.ShapeBursty}
	qty := func(v float64) resource.Quantity { return *resource.NewQuantity(int64(v), resource.DecimalSI) }
	qtyp := func(v float64) *resource.Quantity { x := qty(v); return &x }
	var ps []Profile
	for i := range n {
		mem := float64(1+rng.Intn(6)) * (1 << 30)
		bw := 200e6 + rng.Float64()*1.8e9
		dirty := bw * (0.05 + rng.Float64()*2.45)
		ws := mem * (0.02 + rng.Float64()*0.98)
		p := Profile{
			Name:       fmt.Sprintf("random-%02d", i),
			Memory:     qty(mem),
			Bandwidth:  qty(bw),
			DirtyRate:  qty(dirty),
			WorkingSet: qtyp(ws),
			Shape:      shapes[rng.Intn(len(shapes))],
		}
		if p.Shape == sim.ShapeBursty {
			p.BurstPeriod = float64(10 + rng.Intn(30))
			p.BurstDuration = p.BurstPeriod * (0.1 + 0.3*rng.Float64())
			p.BurstFactor = 1 + 4*rng.Float64()
			p.BurstSet = qtyp(mem * (0.05 + 0.5*rng.Float64()))
		}
		if rng.Intn(3) == 0 {
			s := 0.1 + 0.9*rng.Float64()
			p.ThrottleSensitivity = &s
		}
		if rng.Intn(4) == 0 {
			p.Dips = []Dip{{At: float64(rng.Intn(20)), Duration: float64(5 + rng.Intn(30)), Factor: 0.3 + 0.5*rng.Float64()}}
		}
		p.AllowAutoConverge = rng.Intn(2) == 0
		p.AllowPostCopy = rng.Intn(3) == 0
		limit := float64(50 + 50*rng.Intn(10))
		p.DowntimeLimit = &limit
		ps = append(ps, p)
	}
	return ps
}

// checkTarget holds virtkit, with libvirt's capabilities, to the benchmark's
// target on one profile: it succeeds wherever a baseline succeeds within
// the downtime limit or the closed-form model says the permissions allow
// convergence, it finishes within 1.05× of the best such baseline (plus
// 0.1 s, two of virtkit's shortest polls), and its pause stays within the
// downtime limit. A baseline run is cut off once it can no
// longer beat virtkit by 5 %, so hopeless baselines cost little.
func checkTarget(t *testing.T, p Profile) {
	t.Helper()
	ctx := context.Background()
	vk, err := RunOne(ctx, p, "virtkit", Options{})
	require.NoError(t, err)
	feasible, why := p.Feasible()
	limitMs := float64(p.Downtime()) / float64(time.Millisecond)
	// Without a pre-start sample (a first pass under 20 s is not worth the
	// 1 s it takes) the choice between a short pause and the configured
	// limit is made at the first sync, one 50 ms poll after it at best:
	// on a migration of about a second that poll is more than 5 %.
	const slack = 0.1
	if vk.Outcome == "Succeeded" {
		require.NotNil(t, vk.DowntimeMs)
		assert.LessOrEqual(t, *vk.DowntimeMs, limitMs, "%s: downtime within the limit", p.Name)
		assert.Equal(t, StandingWithinLimit, vk.Standing(), "%s: %s", p.Name, RuleWithinDowntimeLimit)
	}
	for _, name := range PolicyNames() {
		if name == "virtkit" {
			continue
		}
		opts := Options{}
		if vk.Outcome == "Succeeded" {
			// Only a baseline that finishes before virtkit/1.05 matters.
			opts.MaxTime = time.Duration(vk.TotalSeconds/1.05*float64(time.Second)) + time.Second
		}
		row, err := RunOne(ctx, p, name, opts)
		if errors.Is(err, ErrMaxTime) {
			continue
		}
		require.NoError(t, err)
		// A baseline counts where it met the same limit on the pause
		// (RuleWithinDowntimeLimit): QEMU's rule alone overshoots it by
		// the switchover's fixed cost.
		if row.Standing() != StandingWithinLimit {
			continue
		}
		if vk.Outcome != "Succeeded" {
			t.Errorf("%s: %s succeeds in %.1f s but virtkit fails: %s", p.Name, name, row.TotalSeconds, vk.Reason)
			continue
		}
		assert.LessOrEqual(t, vk.TotalSeconds, 1.05*row.TotalSeconds+slack,
			"%s: virtkit %.1f s vs %s %.1f s", p.Name, vk.TotalSeconds, name, row.TotalSeconds)
	}
	if feasible {
		assert.Equal(t, "Succeeded", vk.Outcome, "%s: feasible (%s): %s", p.Name, why, vk.Reason)
	}
}

// TestTargetOnRandomProfiles checks the target on profiles nobody tuned
// for, drawn from a fixed seed. Everything runs on the simulator's virtual
// clock: exact assertions about simulated time, not timing tests.
func TestTargetOnRandomProfiles(t *testing.T) {
	n := 24
	if testing.Short() || raceDetector {
		n = 8 // the same first eight profiles
	}
	for _, p := range randomProfiles(seed(), n) {
		t.Run(p.Name, func(t *testing.T) { checkTarget(t, p) })
	}
}

func seed() int64 {
	if s := os.Getenv("VIRTKIT_BENCH_SEED"); s != "" {
		if v, err := strconv.ParseInt(s, 10, 64); err == nil {
			return v
		}
	}
	return 20261203
}

// TestTargetAutoConvergeOnlyRamp holds the target on a profile drawn from
// another seed that once missed it: a sequential 3.9 GB/s writer over a
// 1.1 GB working set on 1.7 GB/s with only QEMU's auto-converge allowed.
// Raising the pause to the configured limit while QEMU's throttle still
// climbed let each pass end with much of the working set pending, so the
// re-dirtied pages did not count in QEMU's trigger and the throttle climbed
// slower than with the short pause (26.5 s against nova-ac's 22.9 s).
func TestTargetAutoConvergeOnlyRamp(t *testing.T) {
	p := randomProfiles(11, 6)[5]
	require.True(t, p.AllowAutoConverge)
	require.False(t, p.AllowPostCopy)
	checkTarget(t, p)
}
