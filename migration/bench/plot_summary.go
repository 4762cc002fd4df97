package bench

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/virtkit/virtkit/internal/svgplot"
)

// InformativeProfile returns the profile of rows whose runs differ the
// most between policies: the most distinct curves (outcome and total time
// to the second), then the shorter longest run (a more readable time
// axis), then the first in rows. "" when rows is empty.
func InformativeProfile(rows []Row) string {
	type score struct {
		distinct int
		longest  float64
	}
	var order []string
	scores := map[string]*score{}
	seen := map[string]map[string]bool{}
	for _, r := range rows {
		s, ok := scores[r.Profile]
		if !ok {
			s = &score{}
			scores[r.Profile] = s
			seen[r.Profile] = map[string]bool{}
			order = append(order, r.Profile)
		}
		key := fmt.Sprintf("%s %.0f", r.Outcome, r.TotalSeconds)
		if !seen[r.Profile][key] {
			seen[r.Profile][key] = true
			s.distinct++
		}
		s.longest = math.Max(s.longest, r.TotalSeconds)
	}
	best := ""
	for _, p := range order {
		if best == "" {
			best = p
			continue
		}
		s, b := scores[p], scores[best]
		if s.distinct > b.distinct || (s.distinct == b.distinct && s.longest < b.longest) {
			best = p
		}
	}
	return best
}

// WriteSummaryPlot draws every profile of rows side by side as an SVG
// document: per policy, total time over the lower bound memory/bandwidth
// (log scale) and the downtime of the switchover. A failed run is a cross:
// at the time it gave up in the first panel, at zero in the second (it
// never switched over).
func WriteSummaryPlot(w io.Writer, rows []Row) error {
	if len(rows) == 0 {
		return errors.New("plot: no runs")
	}
	var profiles, policies []string
	for _, r := range rows {
		if !slices.Contains(profiles, r.Profile) {
			profiles = append(profiles, r.Profile)
		}
		if !slices.Contains(policies, r.Policy) {
			policies = append(policies, r.Policy)
		}
	}
	ratio := svgplot.Panel{
		Title: "Total time / lower bound (memory / bandwidth)",
		X:     svgplot.Axis{Label: "profile", Categories: profiles},
		Y:     svgplot.Axis{Label: "total / lower bound (log scale)", Log: true},
	}
	downtime := svgplot.Panel{
		Title: "Downtime at the switchover",
		X:     svgplot.Axis{Label: "profile", Categories: profiles},
		Y:     svgplot.Axis{Label: "downtime (ms)"},
	}
	fig := svgplot.Figure{
		Title:       "Live-migration policies on every profile",
		PanelHeight: 300,
		Note:        "✕ the migration failed (left at the time it gave up;\n   at zero downtime: it never switched over)",
	}
	fig.Subtitle = fmt.Sprintf("%d profiles x %d policies%s", len(profiles), len(policies), capsSuffix(rows))
	slot := 0.8 / float64(len(policies))
	for pi, pol := range policies {
		style := policyStyle(pol, pi)
		rs := svgplot.Series{Style: style, NoLine: true, Stem: true, Markers: -1}
		ds := svgplot.Series{Style: style, NoLine: true, Stem: true, Markers: -1}
		for _, r := range rows {
			if r.Policy != pol {
				continue
			}
			x := float64(slices.Index(profiles, r.Profile)) + (float64(pi)-float64(len(policies)-1)/2)*slot
			failed := r.Outcome != "Succeeded"
			if r.LowerBoundSeconds > 0 {
				rs.X = append(rs.X, x)
				rs.Y = append(rs.Y, r.TotalSeconds/r.LowerBoundSeconds)
				rs.Crossed = append(rs.Crossed, failed)
			}
			dt := 0.0
			if r.DowntimeMs != nil && !failed {
				dt = *r.DowntimeMs
			}
			ds.X = append(ds.X, x)
			ds.Y = append(ds.Y, dt)
			ds.Crossed = append(ds.Crossed, failed)
		}
		ratio.Series = append(ratio.Series, rs)
		downtime.Series = append(downtime.Series, ds)
		fig.Legend = append(fig.Legend, svgplot.LegendEntry{Style: style, Name: pol, Detail: summaryDetail(rows, pol)})
	}
	fig.Panels = []svgplot.Panel{ratio, downtime}
	return fig.Render(w)
}

func capsSuffix(rows []Row) string {
	for _, r := range rows {
		if r.Capabilities != "" {
			return ", " + r.Capabilities + " capabilities"
		}
	}
	return ""
}

// summaryDetail is a policy's legend line: how many runs succeeded.
func summaryDetail(rows []Row, policy string) string {
	ok, n := 0, 0
	for _, r := range rows {
		if r.Policy == policy {
			n++
			if r.Outcome == "Succeeded" {
				ok++
			}
		}
	}
	return fmt.Sprintf("%d of %d profiles migrated", ok, n)
}
