package sim

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// QEMU's defaults (migration/options.c, ram.c, migration.c).
const (
	defaultDowntimeLimit    = 300 * time.Millisecond
	defaultThrottleInitial  = 20
	defaultThrottleIncrease = 10
	maxThrottle             = 99
	throttleTrigger         = 0.5                    // throttle-trigger-threshold 50 %
	bandwidthWindow         = 100 * time.Millisecond // BUFFER_DELAY
	syncPeriod              = time.Second            // auto-converge check and dirty-rate period
	backgroundSyncPeriod    = 5 * time.Second        // QEMU ≥ 9.2: CPU_THROTTLE_DIRTY_SYNC_TIMESLICE_MS
	pageSize                = 4096
)

type phase int

const (
	phasePreCopy phase = iota
	phaseStopCopy
	phasePostCopyBlackout
	phasePostCopy
	phaseFinishing // outcome decided, the target is being told
	phaseEnded
)

// incoming is the target side's record of a migration; lost is set when
// the target's copy goes away, read by the source without the target's lock.
type incoming struct {
	lost atomic.Bool
	why  atomic.Pointer[string] // why it was lost, when not the default
}

// job is a running migration, stepped by the source host inside
// domain.advance under the source host's lock.
type job struct {
	src  *Host
	dst  migrationTarget
	link *linkState
	name string
	d    *domain // on the source
	inc  *incoming
	// display is the source's VNC display when the guest moved (the
	// post-copy switch or the switchover), for the target.
	display *displayState
	params  hypervisor.MigrationParams
	started time.Time

	phase phase
	mode  hypervisor.MigrationMode

	tracker   *tracker // pages dirtied since the last bitmap sync
	bm        bitmap   // the pending pages, per region: what pending counts
	total     float64  // guest memory
	pending   float64  // bytes left in the current pass (or post-copy), zero pages included
	zero      float64  // zero pages the first pass has not reached yet (in pending)
	zeroAtEnd bool     // they lie after the data (Workload.ZeroMemoryAtEnd)
	wsAtEnd   bool     // the working set lies after both (Workload.WorkingSetAtEnd)
	constant  float64  // zero pages reached: sent as a header each
	processed float64
	iteration int
	setupDone bool // Options.MigrationSetup has passed

	downtimeLimit time.Duration
	maxSpeed      uint64
	throttlePct   int
	throttleHigh  int // QEMU's dirty_rate_high_cnt

	periodStart  time.Time // ≥1 s sync period for the dirty rate and auto-converge
	dirtyPeriod  float64
	xferPeriod   float64
	dirtyRate    hypervisor.Measured[uint64]
	bwEstimate   float64
	windowStart  time.Time
	windowBytes  float64
	syncPending  float64 // pending right after the last sync
	syncMeasured bool

	// QEMU ≥ 9.2's background sync: once auto-converge has checked a
	// period, a timer syncs the bitmap every 5 s unless a sync happened
	// since its previous tick.
	bgArmed    bool
	bgNext     time.Time
	bgPrevIter int

	postCopyRequested bool
	userPaused        bool // the guest was paused by the user when the final copy began
	stopStart         time.Time
	emptyAt           time.Time
	blackoutEnd       time.Time
	downtime          time.Duration
	postcopyRequests  float64

	wire *wire // the TCP stream to a target in another process; nil on a Network

	storage *storageCopy // the disks copied before memory (params.CopyDisks); nil when none

	ticker Timer
	done   chan struct{}
	result hypervisor.MigrationResult
	err    error
}

var (
	_ hypervisor.MigrationJob = (*job)(nil)
	_ hypervisor.Throttler    = (*job)(nil)
)

// schedule arms the next step at the next 10 ms grid point.
func (j *job) schedule(now time.Time) {
	next := now.Truncate(stepSize).Add(stepSize)
	j.ticker = j.src.clock.AfterFunc(next.Sub(now), func() {
		_ = j.src.do(context.Background(), func(now time.Time) error {
			if j.phase < phaseFinishing {
				j.schedule(now)
			}
			return nil
		})
	})
}

