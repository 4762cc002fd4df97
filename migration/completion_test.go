package migration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/migration/internal/fluid"
)

// TestCompletionDeadline follows the deadline through a scripted policy's
// decisions: a modelled prediction of convergence extends it (predicted
// end × 1.25 + 10 s, within the bound), a decision that did not model
// pre-copy keeps it, a modelled verdict of no convergence or a prediction
// past the bound withdraws it, and without a bound the timeout is final.
// The CompletionExtended decision is recorded once, after the timeout.
func TestCompletionDeadline(t *testing.T) {
	fig := func(ratio, predicted float64) []Figure {
		f := []Figure{{Name: "ratio", Value: ratio}}
		if predicted > 0 {
			f = append(f, Figure{Name: "predictedTotal", Value: predicted, Unit: "s"})
		}
		return f
	}
	converges := Action{Kind: ActionContinue, Rule: "Converges", Reason: "c", Figures: fig(0.5, 40)}
	steps := []struct {
		name string
		act  Action
		want time.Duration // with a 100 s bound
	}{
		{"converges: extended", converges, 60 * time.Second},
		{"not modelled: kept", Action{Kind: ActionContinue, Rule: "Other", Reason: "o"}, 60 * time.Second},
		{"does not converge: withdrawn", Action{Kind: ActionContinue, Rule: "Diverges", Reason: "d", Figures: fig(1.2, 0)}, 10 * time.Second},
		{"not modelled after a withdrawal: kept", Action{Kind: ActionContinue, Rule: "Other", Reason: "o"}, 10 * time.Second},
		{"converges again", converges, 60 * time.Second},
		{"past the bound: withdrawn", Action{Kind: ActionContinue, Rule: "Late", Reason: "l", Figures: fig(0.9, 150)}, 10 * time.Second},
		{"near the bound: capped", Action{Kind: ActionContinue, Rule: "Near", Reason: "n", Figures: fig(0.9, 90)}, 100 * time.Second},
	}
	for _, bound := range []time.Duration{100 * time.Second, 0} {
		var acts []Action
		for _, s := range steps {
			acts = append(acts, s.act)
		}
		g := fluid.New(fluid.Config{Memory: 8 * gib, Bandwidth: 10 * mb, Sensitivity: 1,
			Regions: []fluid.Region{{Size: gib, Rate: 5 * mb}}}, epoch)
		e, err := NewEngine(g, Request{Domain: "default_deadline", Memory: 8 * gib, CompletionTimeout: 10 * time.Second, MaxCompletionTimeout: bound},
			Options{Clock: g, Policy: &scriptPolicy{acts: acts}})
		require.NoError(t, err)
		ctx := context.Background()
		require.NoError(t, e.Start(ctx))
		assert.Equal(t, 10*time.Second, e.CompletionDeadline(), "before any decision")
		for _, s := range steps {
			g.Advance(e.PollInterval())
			done, err := e.Step(ctx)
			require.NoError(t, err)
			require.False(t, done)
			want := s.want
			if bound == 0 {
				want = 10 * time.Second
			}
			assert.Equal(t, want, e.CompletionDeadline().Round(time.Millisecond), "bound %v, %s", bound, s.name)
		}
		// Past the timeout with the deadline extended: one decision says so.
		for range 2 {
			g.Advance(10 * time.Second)
			_, err := e.Step(ctx)
			require.NoError(t, err)
		}
		var extended []Decision
		for _, d := range e.Result().Decisions {
			if d.Action.Rule == RuleCompletionExtended {
				extended = append(extended, d)
			}
		}
		if bound == 0 {
			assert.Empty(t, extended)
			continue
		}
		require.Len(t, extended, 1, "bound %v", bound)
		assert.GreaterOrEqual(t, extended[0].Elapsed, 10*time.Second)
		assert.Contains(t, extended[0].Action.Reason, "past the completion timeout of 10s")
	}
}
