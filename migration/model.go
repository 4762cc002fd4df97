package migration

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// ErrInvalidInput reports a model or policy input that cannot describe a
// migration (zero memory, negative rates). The wrapping error names the field.
var ErrInvalidInput = errors.New("invalid migration input")

// DefaultDowntimeLimit is QEMU's downtime-limit default (migration/options.c).
const DefaultDowntimeLimit = 300 * time.Millisecond

// maxModelIterations bounds the pre-copy rounds the model counts; QEMU has no
// such limit, but a migration still iterating after this many rounds is
// indistinguishable from one that never ends for any caller of the model.
const maxModelIterations = 1000

// ModelInput describes a migration for [Predict]. Sizes are bytes, rates are
// bytes per second.
type ModelInput struct {
	// Memory is the data to move (M): the guest's non-zero memory.
	Memory uint64
	// Bandwidth is the effective transfer rate (B).
	Bandwidth float64
	// DirtyRate is the rate at which the guest dirties distinct pages (D),
	// before any throttle.
	DirtyRate float64
	// WorkingSet is the writable working set (W): the bytes the guest keeps
	// rewriting. 0 means the whole memory.
	WorkingSet uint64
	// DowntimeLimit is the switchover threshold's time (QEMU switches once
	// pending < B × limit); 0 = 300 ms.
	DowntimeLimit time.Duration
	// Throttle is the vCPU throttle in percent (0..99).
	Throttle int
	// ThrottleSensitivity is the share of dirtying that slows down with the
	// vCPUs (ε, 0..1); not measured = 1 (CPU-bound writers).
	ThrottleSensitivity hypervisor.Measured[float64]
	// SwitchoverCost is the fixed part of the pause (device state, resume).
	SwitchoverCost time.Duration
}

// Prediction is what the closed-form model expects of a migration.
type Prediction struct {
	// Converges is false when pre-copy can never get the pending data under
	// B × downtime limit; Why then says which inequality fails.
	Converges bool
	Why       string
	// EffectiveDirtyRate is D × (1 − ε·throttle); Ratio is that over B (r).
	EffectiveDirtyRate float64
	Ratio              float64
	// Iterations counts the pre-copy rounds before stop-and-copy (round 0
	// sends all memory). For a migration that does not converge it is 0.
	Iterations int
	// Total is the pre-copy migration time, Downtime the final pause,
	// BytesSent everything transferred. Zero when it does not converge.
	Total     time.Duration
	Downtime  time.Duration
	BytesSent uint64
	// Floor is where the pending data settles when it does not converge
	// (the writable working set once r ≥ 1); FloorDowntime the pause a
	// forced switchover at the floor would cost.
	Floor         uint64
	FloorDowntime time.Duration
	// LowerBound is M/B: no policy moves every page in less.
	LowerBound time.Duration
	// PostCopyTotal is the time of one full pre-copy pass followed by
	// post-copy of what the pass left dirty: M/B + min(W, D·M/B)/B + cost.
	// PostCopyData is that leftover.
	PostCopyTotal time.Duration
	PostCopyData  uint64
	// MinThrottle is the smallest throttle (percent) under which pre-copy
	// converges; -1 when no throttle up to 99 % can make it converge.
	MinThrottle int
}

// Validate reports the first field that cannot describe a migration.
func (in ModelInput) Validate() error {
	switch {
	case in.Memory == 0:
		return fmt.Errorf("memory: must be > 0: %w", ErrInvalidInput)
	case !(in.Bandwidth > 0) || math.IsInf(in.Bandwidth, 0):
		return fmt.Errorf("bandwidth: must be a positive finite rate, got %v: %w", in.Bandwidth, ErrInvalidInput)
	case in.DirtyRate < 0 || math.IsNaN(in.DirtyRate) || math.IsInf(in.DirtyRate, 0):
		return fmt.Errorf("dirtyRate: must be a finite rate >= 0, got %v: %w", in.DirtyRate, ErrInvalidInput)
	case in.WorkingSet > in.Memory:
		return fmt.Errorf("workingSet: %d exceeds memory %d: %w", in.WorkingSet, in.Memory, ErrInvalidInput)
	case in.DowntimeLimit < 0:
		return fmt.Errorf("downtimeLimit: must be >= 0, got %v: %w", in.DowntimeLimit, ErrInvalidInput)
	case in.Throttle < 0 || in.Throttle > 99:
		return fmt.Errorf("throttle: must be 0..99, got %d: %w", in.Throttle, ErrInvalidInput)
	}
	if eps, ok := in.ThrottleSensitivity.Get(); ok && (eps < 0 || eps > 1) {
		return fmt.Errorf("throttleSensitivity: must be 0..1, got %v: %w", eps, ErrInvalidInput)
	}
	return nil
}

func (in ModelInput) workingSet() float64 {
	if in.WorkingSet == 0 {
		return float64(in.Memory)
	}
	return float64(in.WorkingSet)
}

func (in ModelInput) downtimeLimit() time.Duration {
	if in.DowntimeLimit == 0 {
		return DefaultDowntimeLimit
	}
	return in.DowntimeLimit
}

// effectiveDirtyRate applies the throttle: D(p) = D·(1 − ε·p).
func (in ModelInput) effectiveDirtyRate() float64 {
	eps := in.ThrottleSensitivity.Or(1)
	return in.DirtyRate * (1 - eps*float64(in.Throttle)/100)
}

