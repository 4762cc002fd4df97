package bench

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// Comparison is virtkit against the baselines on one profile, scored by
// [RuleWithinDowntimeLimit].
type Comparison struct {
	Profile string
	// Feasible is the closed-form model's verdict on the profile's
	// permissions ([Profile.Feasible]).
	Feasible bool
	// Virtkit is virtkit's row; Baselines every other policy's, in run
	// order.
	Virtkit   Row
	Baselines []Row
	// Best is the fastest baseline that succeeded within the downtime
	// limit (nil when none did): the one virtkit is held to.
	Best *Row
	// BestAnyPause is the fastest baseline that succeeded whatever its
	// pause (nil when none did), for the comparison without the rule.
	BestAnyPause *Row
	// OverLimit are the baselines that succeeded over the downtime limit,
	// in run order.
	OverLimit []*Row
}

// Movable: some baseline succeeded within the downtime limit or the model
// says an allowed strategy converges, so virtkit must succeed within it.
func (c Comparison) Movable() bool { return c.Feasible || c.Best != nil }

// VsBest is virtkit's total over the best baseline's within the downtime
// limit (0 without one, or when virtkit did not succeed within it).
func (c Comparison) VsBest() float64 {
	if c.Virtkit.Standing() != StandingWithinLimit {
		return 0
	}
	return vs(c.Virtkit, c.Best)
}

// VsBestAnyPause is virtkit's total over the best baseline's, both
// regardless of their pauses (0 without one or when virtkit failed).
func (c Comparison) VsBestAnyPause() float64 {
	if c.Virtkit.Outcome != "Succeeded" {
		return 0
	}
	return vs(c.Virtkit, c.BestAnyPause)
}

func vs(r Row, best *Row) float64 {
	if best == nil || best.TotalSeconds <= 0 {
		return 0
	}
	return r.TotalSeconds / best.TotalSeconds
}

// Compare groups rows (which must hold a "virtkit" row per profile) by
// profile in the order given.
func Compare(profiles []Profile, rows []Row) []Comparison {
	var out []Comparison
	for _, p := range profiles {
		c := Comparison{Profile: p.Name}
		c.Feasible, _ = p.Feasible()
		for _, r := range rows {
			if r.Profile != p.Name {
				continue
			}
			if r.Policy == "virtkit" {
				c.Virtkit = r
				continue
			}
			c.Baselines = append(c.Baselines, r)
		}
		for i := range c.Baselines {
			b := &c.Baselines[i]
			if b.Outcome != "Succeeded" {
				continue
			}
			if c.BestAnyPause == nil || b.TotalSeconds < c.BestAnyPause.TotalSeconds {
				c.BestAnyPause = b
			}
			if b.Standing() != StandingWithinLimit {
				c.OverLimit = append(c.OverLimit, b)
				continue
			}
			if c.Best == nil || b.TotalSeconds < c.Best.TotalSeconds {
				c.Best = b
			}
		}
		out = append(out, c)
	}
	return out
}

// CompareSummary is the held-out targets over comparisons, under
// [RuleWithinDowntimeLimit], with the figures without the rule beside
// them.
type CompareSummary struct {
	Profiles int
	// Movable counts the profiles where a baseline succeeded within the
	// downtime limit or the model says an allowed strategy converges.
	Movable int
	// VirtkitWithinLimit counts virtkit's successes within the limit,
	// VirtkitOverLimit its successes over it (not successes under the
	// rule), MissedMovable the movable profiles without a virtkit
	// success within the limit.
	VirtkitWithinLimit, VirtkitOverLimit, MissedMovable int
	// BaselinesOverLimit counts baseline runs that succeeded over the
	// limit.
	BaselinesOverLimit int
	// Behind lists the profiles where virtkit is more than 1.05× the best
	// baseline within the limit; BehindAnyPause, more than 1.05× the best
	// baseline whatever its pause.
	Behind, BehindAnyPause []string
	// MedianRatio is virtkit's median total/(M/B) over the movable
	// profiles (a run that did not succeed within the limit counts as
	// +Inf).
	MedianRatio float64
	// MovableAnyPause and MedianRatioAnyPause are the same without the
	// rule: profiles where any baseline succeeded or the model says
	// feasible; any virtkit success counts.
	MovableAnyPause     int
	MedianRatioAnyPause float64
}

// SummarizeComparisons reduces comparisons to the targets.
func SummarizeComparisons(cs []Comparison) CompareSummary {
	s := CompareSummary{Profiles: len(cs)}
	var ratios, anyRatios []float64
	for _, c := range cs {
		s.BaselinesOverLimit += len(c.OverLimit)
		switch c.Virtkit.Standing() {
		case StandingWithinLimit:
			s.VirtkitWithinLimit++
		case StandingOverLimit:
			s.VirtkitOverLimit++
		}
		if c.Feasible || c.BestAnyPause != nil {
			s.MovableAnyPause++
			r := math.Inf(1)
			if c.Virtkit.Outcome == "Succeeded" {
				r = c.Virtkit.Ratio()
			}
			anyRatios = append(anyRatios, r)
			if v := c.VsBestAnyPause(); v > 1.05 {
				s.BehindAnyPause = append(s.BehindAnyPause, fmt.Sprintf("%s (%.2f×)", c.Profile, v))
			}
		}
		if !c.Movable() {
			continue
		}
		s.Movable++
		if c.Virtkit.Standing() != StandingWithinLimit {
			s.MissedMovable++
			ratios = append(ratios, math.Inf(1))
			continue
		}
		ratios = append(ratios, c.Virtkit.Ratio())
		if v := c.VsBest(); v > 1.05 {
			s.Behind = append(s.Behind, fmt.Sprintf("%s (%.2f×)", c.Profile, v))
		}
	}
	if len(ratios) > 0 {
		s.MedianRatio = median(ratios)
	}
	if len(anyRatios) > 0 {
		s.MedianRatioAnyPause = median(anyRatios)
	}
	return s
}