// linkBandwidth is the job's share of the link at t, without its max speed.
func (j *job) linkBandwidth(t time.Time) float64 {
	b := j.link.link.capacity(t.Sub(j.started))
	if n := j.link.active.Load(); n > 1 {
		b /= float64(n)
	}
	if j.wire != nil {
		// A real socket slower than the modelled link is the limit.
		if r := j.wire.rate(); r > 0 && r < b {
			b = r
		}
	}
	return b
}

// bandwidth is the bytes/s the job gets at t.
func (j *job) bandwidth(t time.Time) float64 {
	b := j.linkBandwidth(t)
	if j.maxSpeed > 0 {
		b = math.Min(b, float64(j.maxSpeed))
	}
	return b
}

// step advances the job over [t, t+dt); d is the source domain.
func (j *job) step(h *Host, d *domain, t time.Time, dt time.Duration) {
	if j.phase >= phaseFinishing {
		return
	}
	end := t.Add(dt)
	if j.inc.lost.Load() {
		j.fail(h, d, end, j.inc.lostReason())
		return
	}
	bw := j.bandwidth(t)
	secs := dt.Seconds()
	switch j.phase {
	case phasePreCopy:
		if setup := h.opts.MigrationSetup; setup > 0 && !j.setupDone {
			if end.Sub(j.started) < setup {
				return
			}
			// The job really begins now: dirty tracking and the clocks
			// of its rate estimates start here.
			j.setupDone = true
			j.periodStart, j.windowStart = end, end
			j.tracker = newTracker(&d.model, end)
			return
		}
		if j.storage != nil && !j.storage.synced {
			if j.postCopyRequested {
				j.fail(h, d, end, "post-copy requested before the disks were copied")
				return
			}
			j.copyStorage(d, bw, t, dt)
			return
		}
		if d.running() {
			j.tracker.step(&d.model, t, dt, d.throttle)
		}
		data := j.pending - j.zero
		can := bw * secs
		capped := j.maxSpeed > 0 && float64(j.maxSpeed) < j.linkBandwidth(t)
		if capped {
			// QEMU's rate limit: each 100 ms window's budget goes out at
			// the link's speed as the window opens, then the job waits.
			budget := float64(j.maxSpeed) * bandwidthWindow.Seconds()
			can = math.Min(j.linkBandwidth(t)*secs, math.Max(0, budget-j.windowBytes))
		}
		sent := math.Min(data, j.allowance(can))
		j.transmit(sent)
		// The pass meets zero pages among the data pages, spread alike, or
		// after the data when they lie at the end. A working set at the
		// top of memory comes after both in the first pass: the zero pages
		// lie after the rest of the data.
		first := j.wsAtEnd && j.iteration == 1
		before := data
		if first {
			before = j.bm.other
		}
		reached := j.zero
		switch {
		case j.zeroAtEnd && sent < before:
			reached = 0
		case !j.zeroAtEnd && before > 0:
			reached = j.zero * math.Min(1, sent/before)
		}
		j.zero -= reached
		j.constant += reached
		j.pending -= sent + reached
		if first {
			j.bm.takeOtherFirst(sent)
		} else {
			j.bm.setTotal(j.pending - j.zero)
		}
		j.processed += sent
		j.xferPeriod += sent
		j.windowBytes += sent
		windowEnded := false
		if w := end.Sub(j.windowStart); w >= bandwidthWindow {
			j.bwEstimate = j.windowBytes / w.Seconds()
			j.windowBytes, j.windowStart = 0, end
			windowEnded = true
		}
		if j.postCopyRequested {
			j.startPostCopy(h, d, end)
			return
		}
		if j.bgArmed && !end.Before(j.bgNext) {
			if j.iteration == j.bgPrevIter {
				j.sync(h, d, end)
			}
			j.bgPrevIter, j.bgNext = j.iteration, end.Add(backgroundSyncPeriod)
		}
		// QEMU's switchover rule: once what is left of the pass fits in
		// bandwidth × downtime limit, sync the bitmap; if it still fits,
		// stop the guest and copy the rest. Under a max-speed cap QEMU
		// checks it once per rate-limit window (it sends the window's
		// budget, then waits for the next), unless the pass ran out of
		// pages first.
		threshold := j.bwEstimate * j.downtimeLimit.Seconds()
		if j.pending == 0 || (j.pending < threshold && (windowEnded || !capped)) {
			j.sync(h, d, end)
			if j.pending == 0 || j.pending < threshold {
				j.stopAndCopy(h, d, end)
			}
		}
	case phaseStopCopy:
		// QEMU lifts the max-speed cap for the final copy (the guest is
		// stopped: every byte is downtime), so it runs at the link's speed.
		j.drain(j.linkBandwidth(t), t, dt)
		if j.pending == 0 {
			if doneAt := j.emptyAt.Add(h.opts.SwitchoverCost); !doneAt.After(end) {
				j.downtime = doneAt.Sub(j.stopStart)
				j.complete(h, d, doneAt)
			}
		}
	case phasePostCopyBlackout:
		if !j.blackoutEnd.After(end) {
			j.phase = phasePostCopy
			j.downtime = j.blackoutEnd.Sub(j.stopStart)
			dst := j.dst
			h.after(func() { dst.receivePostCopy(j) })
		}
	case phasePostCopy:
		// The guest runs on the target; what it touches before the push
		// reaches it faults back to the source.
		remote := j.pending / j.total
		j.postcopyRequests += d.model.rawRate(t, 0) * secs * remote / pageSize
		j.drain(bw, t, dt)
		if j.pending == 0 && !j.emptyAt.After(end) {
			j.complete(h, d, j.emptyAt)
		}
	}
}

