package bench

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInformativeProfile(t *testing.T) {
	row := func(profile, policy, outcome string, total float64) Row {
		return Row{Profile: profile, Policy: policy, Outcome: outcome, TotalSeconds: total}
	}
	tests := []struct {
		name string
		rows []Row
		want string
	}{
		{"empty", nil, ""},
		{"identical runs lose to differing ones", []Row{
			row("idle", "a", "Succeeded", 3.8), row("idle", "b", "Succeeded", 3.8), row("idle", "c", "Succeeded", 3.8),
			row("web", "a", "Succeeded", 80), row("web", "b", "Succeeded", 95), row("web", "c", "Succeeded", 95),
		}, "web"},
		{"a failure is a different curve", []Row{
			row("web", "a", "Succeeded", 80), row("web", "b", "Succeeded", 95),
			row("hog", "a", "Succeeded", 80), row("hog", "b", "Failed", 80), row("hog", "c", "Failed", 81),
		}, "hog"},
		{"a tie goes to the shorter longest run", []Row{
			row("long", "a", "Succeeded", 80), row("long", "b", "Failed", 6400),
			row("short", "a", "Succeeded", 80), row("short", "b", "Failed", 130),
		}, "short"},
		{"then to the first", []Row{
			row("first", "a", "Succeeded", 1), row("first", "b", "Succeeded", 2),
			row("second", "a", "Succeeded", 1), row("second", "b", "Succeeded", 2),
		}, "first"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, InformativeProfile(tt.rows))
		})
	}
}

var (
	polylineRE = regexp.MustCompile(`<polyline [^>]*?(?: stroke-dasharray="([^"]*)")? points="([^"]*)"/>`)
	yTickRE    = regexp.MustCompile(`text-anchor="end">([^<]*)<`)
	crossRE    = regexp.MustCompile(`<path d="M[\d.]+ [\d.]+L[\d.]+ [\d.]+M[\d.]+ [\d.]+L[\d.]+ [\d.]+" fill="none"`)
)

// TestWritePlotDistinguishesEqualCurves: runs with the same curve are
// drawn with their own dash pattern, a little apart, and the legend says
// which curve they repeat.
func TestWritePlotDistinguishesEqualCurves(t *testing.T) {
	curve := []Sample{{0, 8 << 30}, {2, 6 << 30}, {4, 3 << 30}, {7, 0}}
	rows := []Row{
		{Profile: "web", Policy: "kubevirt", Outcome: "Succeeded", TotalSeconds: 7, Samples: curve},
		{Profile: "web", Policy: "kubevirt-stall", Outcome: "Succeeded", TotalSeconds: 7, Samples: curve},
		{Profile: "web", Policy: "nova", Outcome: "Succeeded", TotalSeconds: 7, Samples: curve},
	}
	var svg bytes.Buffer
	require.NoError(t, WritePlot(&svg, "web", rows))
	lines := polylineRE.FindAllStringSubmatch(svg.String(), -1)
	require.Len(t, lines, 3)
	dashes, points := map[string]bool{}, map[string]bool{}
	for _, l := range lines {
		dashes[l[1]] = true
		points[l[2]] = true
	}
	assert.Len(t, dashes, 3, "every policy has its own dash pattern")
	assert.Len(t, points, 3, "equal curves are drawn apart")
	assert.Equal(t, 2, strings.Count(svg.String(), "same curve as kubevirt"))
	// Round ticks: 8 GiB gives 0, 2, 4, 6, 8 GiB.
	var ticks []string
	for _, m := range yTickRE.FindAllStringSubmatch(svg.String(), -1) {
		ticks = append(ticks, m[1])
	}
	assert.Equal(t, []string{"0", "2", "4", "6", "8"}, ticks)
}

func TestWriteSummaryPlot(t *testing.T) {
	rows := sampleRows()
	var svg bytes.Buffer
	require.NoError(t, WriteSummaryPlot(&svg, rows))
	s := svg.String()
	for _, want := range []string{"P7-hog", "P1-idle", "virtkit", "kubevirt", "Total time / lower bound", "Downtime",
		"1 of 2 profiles migrated", "0 of 1 profiles migrated"} {
		assert.Contains(t, s, want)
	}
	// P7-hog's two failed runs are crosses, in both panels.
	assert.Len(t, crossRE.FindAllString(s, -1), 4, "crosses for failed runs")
	assert.Error(t, WriteSummaryPlot(&svg, nil))
}
