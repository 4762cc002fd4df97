package bench

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// Comparison is virtkit against the baselines on one profile.
type Comparison struct {
	Profile string
	// Feasible is the closed-form model's verdict on the profile's
	// permissions ([Profile.Feasible]).
	Feasible bool
	// Virtkit is virtkit's row; Baselines every other policy's, in run
	// order.
	Virtkit   Row
	Baselines []Row
	// Best is the fastest baseline that succeeded (nil when none did).
	Best *Row
}

// Movable: some baseline succeeded or the model says an allowed strategy
// converges, so virtkit must succeed.
func (c Comparison) Movable() bool { return c.Feasible || c.Best != nil }

// VsBest is virtkit's total over the best baseline's (0 without one or
// when virtkit failed).
func (c Comparison) VsBest() float64 {
	if c.Best == nil || c.Virtkit.Outcome != "Succeeded" || c.Best.TotalSeconds <= 0 {
		return 0
	}
	return c.Virtkit.TotalSeconds / c.Best.TotalSeconds
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
			if b.Outcome == "Succeeded" && (c.Best == nil || b.TotalSeconds < c.Best.TotalSeconds) {
				c.Best = b
			}
		}
		out = append(out, c)
	}
	return out
}

// CompareSummary is the held-out targets over comparisons.
type CompareSummary struct {
	Profiles, Movable, VirtkitSucceeded, MissedMovable int
	// Behind lists profiles where virtkit is more than 1.05× the best
	// baseline.
	Behind []string
	// MedianRatio is virtkit's median total/(M/B) over the movable
	// profiles (a failure counts as +Inf).
	MedianRatio float64
}

// Summarize reduces comparisons to the targets.
func SummarizeComparisons(cs []Comparison) CompareSummary {
	s := CompareSummary{Profiles: len(cs)}
	var ratios []float64
	for _, c := range cs {
		ok := c.Virtkit.Outcome == "Succeeded"
		if ok {
			s.VirtkitSucceeded++
		}
		if !c.Movable() {
			continue
		}
		s.Movable++
		if !ok {
			s.MissedMovable++
			ratios = append(ratios, math.Inf(1))
			continue
		}
		ratios = append(ratios, c.Virtkit.Ratio())
		if v := c.VsBest(); v > 1.05 {
			s.Behind = append(s.Behind, fmt.Sprintf("%s (%.2f×)", c.Profile, v))
		}
	}
	s.MedianRatio = median(ratios)
	return s
}

// WriteComparison writes one line per profile: virtkit's outcome and
// total/(M/B), the best baseline, virtkit over it, and every baseline's
// total/(M/B) (or where it failed), then the targets.
func WriteComparison(w io.Writer, profiles []Profile, rows []Row) error {
	cs := Compare(profiles, rows)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"profile", "model", "M/B s", "virtkit", "sent/M", "decision s", "best baseline", "vk/best"}
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
		best, vs := "-", "-"
		if c.Best != nil {
			best = fmt.Sprintf("%s %.2f", c.Best.Policy, c.Best.Ratio())
		}
		if v := c.VsBest(); v > 0 {
			vs = fmt.Sprintf("%.2f", v)
		}
		sentM := 0.0
		if c.Virtkit.MemoryBytes > 0 {
			sentM = float64(c.Virtkit.BytesSent) / float64(c.Virtkit.MemoryBytes)
		}
		cells := []string{c.Profile, model, fmt.Sprintf("%.1f", c.Virtkit.LowerBoundSeconds), cell(c.Virtkit),
			fmt.Sprintf("%.2f", sentM), fmt.Sprintf("%.1f", c.Virtkit.DecisionSeconds), best, vs}
		for _, b := range c.Baselines {
			cells = append(cells, cell(b))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	s := SummarizeComparisons(cs)
	behind := "none"
	if len(s.Behind) > 0 {
		behind = strings.Join(s.Behind, ", ")
	}
	_, err := fmt.Fprintf(w, "\n%d profiles, %d movable (a baseline succeeded or the model says an allowed strategy converges); virtkit succeeded on %d, missed %d movable; more than 1.05× behind the best baseline: %s; median virtkit total/(M/B) over the movable: %.2f\n",
		s.Profiles, s.Movable, s.VirtkitSucceeded, s.MissedMovable, behind, s.MedianRatio)
	return err
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