// WriteComparison writes one line per profile: the configured downtime
// limit, virtkit's outcome, total/(M/B), pause and standing under
// [RuleWithinDowntimeLimit], the best baseline within the limit and
// virtkit over it, the best baseline whatever its pause and virtkit over
// that, and every baseline's total/(M/B) (marked "over N ms" where its
// pause went over the limit) or where it failed; then every run that
// succeeded over the limit, and the targets with and without the rule.
func WriteComparison(w io.Writer, profiles []Profile, rows []Row) error {
	cs := Compare(profiles, rows)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"profile", "model", "limit ms", "M/B s", "virtkit", "pause ms", "within limit", "sent/M", "decision s",
		"best within limit", "vk/best", "best any pause", "vk/best any"}
	if len(cs) > 0 {
		for _, b := range cs[0].Baselines {
			head = append(head, b.Policy)
		}
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, c := range cs {
		model := "hopeless"
		if c.Feasible {
			model = "feasible"
		}
		sentM := 0.0
		if c.Virtkit.MemoryBytes > 0 {
			sentM = float64(c.Virtkit.BytesSent) / float64(c.Virtkit.MemoryBytes)
		}
		cells := []string{c.Profile, model, fmt.Sprintf("%.0f", c.Virtkit.DowntimeLimitMs),
			fmt.Sprintf("%.1f", c.Virtkit.LowerBoundSeconds), cell(c.Virtkit), pauseCell(c.Virtkit), limitCell(c.Virtkit),
			fmt.Sprintf("%.2f", sentM), fmt.Sprintf("%.1f", c.Virtkit.DecisionSeconds),
			bestCell(c.Best), ratioCell(c.VsBest()), bestCell(c.BestAnyPause), ratioCell(c.VsBestAnyPause())}
		for _, b := range c.Baselines {
			s := cell(b)
			if b.Standing() == StandingOverLimit {
				s += " " + limitCell(b)
			}
			cells = append(cells, s)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	s := SummarizeComparisons(cs)
	fmt.Fprintf(w, "\nSucceeded over the downtime limit (%d baseline runs; not successes under %s):\n", s.BaselinesOverLimit, RuleWithinDowntimeLimit)
	for _, c := range cs {
		over := c.OverLimit
		if c.Virtkit.Standing() == StandingOverLimit {
			over = append([]*Row{&c.Virtkit}, over...)
		}
		for _, r := range over {
			fmt.Fprintf(w, "  %s/%s: %.2f s, %s\n", r.Profile, r.Policy, r.TotalSeconds, overText(*r))
		}
	}
	list := func(l []string) string {
		if len(l) == 0 {
			return "none"
		}
		return strings.Join(l, ", ")
	}
	_, err := fmt.Fprintf(w, "\nUnder %s (a run succeeds only if its pause stayed within the configured downtime limit): "+
		"%d profiles, %d movable (a baseline succeeded within the limit or the model says an allowed strategy converges); "+
		"virtkit succeeded within the limit on %d, over it on %d, missed %d movable; more than 1.05× behind the best baseline within the limit: %s; "+
		"median virtkit total/(M/B) over the movable: %.2f\n"+
		"Regardless of the pause: %d movable; more than 1.05× behind the best baseline: %s; median virtkit total/(M/B) over those: %.2f\n",
		RuleWithinDowntimeLimit, s.Profiles, s.Movable, s.VirtkitWithinLimit, s.VirtkitOverLimit, s.MissedMovable, list(s.Behind), s.MedianRatio,
		s.MovableAnyPause, list(s.BehindAnyPause), s.MedianRatioAnyPause)
	return err
}

func bestCell(r *Row) string {
	if r == nil {
		return "-"
	}
	return fmt.Sprintf("%s %.2f", r.Policy, r.Ratio())
}

func ratioCell(v float64) string {
	if v <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}

func pauseCell(r Row) string {
	if r.DowntimeMs == nil {
		return "-"
	}
	return fmt.Sprintf("%.0f", *r.DowntimeMs)
}

// overText says how a completed run went over its limit.
func overText(r Row) string {
	switch {
	case r.WithinDowntimeLimit == nil:
		return "pause not checked against a limit"
	case r.DowntimeMs == nil:
		return fmt.Sprintf("no pause reported (limit %.0f ms)", r.DowntimeLimitMs)
	}
	return fmt.Sprintf("pause %.1f ms, limit %.0f ms, over by %.1f ms", *r.DowntimeMs, r.DowntimeLimitMs, r.OvershootMs())
}

// cell is a row as total/(M/B), or how it failed and when.
func cell(r Row) string {
	switch r.Outcome {
	case "Succeeded":
		s := fmt.Sprintf("%.2f", r.Ratio())
		if r.Mode == "PostCopy" {
			s += "pc"
		}
		return s
	case "":
		return "-"
	}
	return fmt.Sprintf("fail@%.0fs", r.TotalSeconds)
}
