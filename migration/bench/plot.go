package bench

import (
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/virtkit/virtkit/internal/svgplot"
)

const (
	maxPoints   = 1500 // per series, after thinning
	logXSpanMin = 20   // use a log time axis when the runs differ this much
	gib         = 1 << 30
	// denseSamples: a curve with more points than this is drawn translucent.
	denseSamples = 1000
)

// policyStyle is a policy's style index: its place in PolicyNames, so a
// policy looks the same in every plot.
func policyStyle(policy string, fallback int) int {
	if i := slices.Index(policyNames, policy); i >= 0 {
		return i
	}
	return len(policyNames) + fallback
}

// WritePlot draws, for one profile, the remaining data against time for
// every policy's run in rows (runs need Options.Samples) as a standalone
// SVG document. Each policy has its own colour, dash pattern and marker;
// a run whose curve equals an earlier one's is drawn slightly offset and
// says so in the legend. The time axis turns logarithmic when the longest
// run is more than 20 times the shortest, so a policy that aborts after
// seconds and one that burns an hour both stay readable. ✓ ends a run
// that succeeded, ✕ one that failed.
func WritePlot(w io.Writer, profile string, rows []Row) error {
	var series []Row
	for _, r := range rows {
		if r.Profile == profile {
			series = append(series, r)
		}
	}
	if len(series) == 0 {
		return fmt.Errorf("plot: no runs of profile %q", profile)
	}
	maxT, minT, maxR := 0.0, math.Inf(1), 0.0
	for _, r := range series {
		for _, s := range r.Samples {
			maxT = math.Max(maxT, s.Seconds)
			maxR = math.Max(maxR, float64(s.Remaining))
		}
		if n := len(r.Samples); n > 0 {
			minT = math.Min(minT, r.Samples[n-1].Seconds)
		}
	}
	if maxT <= 0 || maxR <= 0 {
		return fmt.Errorf("plot: the runs of profile %q have no samples", profile)
	}
	logX := minT > 0 && maxT/minT > logXSpanMin

	fig := svgplot.Figure{
		Title:    "Remaining data against time: " + profile,
		Subtitle: subtitle(series),
		Note:     "✓ migration completed, ✕ migration failed",
		Width:    1200, LegendWidth: 400,
	}
	panel := svgplot.Panel{
		Title: "Data still to send",
		X:     svgplot.Axis{Label: "time since the migration started (s)", Log: logX},
		Y:     svgplot.Axis{Label: "remaining (GiB)"},
	}
	if logX {
		panel.X.Label = "time since the migration started (s, log scale)"
		panel.X.Min, panel.X.Max = 1, maxT
	}
	// The longest runs first, so the short ones are drawn on top of them.
	order := make([]int, len(series))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return -cmpFloat(series[a].TotalSeconds, series[b].TotalSeconds)
	})
	dups := map[int]int{} // series index -> index of the first equal curve
	for i := range series {
		for j := 0; j < i; j++ {
			if _, isDup := dups[j]; !isDup && slices.Equal(series[i].Samples, series[j].Samples) {
				dups[i] = j
				break
			}
		}
	}
	for _, i := range order {
		r := series[i]
		s := svgplot.Series{Style: policyStyle(r.Policy, i), Markers: 6, EndGlyph: "✕"}
		if r.Outcome == "Succeeded" {
			s.EndGlyph = "✓"
		}
		if j, ok := dups[i]; ok {
			// Every earlier equal curve shifts this one a little further.
			rank := 0
			for k, first := range dups {
				if first == j && k <= i {
					rank++
				}
			}
			s.Offset = 2.5 * float64(rank)
		}
		for _, p := range thin(r.Samples, maxPoints) {
			s.X = append(s.X, p.Seconds)
			s.Y = append(s.Y, float64(p.Remaining)/gib)
		}
		if len(s.X) > denseSamples {
			// A long sawtooth fills an area: tint it, so what is drawn
			// over or under it stays visible.
			s.Opacity = 0.45
		}
		panel.Series = append(panel.Series, s)
	}
	fig.Panels = []svgplot.Panel{panel}
	for i, r := range series {
		detail := fmt.Sprintf("%s after %.0f s; %s", r.Outcome, r.TotalSeconds, guestCost(r))
		if j, ok := dups[i]; ok {
			detail = "same curve as " + series[j].Policy + " (drawn offset)"
		}
		fig.Legend = append(fig.Legend, svgplot.LegendEntry{Style: policyStyle(r.Policy, i), Name: r.Policy, Detail: detail})
	}
	return fig.Render(w)
}

func subtitle(rows []Row) string {
	caps := ""
	for _, r := range rows {
		if r.Capabilities != "" {
			caps = ", " + r.Capabilities + " capabilities"
			break
		}
	}
	return fmt.Sprintf("%d policies%s; lower bound memory/bandwidth %.0f s", len(rows), caps, rows[0].LowerBoundSeconds)
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// thin keeps about n samples: for each of n/2 equal runs of samples, the
// lowest and the highest in time order, so a sawtooth keeps its envelope;
// the first and last samples always stay.
func thin(s []Sample, n int) []Sample {
	if len(s) <= n {
		return s
	}
	buckets := n / 2
	out := make([]Sample, 0, n+2)
	out = append(out, s[0])
	for b := 0; b < buckets; b++ {
		lo, hi := b*len(s)/buckets, (b+1)*len(s)/buckets
		minI, maxI := lo, lo
		for i := lo; i < hi; i++ {
			if s[i].Remaining < s[minI].Remaining {
				minI = i
			}
			if s[i].Remaining > s[maxI].Remaining {
				maxI = i
			}
		}
		if minI > maxI {
			minI, maxI = maxI, minI
		}
		out = append(out, s[minI])
		if maxI != minI {
			out = append(out, s[maxI])
		}
	}
	return append(out, s[len(s)-1])
}
