package migration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stallRun feeds a StallPolicy one Progress per iteration, with remaining
// data rem[i] at elapsed 10 s × (i+1), and returns the first action that
// changes course (or the last Continue).
func stallRun(s *StallPolicy, base Progress, rem []float64) Action {
	var a Action
	for i, r := range rem {
		p := base
		p.Elapsed = time.Duration(i+1) * 10 * time.Second
		p.Iteration = some(uint64(i + 2))
		p.Remaining = some(uint64(r))
		if a = s.Decide(p); a.Strategic() {
			return a
		}
	}
	return a
}

func TestStallPolicy(t *testing.T) {
	base := Progress{Phase: PhasePreCopy, Memory: 8 * gib, BandwidthAvg: some(100 * mb),
		DowntimeLimit: 300 * time.Millisecond, DowntimeBound: 300 * time.Millisecond}
	flat := []float64{2e9, 2e9, 2e9, 2e9, 2e9, 2e9}  // no progress for 60 s
	small := []float64{6e7, 4e7, 4e7, 4e7, 4e7, 4e7} // 0.4 s at 100 MB/s
	tests := []struct {
		name string
		pol  *StallPolicy
		edit func(p *Progress)
		rem  []float64
		want ActionKind
		why  string
	}{
		{"plan: the limit is min(maxDowntime, 300 ms)", NewStallPolicy(StallOptions{MaxDowntime: 900 * time.Millisecond}),
			func(p *Progress) { p.Phase = PhasePlanning }, nil, ActionStart, ""},
		{"progress: continue", NewStallPolicy(StallOptions{}), nil,
			[]float64{8e9, 6e9, 4e9, 2e9, 1e9, 5e8}, ActionContinue, "progress"},
		{"stall at a local minimum, implied pause too long, no post-copy: abort early", NewStallPolicy(StallOptions{}), nil,
			flat, ActionAbort, "abort early"},
		{"stall at a local minimum, post-copy allowed: post-copy", NewStallPolicy(StallOptions{AllowPostCopy: true}),
			func(p *Progress) { p.AllowPostCopy = true }, flat, ActionSwitchPostCopy, "post-copy"},
		{"stall with a pause within 1.5 × maxDowntime: soft stop-and-copy", NewStallPolicy(StallOptions{}), nil,
			small, ActionRaiseDowntime, "soft stop-and-copy"},
		{"post-copy is never aborted", NewStallPolicy(StallOptions{}),
			func(p *Progress) { p.Phase = PhasePostCopy; p.Elapsed = 10 * time.Hour }, nil, ActionContinue, "never abort"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := base
			if tt.edit != nil {
				tt.edit(&p)
			}
			var a Action
			if tt.rem == nil {
				a = tt.pol.Decide(p)
			} else {
				a = stallRun(tt.pol, p, tt.rem)
			}
			require.Equal(t, tt.want, a.Kind, a.Reason)
			assert.Contains(t, a.Reason, tt.why)
			if a.Kind == ActionStart {
				assert.Equal(t, 300*time.Millisecond, a.DowntimeLimit)
			}
			if a.Kind == ActionRaiseDowntime {
				assert.Equal(t, 300*time.Millisecond, a.DowntimeLimit, "the migration's bound is maxDowntime")
			}
		})
	}

	t.Run("past the completion budget: abort, or post-copy when it fits", func(t *testing.T) {
		p := base
		p.Elapsed = 1351 * time.Second // 9 GB × 150 s
		p.Iteration, p.Remaining = some(uint64(3)), some(uint64(2e9))
		assert.Equal(t, ActionAbort, NewStallPolicy(StallOptions{}).Decide(p).Kind)
		p.AllowPostCopy = true
		assert.Equal(t, ActionSwitchPostCopy, NewStallPolicy(StallOptions{AllowPostCopy: true}).Decide(p).Kind)
	})
	t.Run("a forced switchover that does not finish is aborted", func(t *testing.T) {
		s := NewStallPolicy(StallOptions{})
		require.Equal(t, ActionRaiseDowntime, stallRun(s, base, small).Kind)
		p := base
		p.Elapsed = 200 * time.Second
		p.Iteration, p.Remaining = some(uint64(30)), some(uint64(4e7))
		assert.Equal(t, ActionAbort, s.Decide(p).Kind)
	})
	assert.Equal(t, "kubevirt-stall", NewStallPolicy(StallOptions{}).Name())
	assert.Equal(t, "kubevirt-stall-pc", NewStallPolicy(StallOptions{AllowPostCopy: true}).Name())
}
