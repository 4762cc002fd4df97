package simulation

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// Repro is a replayable reproduction: the seed (the cluster's random
// choices) and the exact op log.
type Repro struct {
	Seed      int64  `json:"seed"`
	Invariant string `json:"invariant,omitempty"`
	// NoWatchdog replays with the hosts' watchdogs off (Config.NoWatchdog).
	NoWatchdog bool `json:"noWatchdog,omitempty"`
	Ops        []Op `json:"ops"`
}

// ReadRepro reads a reproduction written by WriteRepro (or printed by a
// failing run).
func ReadRepro(path string) (Repro, error) {
	var r Repro
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// JSON is the reproduction as indented JSON, one op a line.
func (r Repro) JSON() string {
	b, _ := json.Marshal(struct {
		Seed       int64  `json:"seed"`
		Invariant  string `json:"invariant,omitempty"`
		NoWatchdog bool   `json:"noWatchdog,omitempty"`
	}{r.Seed, r.Invariant, r.NoWatchdog})
	s := string(b[:len(b)-1]) + `,"ops":[`
	for i, op := range r.Ops {
		ob, _ := json.Marshal(op)
		if i > 0 {
			s += ","
		}
		s += "\n  " + string(ob)
	}
	return s + "\n]}\n"
}

// ShrinkBudget bounds a shrink.
type ShrinkBudget struct {
	// Runs is the most runs a shrink may spend (default 60).
	Runs int
	// Wall is the most wall time (default 3 minutes).
	Wall time.Duration
}

// Shrink reduces ops to a shorter log that still breaks invariant (delta
// debugging: drop chunks of halving size while the failure stays). The
// seed stays the same, so the cluster's own random choices repeat.
func Shrink(ctx context.Context, cfg Config, ops []Op, invariant string, b ShrinkBudget) ([]Op, int) {
	return ShrinkWith(ctx, func(ctx context.Context, cand []Op) (Outcome, error) { return Run(ctx, cfg, cand) },
		ops, invariant, b)
}

// Runner runs one candidate op log (Run on the embedded cluster, or
// RunMultiProcess on fresh processes).
type Runner func(ctx context.Context, ops []Op) (Outcome, error)

// ShrinkWith is Shrink over any runner: a candidate counts as failing
// when one run of it breaks invariant. On real time (the multi-process
// mode) a run does not repeat exactly, so a failure that depends on timing
// may stop the shrink early; what it returns still failed once.
func ShrinkWith(ctx context.Context, run Runner, ops []Op, invariant string, b ShrinkBudget) ([]Op, int) {
	if b.Runs <= 0 {
		b.Runs = 60
	}
	if b.Wall <= 0 {
		b.Wall = 3 * time.Minute
	}
	deadline := time.Now().Add(b.Wall)
	runs := 0
	fails := func(cand []Op) bool {
		runs++
		out, err := run(ctx, cand)
		if err != nil {
			return false
		}
		for _, v := range out.Violations {
			if v.Invariant == invariant {
				return true
			}
		}
		return false
	}
	cur := append([]Op(nil), ops...)
	for chunk := len(cur) / 2; chunk >= 1; {
		removed := false
		for start := 0; start < len(cur); {
			if runs >= b.Runs || time.Now().After(deadline) || ctx.Err() != nil {
				return cur, runs
			}
			end := min(start+chunk, len(cur))
			cand := append(append([]Op(nil), cur[:start]...), cur[end:]...)
			if len(cand) > 0 && fails(cand) {
				cur, removed = cand, true
				continue
			}
			start = end
		}
		if !removed {
			chunk /= 2
		}
	}
	return cur, runs
}