// drain sends pending bytes with the guest stopped, noting the exact
// moment the last byte left.
func (j *job) drain(bw float64, t time.Time, dt time.Duration) {
	if j.pending <= 0 {
		return
	}
	can := j.allowance(bw * dt.Seconds())
	if can >= j.pending {
		j.emptyAt = t.Add(time.Duration(j.pending / bw * float64(time.Second)))
		j.transmit(j.pending)
		j.processed += j.pending
		j.pending = 0
		return
	}
	j.transmit(can)
	j.pending -= can
	j.processed += can
}

// allowance is how much of can the job may send in a step: all of it on
// a Network, what the socket has room for on a TCP stream.
func (j *job) allowance(can float64) float64 {
	if j.wire != nil {
		return math.Min(can, j.wire.room())
	}
	return can
}

// transmit puts bytes of the current pass on the job's TCP stream, if it
// has one (a target in another process).
func (j *job) transmit(bytes float64) {
	if j.wire != nil && bytes > 0 {
		j.wire.pages(j.iteration, bytes)
	}
}

// sync is QEMU's migration_bitmap_sync: the pages dirtied since the last
// sync are merged into the pending set (a page already pending, or dirtied
// twice, counts once) and a new pass begins. Every ≥1 s period it updates
// the dirty rate from the newly dirty pages and runs the auto-converge
// check.
func (j *job) sync(h *Host, d *domain, now time.Time) {
	dirty := j.bm.merge(&d.model, j.tracker, now)
	j.pending = j.bm.total() + j.zero
	j.syncPending = j.pending
	j.dirtyPeriod += dirty
	j.iteration++
	h.emit(hypervisor.Event{Domain: j.name, UUID: d.uuid(), Time: now, Kind: hypervisor.EventMigrationIteration, Iteration: j.iteration})
	period := now.Sub(j.periodStart)
	if period < syncPeriod {
		return
	}
	j.dirtyRate = hypervisor.Some(uint64(j.dirtyPeriod / period.Seconds()))
	j.syncMeasured = true
	if j.params.AutoConverge && h.opts.AutoConvergeSchedule == AutoConvergeQEMU92 && !j.bgArmed {
		j.bgArmed, j.bgPrevIter, j.bgNext = true, j.iteration, now.Add(backgroundSyncPeriod)
	}
	if j.params.AutoConverge && j.dirtyPeriod > j.xferPeriod*throttleTrigger {
		j.throttleHigh++
		if j.throttleHigh >= 2 {
			j.throttleHigh = 0
			j.throttleDown(d)
		}
	}
	j.periodStart, j.dirtyPeriod, j.xferPeriod = now, 0, 0
}

