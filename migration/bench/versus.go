package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteVersus writes the comparison a user reads first: per profile,
// virtkit's total against the fastest baseline that succeeded within the
// downtime limit ([RuleWithinDowntimeLimit]) and the fastest regardless of
// its pause, in seconds and as ratios; then the targets as TestHeldOut
// computes them ([SummarizeComparisons]): the median virtkit total/(M/B)
// over the movable profiles, with the rule and without it, and the
// profiles where virtkit is more than 1.05× behind. rows must hold a
// "virtkit" row per profile.
func WriteVersus(w io.Writer, profiles []Profile, rows []Row) error {
	cs := Compare(profiles, rows)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "profile\tlimit ms\tM/B s\tvirtkit s\ttotal/(M/B)\tpause ms\tbest within limit\tbest s\tvirtkit/best\tfastest regardless\tfastest s\tpause ms\tvirtkit/fastest\t")
	for _, c := range cs {
		v := c.Virtkit
		vk := "-"
		switch {
		case v.Outcome == "Succeeded":
			vk = fmt.Sprintf("%.2f", v.TotalSeconds)
			if v.Standing() == StandingOverLimit {
				vk += " (" + limitCell(v) + ")"
			}
		case v.Outcome != "":
			vk = fmt.Sprintf("%s at %.1f", strings.ToLower(v.Outcome), v.TotalSeconds)
			if v.Rule != "" {
				vk += " (" + v.Rule + ")"
			}
		}
		ratio := "-"
		if v.Outcome == "Succeeded" {
			ratio = fmt.Sprintf("%.2f", v.Ratio())
		}
		best, bestS := versusCells(c.Best)
		fast, fastS := versusCells(c.BestAnyPause)
		fastPause := "-"
		if c.BestAnyPause != nil {
			fastPause = pauseCell(*c.BestAnyPause)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.1f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", c.Profile, v.DowntimeLimitMs, v.LowerBoundSeconds,
			vk, ratio, pauseCell(v), best, bestS, ratioCell(c.VsBest()), fast, fastS, fastPause, ratioCell(c.VsBestAnyPause()))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	s := SummarizeComparisons(cs)
	list := func(l []string) string {
		if len(l) == 0 {
			return "none"
		}
		return strings.Join(l, ", ")
	}
	_, err := fmt.Fprintf(w, "\nWithin the downtime limit (%s): %d of %d profiles movable; virtkit succeeded within the limit on %d, missed %d movable; "+
		"more than 1.05× behind the best baseline: %s; median virtkit total/(M/B) over the movable: %s\n"+
		"Regardless of the pause: %d movable; more than 1.05× behind the fastest baseline: %s; median virtkit total/(M/B): %s\n",
		RuleWithinDowntimeLimit, s.Movable, s.Profiles, s.VirtkitWithinLimit, s.MissedMovable, list(s.Behind), medianCell(s.MedianRatio, s.Movable),
		s.MovableAnyPause, list(s.BehindAnyPause), medianCell(s.MedianRatioAnyPause, s.MovableAnyPause))
	return err
}

// versusCells names a baseline row and its total, or "none".
func versusCells(r *Row) (string, string) {
	if r == nil {
		return "none", "-"
	}
	return r.Policy, fmt.Sprintf("%.2f", r.TotalSeconds)
}

// medianCell is a median ratio, or "-" over no profile.
func medianCell(v float64, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}
