package sim

import (
	"fmt"
	"math"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// Shape is how a workload spreads its writes over its working set.
type Shape string

const (
	// ShapeUniform writes pages chosen uniformly at random in the working
	// set: the unique bytes dirtied in a window τ saturate as
	// W·(1−e^(−Dτ/W)).
	ShapeUniform Shape = "uniform"
	// ShapeSequential sweeps the working set in order (a ring buffer,
	// a streaming writer): min(W, Dτ) unique bytes in a window τ, so the
	// whole set is dirty again after every round longer than W/D.
	ShapeSequential Shape = "sequential"
	// ShapeHotset sends HotShare of the writes to a hot HotFraction of the
	// working set and the rest to the remainder, both uniformly random.
	ShapeHotset Shape = "hotset"
	// ShapeBursty writes uniformly over the working set at DirtyRate and,
	// for BurstDuration out of every BurstPeriod, adds
	// DirtyRate×(BurstFactor−1) over BurstSet (checkpoints, GC).
	ShapeBursty Shape = "bursty"
)

// Workload is what a guest does to its memory and CPU. The zero value is an
// idle guest. Sizes are bytes, rates bytes per second.
type Workload struct {
	// DirtyRate is the raw rate of page writes.
	DirtyRate uint64
	// WorkingSet is the part of memory being written; 0 = all memory.
	WorkingSet uint64
	// Shape is the write pattern; "" = uniform.
	Shape Shape

	// BurstPeriod, BurstDuration, BurstFactor and BurstSet shape bursts
	// (ShapeBursty only). Bursts start when the workload starts (Start or
	// SetWorkload on a running domain). BurstDuration defaults to a quarter
	// of BurstPeriod, BurstSet to WorkingSet.
	BurstPeriod   time.Duration
	BurstDuration time.Duration
	BurstFactor   float64
	BurstSet      uint64

	// HotFraction of the working set receives HotShare of the writes
	// (ShapeHotset only); defaults 0.1 and 0.9.
	HotFraction float64
	HotShare    float64

	// ThrottleSensitivity (0..1) is the share of the dirtying that slows
	// down when vCPUs are throttled: 1 for CPU-bound writers, 0 for
	// I/O-driven dirtying (DMA, vhost) that throttling cannot slow. A
	// throttle p leaves DirtyRate×(1−ThrottleSensitivity×p).
	ThrottleSensitivity float64

	// ZeroMemory is how much of the guest's memory outside the working set
	// is still zero (never written): pre-copy's first pass sends such pages
	// as a header each (QEMU's zero-page detection), so they cost no
	// bandwidth. 0 = every page holds data.
	ZeroMemory uint64
	// ZeroMemoryAtEnd places the zero memory after the data in guest
	// memory, as the untouched top of a freshly booted guest's RAM: the
	// first pass, which walks memory in order, reaches it once it has sent
	// the data, and skips it at once. false spreads it evenly among the
	// data pages.
	ZeroMemoryAtEnd bool
	// WorkingSetAtEnd places the working set at the top of guest memory,
	// after the rest of the data and the zero memory: the first pass
	// reaches it last, so what that pass leaves pending at the sync that
	// ends it lies in the working set. The real tiny guest's dirtier
	// shows this layout (its buffer, taken after boot, is what the first
	// pass sends last). false: the first pass takes every part alike.
	WorkingSetAtEnd bool

	// CPUUsage (0..1) is the busy share of each vCPU; 0 = 5 % (idle).
	CPUUsage float64
	// NetRate and DiskRate are the guest's network and disk traffic in
	// each direction; 0 = a trickle (1 KB/s, 4 KB/s).
	NetRate, DiskRate uint64
}

// Validate checks w for a guest with memory bytes of RAM; errors name the
// field.
func (w Workload) Validate(memory uint64) error {
	bad := func(field string, v any, why string) error {
		return fmt.Errorf("workload.%s: invalid value %v: %s: %w", field, v, why, hypervisor.ErrInvalidArgument)
	}
	switch w.Shape {
	case "", ShapeUniform, ShapeSequential, ShapeHotset, ShapeBursty:
	default:
		return bad("shape", w.Shape, "want uniform, sequential, hotset or bursty")
	}
	if memory > 0 && w.WorkingSet > memory {
		return bad("workingSet", w.WorkingSet, fmt.Sprintf("larger than the guest's memory (%d)", memory))
	}
	if memory > 0 && w.ZeroMemory+w.WorkingSet > memory {
		return bad("zeroMemory", w.ZeroMemory, fmt.Sprintf("with the working set, larger than the guest's memory (%d)", memory))
	}
	if memory > 0 && w.BurstSet > memory {
		return bad("burstSet", w.BurstSet, fmt.Sprintf("larger than the guest's memory (%d)", memory))
	}
	if w.ThrottleSensitivity < 0 || w.ThrottleSensitivity > 1 || math.IsNaN(w.ThrottleSensitivity) {
		return bad("throttleSensitivity", w.ThrottleSensitivity, "want 0..1")
	}
	if w.CPUUsage < 0 || w.CPUUsage > 1 || math.IsNaN(w.CPUUsage) {
		return bad("cpuUsage", w.CPUUsage, "want 0..1")
	}
	if w.HotFraction < 0 || w.HotFraction > 1 || math.IsNaN(w.HotFraction) {
		return bad("hotFraction", w.HotFraction, "want 0..1")
	}
	if w.HotShare < 0 || w.HotShare > 1 || math.IsNaN(w.HotShare) {
		return bad("hotShare", w.HotShare, "want 0..1")
	}
	if w.Shape == ShapeBursty {
		if w.BurstPeriod <= 0 {
			return bad("burstPeriod", w.BurstPeriod, "a bursty workload needs a positive period")
		}
		if w.BurstDuration < 0 || w.BurstDuration > w.BurstPeriod {
			return bad("burstDuration", w.BurstDuration, "want 0..burstPeriod")
		}
		if w.BurstFactor < 1 || math.IsNaN(w.BurstFactor) || math.IsInf(w.BurstFactor, 0) {
			return bad("burstFactor", w.BurstFactor, "want >= 1")
		}
	}
	return nil
}

// region is a part of memory written at one rate in one pattern.
type region struct {
	size       float64
	rate       float64 // bytes/s while active
	sequential bool
	burst      bool // active only during bursts
}

// model is a workload resolved against a guest's memory size.
type model struct {
	w       Workload
	regions []region
	memory  float64
	epoch   time.Time // when the workload started: the burst phase
}

func newModel(w Workload, memory uint64, epoch time.Time) model {
	m := model{w: w, memory: float64(memory), epoch: epoch}
	ws := float64(w.WorkingSet)
	if ws == 0 {
		ws = float64(memory)
	}
	d := float64(w.DirtyRate)
	if d == 0 || ws == 0 {
		return m
	}
	switch w.Shape {
	case ShapeSequential:
		m.regions = []region{{size: ws, rate: d, sequential: true}}
	case ShapeHotset:
		frac, share := w.HotFraction, w.HotShare
		if frac == 0 {
			frac = 0.1
		}
		if share == 0 {
			share = 0.9
		}
		m.regions = []region{{size: ws * frac, rate: d * share}}
		if frac < 1 {
			m.regions = append(m.regions, region{size: ws * (1 - frac), rate: d * (1 - share)})
		}
	case ShapeBursty:
		set := float64(w.BurstSet)
		if set == 0 {
			set = ws
		}
		m.regions = []region{{size: ws, rate: d}, {size: set, rate: d * (w.BurstFactor - 1), burst: true}}
	default:
		m.regions = []region{{size: ws, rate: d}}
	}
	return m
}

func (m *model) bursting(t time.Time) bool {
	if m.w.Shape != ShapeBursty || m.w.BurstPeriod <= 0 {
		return false
	}
	dur := m.w.BurstDuration
	if dur == 0 {
		dur = m.w.BurstPeriod / 4
	}
	since := t.Sub(m.epoch)
	if since < 0 {
		return false
	}
	return since%m.w.BurstPeriod < dur
}

// rawRate is the bytes/s written at t under throttle p (0..1).
func (m *model) rawRate(t time.Time, p float64) float64 {
	f := m.slowdown(p)
	burst := m.bursting(t)
	var sum float64
	for _, r := range m.regions {
		if r.burst && !burst {
			continue
		}
		sum += r.rate * f
	}
	return sum
}

func (m *model) slowdown(p float64) float64 {
	return 1 - m.w.ThrottleSensitivity*p
}

// tracker counts the unique bytes dirtied since it was last reset, per
// region (the dirty bitmap of a migration or a dirty-rate calculation).
type tracker struct {
	dirty []float64
	carry float64 // dirtied under an earlier workload
	since time.Time
}

func newTracker(m *model, now time.Time) *tracker {
	return &tracker{dirty: make([]float64, len(m.regions)), since: now}
}

// step adds the writes of [t, t+dt) under throttle p (0..1).
func (tr *tracker) step(m *model, t time.Time, dt time.Duration, p float64) {
	f := m.slowdown(p)
	burst := m.bursting(t)
	secs := dt.Seconds()
	for j, r := range m.regions {
		if r.burst && !burst {
			continue
		}
		a := r.rate * f * secs
		if r.sequential {
			tr.dirty[j] = math.Min(r.size, tr.dirty[j]+a)
		} else {
			// Exact for a constant rate: uniformly random writes leave a
			// page clean with probability e^(−a/W).
			tr.dirty[j] = r.size - (r.size-tr.dirty[j])*math.Exp(-a/r.size)
		}
	}
}

// total is the unique dirty bytes, at most all of memory.
func (tr *tracker) total(m *model) float64 {
	sum := tr.carry
	for _, x := range tr.dirty {
		sum += x
	}
	if m.memory > 0 && sum > m.memory {
		return m.memory
	}
	return sum
}

// rebase keeps the bytes counted so far when the workload changes shape.
func (tr *tracker) rebase(old, m *model) {
	tr.carry = tr.total(old)
	tr.dirty = make([]float64, len(m.regions))
}

// bitmap is a migration's pending set, held per region of the workload model
// plus the memory no region writes, so that a sync merges the pages dirtied
// since the last one into it as QEMU's dirty bitmap does: a page still
// pending that is dirtied again, or dirtied twice, is sent once. Within a
// region the pending and the dirtied pages are taken as independent (random
// writes over the region).
type bitmap struct {
	region []float64
	other  float64
}

// newBitmap spreads total pending bytes over m's regions in proportion to
// their sizes (the first pass: every page pending).
func newBitmap(m *model, total float64) bitmap {
	b := bitmap{region: make([]float64, len(m.regions))}
	var sizes float64
	for _, r := range m.regions {
		sizes += r.size
	}
	scale := 1.0
	if sizes > 0 && total < sizes {
		scale = total / sizes
	}
	var in float64
	for j, r := range m.regions {
		b.region[j] = r.size * scale
		in += b.region[j]
	}
	b.other = math.Max(0, total-in)
	return b
}

func (b *bitmap) total() float64 {
	return b.other + b.regions()
}

// regions is the pending bytes in the regions.
func (b *bitmap) regions() float64 {
	var sum float64
	for _, x := range b.region {
		sum += x
	}
	return sum
}

// scaleRegions multiplies the regions' pending bytes by f.
func (b *bitmap) scaleRegions(f float64) {
	for j := range b.region {
		b.region[j] *= f
	}
}

// takeOtherFirst removes sent bytes from the pending set, from the memory
// no region writes first and then from the regions alike: the first pass
// of a guest whose working set lies at the top of memory.
func (b *bitmap) takeOtherFirst(sent float64) {
	from := math.Min(sent, b.other)
	b.other -= from
	if cur := b.regions(); cur > 0 {
		b.scaleRegions(math.Max(0, cur-(sent-from)) / cur)
	}
}

// setTotal scales the pending set to total bytes: sending takes pages from
// every part of memory alike.
func (b *bitmap) setTotal(total float64) {
	cur := b.total()
	if cur <= 0 || total <= 0 {
		clear(b.region)
		b.other = math.Max(0, total)
		return
	}
	f := total / cur
	b.scaleRegions(f)
	b.other *= f
}

// merge is a bitmap sync: it ORs the tracker's dirty pages into the pending
// set, resets the tracker, and returns the bytes that were not pending yet
// (QEMU counts only those as newly dirty).
func (b *bitmap) merge(m *model, tr *tracker, now time.Time) float64 {
	before := b.total()
	if len(b.region) != len(m.regions) {
		// The workload changed shape mid-job: spread what is pending anew.
		*b = newBitmap(m, before)
	}
	for j, r := range m.regions {
		d, p := tr.dirty[j], b.region[j]
		if r.size <= 0 {
			continue
		}
		if r.sequential {
			// A sequential writer dirties the pages after those it
			// dirtied before the last sync, and what a sync leaves pending
			// is among those: the two are disjoint until together they
			// fill the region.
			b.region[j] = math.Min(r.size, p+d)
			continue
		}
		b.region[j] = math.Min(r.size, p+d-p*d/r.size)
	}
	if tr.carry > 0 && m.memory > 0 {
		b.other += tr.carry * math.Max(0, 1-before/m.memory)
	}
	if m.memory > 0 && b.total() > m.memory {
		b.setTotal(m.memory)
	}
	clear(tr.dirty)
	tr.carry = 0
	tr.since = now
	return math.Max(0, b.total()-before)
}
