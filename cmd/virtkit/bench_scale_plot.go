package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"

	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/internal/svgplot"
)

// writeScalePlot draws `bench scale` results as an SVG: create-to-Running
// latency percentiles and CPU per VM against the fleet size.
func writeScalePlot(w io.Writer, nodes int, results []cluster.ScaleResult) error {
	if len(results) == 0 {
		return errors.New("no results")
	}
	minN, maxN := math.Inf(1), 0.0
	for _, r := range results {
		minN, maxN = math.Min(minN, float64(r.VMs)), math.Max(maxN, float64(r.VMs))
	}
	fleet := svgplot.Axis{Label: "VMs created at once", Log: maxN >= 10*minN}
	if fleet.Log {
		fleet.Label += " (log scale)"
	}
	latency := svgplot.Panel{
		Title: "Create to Running, per VM",
		X:     fleet,
		Y:     svgplot.Axis{Label: "latency (s)"},
	}
	cpu := svgplot.Panel{
		Title: "CPU per VM (whole process, create to last Running)",
		X:     fleet,
		Y:     svgplot.Axis{Label: "CPU per VM (ms)"},
	}
	percentiles := []struct {
		name string
		get  func(cluster.ScaleResult) float64
	}{
		{"p50", func(r cluster.ScaleResult) float64 { return r.P50.Seconds() }},
		{"p90", func(r cluster.ScaleResult) float64 { return r.P90.Seconds() }},
		{"p99", func(r cluster.ScaleResult) float64 { return r.P99.Seconds() }},
	}
	fig := svgplot.Figure{
		Title:       "Fleet scale on simulated hosts",
		Subtitle:    fmt.Sprintf("%d nodes, GOMAXPROCS=%d, one fresh control plane per fleet size", nodes, runtime.GOMAXPROCS(0)),
		PanelHeight: 300,
	}
	for i, p := range percentiles {
		s := svgplot.Series{Style: i, Markers: -1}
		for _, r := range results {
			s.X = append(s.X, float64(r.VMs))
			s.Y = append(s.Y, p.get(r))
		}
		latency.Series = append(latency.Series, s)
		last := results[len(results)-1]
		fig.Legend = append(fig.Legend, svgplot.LegendEntry{Style: i, Name: p.name + " latency",
			Detail: fmt.Sprintf("%.2f s at %d VMs", p.get(last), last.VMs)})
	}
	s := svgplot.Series{Style: 3, Markers: -1}
	for _, r := range results {
		s.X = append(s.X, float64(r.VMs))
		s.Y = append(s.Y, float64(r.CPUPerVM)/1e6)
	}
	cpu.Series = []svgplot.Series{s}
	last := results[len(results)-1]
	fig.Legend = append(fig.Legend, svgplot.LegendEntry{Style: 3, Name: "CPU per VM",
		Detail: fmt.Sprintf("%.2f ms at %d VMs", float64(last.CPUPerVM)/1e6, last.VMs)})
	fig.Panels = []svgplot.Panel{latency, cpu}
	return fig.Render(w)
}