// throttleDown is QEMU's mig_throttle_guest_down: initial step, then
// fixed increments, capped at 99 %.
func (j *job) throttleDown(d *domain) {
	initial, inc := j.params.AutoConvergeInitial, j.params.AutoConvergeIncrement
	if initial == 0 {
		initial = defaultThrottleInitial
	}
	if inc == 0 {
		inc = defaultThrottleIncrease
	}
	if j.throttlePct == 0 {
		j.setThrottle(d, initial)
	} else {
		j.setThrottle(d, j.throttlePct+inc)
	}
}

func (j *job) setThrottle(d *domain, pct int) {
	j.throttlePct = min(max(pct, 0), maxThrottle)
	d.throttle = float64(j.throttlePct) / 100
}

// stopAndCopy pauses the guest for the final copy.
func (j *job) stopAndCopy(h *Host, d *domain, now time.Time) {
	j.phase = phaseStopCopy
	j.reachZero()
	j.userPaused = d.state == hypervisor.StatePaused
	j.stopStart = now
	j.emptyAt = now
	h.pauseFor(d, now, hypervisor.ReasonMigration)
	// QEMU syncs the dirty bitmap once more with the guest stopped (the
	// completion's sync): one more iteration, as real jobs report.
	j.iteration++
	h.emit(hypervisor.Event{Domain: j.name, UUID: d.uuid(), Time: now, Kind: hypervisor.EventMigrationIteration, Iteration: j.iteration})
}

// reachZero sends the zero pages still pending at once: with the guest
// stopped (or in post-copy) they cost a header each.
func (j *job) reachZero() {
	j.pending -= j.zero
	j.constant += j.zero
	j.zero = 0
}

// startPostCopy pauses the source for the blackout; the target then runs
// the guest and pulls the rest.
func (j *job) startPostCopy(h *Host, d *domain, now time.Time) {
	j.bm.merge(&d.model, j.tracker, now)
	j.pending = j.bm.total() + j.zero
	j.reachZero()
	j.phase = phasePostCopyBlackout
	j.mode = hypervisor.ModePostCopy
	j.stopStart = now
	j.emptyAt = now
	j.blackoutEnd = now.Add(h.opts.PostCopyBlackout)
	h.pauseFor(d, now, hypervisor.ReasonPostcopy)
	j.display = d.display.state()
}

func (h *Host) pauseFor(d *domain, now time.Time, reason hypervisor.StateReason) {
	if d.running() {
		h.haltGuest(d, now)
	}
	d.state, d.reason = hypervisor.StatePaused, reason
	h.emitState(d, now)
}

