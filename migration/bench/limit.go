package bench

import (
	"fmt"
	"time"
)

// RuleWithinDowntimeLimit names the rule by which the benchmark scores a
// run: a migration succeeds only if it completed and the guest's actual
// pause stayed within the downtime limit configured for it (the
// profile's downtimeLimit, the same for every policy). A migration that
// completed with a longer pause has not met its contract: it is listed,
// with its pause and the overshoot, and counted as "succeeded over the
// downtime limit", but it is never the best baseline within the limit,
// and a virtkit run over the limit is not a success within it either.
// A pause equal to the limit is within it; a completed run that reported
// no pause cannot be shown to be within it and counts as over.
const RuleWithinDowntimeLimit = "WithinDowntimeLimit"

// Standing is how a run stands under [RuleWithinDowntimeLimit].
type Standing string

const (
	// StandingWithinLimit: completed, with a pause within the limit.
	StandingWithinLimit Standing = "WithinLimit"
	// StandingOverLimit: completed, with a pause over the limit (or no
	// pause reported).
	StandingOverLimit Standing = "OverLimit"
	// StandingFailed: did not complete.
	StandingFailed Standing = "Failed"
)

// PauseWithinLimit is [RuleWithinDowntimeLimit]'s test of a pause: at
// most the configured limit.
func PauseWithinLimit(pauseMs float64, limit time.Duration) bool {
	return pauseMs <= float64(limit)/float64(time.Millisecond)
}

// ApplyDowntimeRule records in r, from its outcome, pause and
// DowntimeLimit, whether the run met [RuleWithinDowntimeLimit]:
// DowntimeLimitMs and WithinDowntimeLimit (nil when the run did not
// succeed or has no limit to be held to). [RunOne] and the real-QEMU
// benchmark call it on every row.
func (r *Row) ApplyDowntimeRule() {
	r.WithinDowntimeLimit = nil
	r.DowntimeLimitMs = 0
	if r.DowntimeLimit <= 0 {
		return
	}
	r.DowntimeLimitMs = float64(r.DowntimeLimit) / float64(time.Millisecond)
	if r.Outcome != "Succeeded" {
		return
	}
	ok := r.DowntimeMs != nil && PauseWithinLimit(*r.DowntimeMs, r.DowntimeLimit)
	r.WithinDowntimeLimit = &ok
}

// Standing is the row's standing under [RuleWithinDowntimeLimit], read
// from what [Row.ApplyDowntimeRule] recorded: a success without a
// recorded verdict is not taken to be within the limit.
func (r Row) Standing() Standing {
	switch {
	case r.Outcome != "Succeeded":
		return StandingFailed
	case r.WithinDowntimeLimit != nil && *r.WithinDowntimeLimit:
		return StandingWithinLimit
	}
	return StandingOverLimit
}

// OvershootMs is how far a completed run's pause went over its limit
// (0 when within it, or when it reported no pause or no limit).
func (r Row) OvershootMs() float64 {
	if r.Outcome != "Succeeded" || r.DowntimeMs == nil || r.DowntimeLimitMs <= 0 {
		return 0
	}
	return max(0, *r.DowntimeMs-r.DowntimeLimitMs)
}

// limitCell is the row's standing for a table column: "yes", "over N ms"
// ("over, no pause" when none was reported, "not checked" without a
// recorded verdict) for a success, "-" for a failure.
func limitCell(r Row) string {
	switch r.Standing() {
	case StandingWithinLimit:
		return "yes"
	case StandingOverLimit:
		if r.WithinDowntimeLimit == nil {
			return "not checked"
		}
		if r.DowntimeMs == nil {
			return "over, no pause"
		}
		return fmt.Sprintf("over %.0f ms", r.OvershootMs())
	}
	return "-"
}