// Predict evaluates the pre-copy model of Clark et al. with a writable
// working set cap: round 0 sends M, round i+1
// sends what was dirtied while round i ran, V(i+1) = min(W, D·V(i)/B), and the
// switchover happens once V ≤ B × downtime limit, as QEMU decides it. With no
// cap the rounds form the geometric series T = (M/B)(1 − r^(n+1))/(1 − r).
func Predict(in ModelInput) (Prediction, error) {
	if err := in.Validate(); err != nil {
		return Prediction{}, err
	}
	m := float64(in.Memory)
	b := in.Bandwidth
	w := in.workingSet()
	d := in.effectiveDirtyRate()
	r := d / b
	threshold := b * in.downtimeLimit().Seconds()
	cost := in.SwitchoverCost

	p := Prediction{
		EffectiveDirtyRate: d,
		Ratio:              r,
		LowerBound:         seconds(m / b),
		MinThrottle:        minThrottle(in, threshold),
	}
	leftover := math.Min(w, d*m/b)
	p.PostCopyData = uint64(leftover)
	p.PostCopyTotal = seconds(m/b+leftover/b) + cost

	// Round sizes: V0 = M, V1 = min(W, rM), then geometric from V1 while
	// r < 1 (min(W, r·V) = r·V once V ≤ W), constant W when r ≥ 1.
	if m <= threshold {
		p.Converges = true
		p.Total = seconds(m/b) + cost
		p.Downtime = seconds(m/b) + cost
		p.BytesSent = in.Memory
		return p, nil
	}
	v1 := math.Min(w, r*m)
	if v1 <= threshold {
		p.Converges = true
		p.Iterations = 1
		p.Total = seconds((m+v1)/b) + cost
		p.Downtime = seconds(v1/b) + cost
		p.BytesSent = uint64(m + v1)
		return p, nil
	}
	if r >= 1 {
		p.Floor = uint64(v1)
		p.FloorDowntime = seconds(v1/b) + cost
		p.Why = fmt.Sprintf("dirty rate %s exceeds bandwidth %s (r=%.2f) and what a pass leaves dirty (%s) exceeds bandwidth × downtime limit (%s)",
			formatRate(d), formatRate(b), r, formatBytes(v1), formatBytes(threshold))
		return p, nil
	}
	// Geometric tail from V1: V(1+k) = V1 r^k; the first k with V ≤ threshold.
	k := int(math.Ceil(math.Log(threshold/v1) / math.Log(r)))
	if k < 0 {
		k = 0
	}
	if 1+k > maxModelIterations {
		p.Floor = uint64(v1 * math.Pow(r, maxModelIterations))
		p.FloorDowntime = seconds(float64(p.Floor)/b) + cost
		p.Why = fmt.Sprintf("r=%.4f is so close to 1 that pre-copy needs more than %d rounds", r, maxModelIterations)
		return p, nil
	}
	final := v1 * math.Pow(r, float64(k))
	tail := v1 * (1 - math.Pow(r, float64(k+1))) / (1 - r) // V1 + ... + V(1+k)
	p.Converges = true
	p.Iterations = 1 + k
	p.Total = seconds((m+tail)/b) + cost
	p.Downtime = seconds(final/b) + cost
	p.BytesSent = uint64(m + tail)
	return p, nil
}

// minThrottle is the smallest throttle percent that makes pre-copy converge:
// none when the working set fits under the threshold, otherwise the one that
// brings D(p) under B, p > (1 − B/D)/ε.
func minThrottle(in ModelInput, threshold float64) int {
	if in.workingSet() <= threshold || in.DirtyRate < in.Bandwidth {
		return 0
	}
	eps := in.ThrottleSensitivity.Or(1)
	if eps <= 0 {
		return -1
	}
	need := (1 - in.Bandwidth/in.DirtyRate) / eps * 100
	pct := int(math.Floor(need)) + 1 // strictly above
	if pct > 99 {
		return -1
	}
	return pct
}

// ThrottleFor returns the throttle percent (0..99) that brings the effective
// dirty rate to ratio × bandwidth, and false when even 99 % cannot.
func ThrottleFor(dirtyRate, bandwidth, ratio, sensitivity float64) (int, bool) {
	if dirtyRate <= ratio*bandwidth {
		return 0, true
	}
	if sensitivity <= 0 {
		return 99, false
	}
	need := (1 - ratio*bandwidth/dirtyRate) / sensitivity * 100
	pct := int(math.Ceil(need))
	if pct > 99 {
		return 99, false
	}
	return pct, true
}

func seconds(s float64) time.Duration {
	if math.IsInf(s, 0) || s > float64(math.MaxInt64)/float64(time.Second) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(s * float64(time.Second))
}

func formatRate(bps float64) string { return formatBytes(bps) + "/s" }

// formatBytes prints decimal units, as link speeds and dirty rates are
// usually quoted (MB/s, GB/s).
func formatBytes(b float64) string {
	switch {
	case b >= 1e12:
		return fmt.Sprintf("%.2f TB", b/1e12)
	case b >= 1e9:
		return fmt.Sprintf("%.2f GB", b/1e9)
	case b >= 1e6:
		return fmt.Sprintf("%.1f MB", b/1e6)
	case b >= 1e3:
		return fmt.Sprintf("%.1f kB", b/1e3)
	default:
		return fmt.Sprintf("%.0f B", b)
	}
}