// complete records success and hands the guest to the target.
func (j *job) complete(h *Host, d *domain, endedAt time.Time) {
	from := j.phase
	j.phase = phaseFinishing
	st := j.statsAt(endedAt)
	st.Type = hypervisor.JobCompleted
	st.DataRemaining, st.MemoryRemaining = hypervisor.Some[uint64](0), hypervisor.Some[uint64](0)
	st.Downtime = hypervisor.Some(j.downtime)
	j.result = hypervisor.MigrationResult{Succeeded: true, Mode: j.mode, Started: j.started, Ended: endedAt, Stats: st}
	if j.mode != hypervisor.ModePostCopy {
		j.display = d.display.state()
	}
	dst, src := j.dst, j.src
	h.after(func() {
		if err := j.storage.writeDestinations(); err != nil {
			_ = src.do(context.Background(), func(now time.Time) error {
				j.phase = from
				j.fail(src, d, now, err.Error())
				return nil
			})
			return
		}
		if dst.receiveEnd(j, true) {
			src.finish(j)
			return
		}
		_ = src.do(context.Background(), func(now time.Time) error {
			j.phase = from // not finished after all: let fail report it
			j.fail(src, d, now, j.inc.lostReason())
			return nil
		})
	})
}

// finish moves the source copy to shut off (migrated) and ends the job.
func (h *Host) finish(j *job) {
	_ = h.do(context.Background(), func(now time.Time) error {
		d := j.d
		d.job = nil
		if j.wire != nil && j.mode == hypervisor.ModePreCopy {
			// The guest stayed paused until the target confirmed it
			// runs there: the real switchover round trip is downtime.
			j.downtime += j.wire.switchoverTime()
			j.result.Stats.Downtime = hypervisor.Some(j.downtime)
		}
		if h.domains[j.name] == d && d.state.IsActive() {
			if j.params.UndefineSource {
				d.persistent = false
			}
			h.stop(d, now, hypervisor.ReasonMigrated)
		}
		j.end(h, now)
		return nil
	})
}

// fail ends the job without moving the guest; the source keeps running
// unless post-copy had already handed the guest over.
func (j *job) fail(h *Host, d *domain, now time.Time, reason string) {
	j.finishUnsuccessful(h, d, now, false, reason)
}

func (j *job) finishUnsuccessful(h *Host, d *domain, now time.Time, aborted bool, reason string) {
	if j.phase >= phaseFinishing {
		return
	}
	postCopy := j.phase >= phasePostCopyBlackout
	j.phase = phaseFinishing
	st := j.statsAt(now)
	st.Type = hypervisor.JobFailed
	sentinel := hypervisor.ErrMigrationFailed
	if aborted {
		st.Type = hypervisor.JobCancelled
		sentinel = hypervisor.ErrMigrationAborted
	}
	j.result = hypervisor.MigrationResult{Aborted: aborted, Mode: j.mode, Started: j.started, Ended: now, Stats: st, Reason: reason}
	j.err = hypervisor.WrapDomain("migrate", j.name, fmt.Errorf("%s: %w", reason, sentinel))
	d.job = nil
	d.throttle = 0
	if h.domains[j.name] == d && d.state == hypervisor.StatePaused {
		switch {
		case postCopy:
			d.reason = hypervisor.ReasonPostcopyFailed
			h.emitState(d, now)
		case d.reason == hypervisor.ReasonMigration && j.userPaused:
			d.reason = hypervisor.ReasonUser
			h.emitState(d, now)
		case d.reason == hypervisor.ReasonMigration:
			d.state, d.reason = hypervisor.StateRunning, hypervisor.ReasonMigrationCancel
			h.resumeGuest(d, now)
			h.emitState(d, now)
		}
	}
	dst, src := j.dst, j.src
	h.after(func() {
		dst.receiveEnd(j, false)
		_ = src.do(context.Background(), func(now time.Time) error {
			j.end(src, now)
			return nil
		})
	})
}

// end closes the job. Called with the source host's lock held.
func (j *job) end(h *Host, now time.Time) {
	if j.phase == phaseEnded {
		return
	}
	j.phase = phaseEnded
	if j.ticker != nil {
		j.ticker.Stop()
	}
	j.link.active.Add(-1)
	h.emit(hypervisor.Event{Domain: j.name, UUID: j.d.uuid(), Time: now, Kind: hypervisor.EventJobCompleted})
	close(j.done)
}
