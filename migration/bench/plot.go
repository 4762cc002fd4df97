package bench

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// plot geometry, in SVG user units.
const (
	plotWidth   = 1040
	plotHeight  = 540
	plotLeft    = 80
	plotRight   = 280 // legend
	plotTop     = 50
	plotBottom  = 60
	maxPoints   = 1500 // per series, after thinning
	logXSpanMin = 20   // use a log time axis when the runs differ this much
)

var plotColors = []string{"#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666"}

// WritePlot draws, for one profile, the remaining data against time for
// every policy's run in rows (runs need Options.Samples) as a standalone
// SVG document. The time axis turns logarithmic when the longest run is
// more than 20 times the shortest, so a policy that aborts after seconds
// and one that burns an hour both stay readable.
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
	x0 := 0.5 // log axis starts at the first poll
	innerW := float64(plotWidth - plotLeft - plotRight)
	innerH := float64(plotHeight - plotTop - plotBottom)
	xpos := func(t float64) float64 {
		if logX {
			t = math.Max(t, x0)
			return plotLeft + innerW*math.Log(t/x0)/math.Log(maxT/x0)
		}
		return plotLeft + innerW*t/maxT
	}
	ypos := func(r float64) float64 { return plotTop + innerH*(1-r/maxR) }

	b := bufio.NewWriter(w)
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		plotWidth, plotHeight, plotWidth, plotHeight)
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="white"/>`+"\n", plotWidth, plotHeight)
	caps := ""
	for _, r := range rows {
		if r.Profile == profile && r.Capabilities != "" {
			caps = " (" + r.Capabilities + " capabilities)"
			break
		}
	}
	fmt.Fprintf(b, `<text x="%d" y="25" font-size="16">Remaining data vs time: %s%s</text>`+"\n", plotLeft, html.EscapeString(profile), html.EscapeString(caps))
	// Axes and grid.
	fmt.Fprintf(b, `<g stroke="#999" stroke-width="1">`+"\n")
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d"/>`+"\n", plotLeft, plotTop, plotLeft, plotHeight-plotBottom)
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d"/>`+"\n", plotLeft, plotHeight-plotBottom, plotWidth-plotRight, plotHeight-plotBottom)
	fmt.Fprintf(b, "</g>\n")
	for _, t := range timeTicks(maxT, logX, x0) {
		x := xpos(t)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>`+"\n", x, plotTop, x, plotHeight-plotBottom)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x, plotHeight-plotBottom+18, formatTick(t))
	}
	axis := "time (s)"
	if logX {
		axis = "time (s, log scale)"
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", plotLeft+innerW/2, plotHeight-15, axis)
	for i := 0; i <= 4; i++ {
		r := maxR * float64(i) / 4
		y := ypos(r)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>`+"\n", plotLeft, y, plotWidth-plotRight, y)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%.1f GB</text>`+"\n", plotLeft-6, y+4, r/1e9)
	}
	// Series.
	for i, r := range series {
		color := plotColors[i%len(plotColors)]
		var pts strings.Builder
		for _, s := range thin(r.Samples, maxPoints) {
			fmt.Fprintf(&pts, "%.1f,%.1f ", xpos(s.Seconds), ypos(float64(s.Remaining)))
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", color, strings.TrimSpace(pts.String()))
		if n := len(r.Samples); n > 0 {
			last := r.Samples[n-1]
			mark := "●"
			if r.Outcome != "Succeeded" {
				mark = "✕"
			}
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" fill="%s" text-anchor="middle">%s</text>`+"\n",
				xpos(last.Seconds), ypos(float64(last.Remaining))+4, color, mark)
		}
		ly := plotTop + 20*i
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>`+"\n",
			plotWidth-plotRight+15, ly, plotWidth-plotRight+35, ly, color)
		fmt.Fprintf(b, `<text x="%d" y="%d">%s: %s %.0f s, %s</text>`+"\n", plotWidth-plotRight+40, ly+4,
			html.EscapeString(r.Policy), html.EscapeString(r.Outcome), r.TotalSeconds, html.EscapeString(guestCost(r)))
	}
	fmt.Fprintln(b, "</svg>")
	return b.Flush()
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

func timeTicks(maxT float64, logX bool, x0 float64) []float64 {
	var ticks []float64
	if logX {
		for t := 1.0; t <= maxT; t *= 10 {
			if t >= x0 {
				ticks = append(ticks, t)
			}
		}
		return ticks
	}
	step := math.Pow(10, math.Floor(math.Log10(maxT)))
	if maxT/step < 3 {
		step /= 2
	}
	for t := 0.0; t <= maxT; t += step {
		ticks = append(ticks, t)
	}
	return ticks
}

func formatTick(t float64) string {
	if t == math.Trunc(t) {
		return fmt.Sprintf("%.0f", t)
	}
	return fmt.Sprintf("%.1f", t)
}
