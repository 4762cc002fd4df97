package bench

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// Summary is one (profile, policy) cell over repeated runs: a real
// benchmark is noisy, so its figures are read as medians and ranges.
type Summary struct {
	Profile   string `json:"profile"`
	Policy    string `json:"policy"`
	Runs      int    `json:"runs"`
	Succeeded int    `json:"succeeded"`
	// WithinLimit counts the runs that succeeded within the downtime
	// limit ([RuleWithinDowntimeLimit]); Succeeded less WithinLimit
	// succeeded over it.
	WithinLimit int `json:"withinDowntimeLimit"`
	// Total time over every run (a failed or capped run counts at the time
	// it ended, as in the single-run table).
	TotalMedian float64 `json:"totalMedianSeconds"`
	TotalMin    float64 `json:"totalMinSeconds"`
	TotalMax    float64 `json:"totalMaxSeconds"`
	// Downtime over the runs that reported one; nil when none did.
	DowntimeMedianMs *float64 `json:"downtimeMedianMs"`
	DowntimeMaxMs    *float64 `json:"downtimeMaxMs"`
	SentMedian       float64  `json:"sentMedianBytes"`
}

// Summarize groups rows by profile and policy, in the order each pair first
// appears, and reduces every group to its median and range.
func Summarize(rows []Row) []Summary {
	type key struct{ profile, policy string }
	var order []key
	groups := map[key][]Row{}
	for _, r := range rows {
		k := key{r.Profile, r.Policy}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	out := make([]Summary, 0, len(order))
	for _, k := range order {
		g := groups[k]
		s := Summary{Profile: k.profile, Policy: k.policy, Runs: len(g)}
		var totals, downs, sent []float64
		for _, r := range g {
			if r.Outcome == "Succeeded" {
				s.Succeeded++
			}
			if r.Standing() == StandingWithinLimit {
				s.WithinLimit++
			}
			totals = append(totals, r.TotalSeconds)
			sent = append(sent, float64(r.BytesSent))
			if r.DowntimeMs != nil {
				downs = append(downs, *r.DowntimeMs)
			}
		}
		s.TotalMedian, s.TotalMin, s.TotalMax = median(totals), slices.Min(totals), slices.Max(totals)
		s.SentMedian = median(sent)
		if len(downs) > 0 {
			m, x := median(downs), slices.Max(downs)
			s.DowntimeMedianMs, s.DowntimeMaxMs = &m, &x
		}
		out = append(out, s)
	}
	return out
}

// median of a non-empty slice (the mean of the middle two for an even
// count); xs is not modified.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// WriteSummaryTable writes summaries as an aligned table.
func WriteSummaryTable(w io.Writer, sums []Summary) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "profile\tpolicy\truns\tsucceeded\twithin limit\ttotal s median\ttotal s range\tdowntime ms median\tdowntime ms max\tsent MiB median\t")
	for _, s := range sums {
		dm, dx := "-", "-"
		if s.DowntimeMedianMs != nil {
			dm, dx = fmt.Sprintf("%.0f", *s.DowntimeMedianMs), fmt.Sprintf("%.0f", *s.DowntimeMaxMs)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%.3f\t%.3f-%.3f\t%s\t%s\t%.1f\t\n",
			s.Profile, s.Policy, s.Runs, s.Succeeded, s.WithinLimit, s.TotalMedian, s.TotalMin, s.TotalMax,
			dm, dx, s.SentMedian/(1<<20))
	}
	return tw.Flush()
}
