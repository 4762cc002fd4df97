package migration

import (
	"fmt"
	"math"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
)

// Outcome is how a migration ended, in KubeVirt's words.
type Outcome string

const (
	OutcomeSucceeded Outcome = "Succeeded"
	OutcomeFailed    Outcome = "Failed"
)

// Decision is one entry of the engine's log.
type Decision struct {
	Time      time.Time                   `json:"time"`
	Elapsed   time.Duration               `json:"elapsed"`
	Iteration hypervisor.Measured[uint64] `json:"iteration"`
	Action    Action                      `json:"action"`
}

// Result is how a migration ended.
type Result struct {
	Policy  string
	Outcome Outcome
	// Refused: the policy declined to start; Aborted: the job was cancelled
	// (by the policy or the caller).
	Refused bool
	Aborted bool
	Reason  string
	// Rule names the policy's rule that refused or aborted the migration
	// ([Action.Rule]); empty for a success or a failure of the job itself.
	Rule string
	Mode hypervisor.MigrationMode
	// Total is the job's duration; Downtime the final pause as the job
	// reports it; BytesSent the data transferred.
	Total     time.Duration
	Downtime  hypervisor.Measured[time.Duration]
	BytesSent uint64
	// DecisionAt is the elapsed time of the last decision that changed the
	// course (throttle, downtime, post-copy, abort, refuse); 0 when the
	// start plan held.
	DecisionAt  time.Duration
	MaxThrottle int
	Decisions   []Decision
	// Job is the backend's own result (zero when refused).
	Job hypervisor.MigrationResult

	err error
}

// Err is nil for a success, and otherwise matches ErrRefused,
// hypervisor.ErrMigrationAborted or hypervisor.ErrMigrationFailed.
func (r Result) Err() error { return r.err }

// Snapshot is a cheap copy of what the engine knows now, for status and
// metrics.
type Snapshot struct {
	Domain   string
	Policy   string
	Phase    Phase
	Strategy string
	Done     bool
	Elapsed  time.Duration

	Memory    uint64
	Remaining hypervisor.Measured[uint64]
	DataSent  hypervisor.Measured[uint64]
	Iteration hypervisor.Measured[uint64]

	DirtyRateBefore hypervisor.Measured[float64]
	DirtyRate       hypervisor.Measured[float64]
	Bandwidth       hypervisor.Measured[float64]
	BandwidthAvg    hypervisor.Measured[float64]

	Throttle            int
	MaxThrottle         int
	ThrottleSensitivity hypervisor.Measured[float64]
	DowntimeLimit       time.Duration

	// Prediction is the model's view at the last poll (total counted from
	// the start); nil until both rates are known.
	Prediction *Prediction
	// LastAction is the policy's latest answer, Decisions the log.
	LastAction Action
	Decisions  []Decision
}

// Snapshot copies the engine's state; safe at any time.
func (e *Engine) Snapshot() Snapshot {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := &e.st
	p := st.lastProgress
	s := Snapshot{
		Domain: e.req.Domain, Policy: e.policy.Name(), Phase: st.phase, Strategy: st.strategy, Done: st.done,
		Elapsed: p.Elapsed, Memory: e.req.Memory,
		Remaining: p.Remaining, DataSent: p.DataSent, Iteration: p.Iteration,
		DirtyRateBefore: st.dirtyBefore, DirtyRate: p.DirtyRate, Bandwidth: p.Bandwidth, BandwidthAvg: st.bwAvg,
		Throttle: st.throttle, MaxThrottle: st.maxThrottle, ThrottleSensitivity: st.sensitivity,
		DowntimeLimit: st.downtimeLimit, LastAction: st.last, Decisions: e.decisionsLocked(),
	}
	if st.prediction != nil {
		pr := *st.prediction
		s.Prediction = &pr
	}
	return s
}

// EngineStatus renders the snapshot as the VMI's
// status.migrationState.virtkitEngine.
func (s Snapshot) EngineStatus() *virtkit.MigrationEngineStatus {
	out := &virtkit.MigrationEngineStatus{Strategy: s.Strategy, ThrottlePercent: int32(s.Throttle)}
	if s.Prediction != nil && s.Prediction.Converges {
		total := round3(s.Prediction.Total.Seconds())
		down := round3(float64(s.Prediction.Downtime) / float64(time.Millisecond))
		out.PredictedTotalSeconds = &total
		out.PredictedDowntimeMs = &down
	}
	dirty := s.DirtyRate
	if !dirty.Valid {
		dirty = s.DirtyRateBefore
	}
	if d, ok := dirty.Get(); ok {
		v := int64(d)
		out.MeasuredDirtyRateBytesPerSecond = &v
	}
	if b, ok := s.BandwidthAvg.Get(); ok {
		v := int64(b)
		out.MeasuredBandwidthBytesPerSecond = &v
	}
	for _, d := range s.Decisions {
		out.Decisions = append(out.Decisions, d.Status())
	}
	return out
}

// Status renders one decision for the VMI status; numbers are formatted so
// the status is exact and diff-friendly.
func (d Decision) Status() virtkit.MigrationEngineDecision {
	out := virtkit.MigrationEngineDecision{Time: metav1.NewTime(d.Time), Action: string(d.Action.Kind), Rule: d.Action.Rule, Reason: d.Action.Reason}
	if len(d.Action.Figures) > 0 || d.Action.ThrottlePercent > 0 || d.Action.DowntimeLimit > 0 {
		out.Numbers = map[string]string{"elapsedSeconds": strconv.FormatFloat(round3(d.Elapsed.Seconds()), 'f', -1, 64)}
	}
	for _, f := range d.Action.Figures {
		key := f.Name
		out.Numbers[key] = strconv.FormatFloat(round3(f.Value), 'f', -1, 64) + unitSuffix(f.Unit)
	}
	if d.Action.ThrottlePercent > 0 {
		out.Numbers["throttlePercent"] = strconv.Itoa(d.Action.ThrottlePercent)
	}
	if d.Action.DowntimeLimit > 0 {
		out.Numbers["downtimeLimitMs"] = strconv.FormatInt(d.Action.DowntimeLimit.Milliseconds(), 10)
	}
	return out
}

func unitSuffix(u string) string {
	if u == "" {
		return ""
	}
	return " " + u
}

func round3(v float64) float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	return math.Round(v*1000) / 1000
}

// String summarises the result in one line.
func (r Result) String() string {
	return fmt.Sprintf("%s %s (%s) after %v: %s", r.Policy, r.Outcome, r.Mode, r.Total.Round(time.Millisecond), r.Reason)
}
