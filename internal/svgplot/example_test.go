package svgplot_test

import (
	"fmt"
	"strings"

	"github.com/virtkit/virtkit/internal/svgplot"
)

func Example() {
	fig := svgplot.Figure{
		Title: "Latency",
		Panels: []svgplot.Panel{{
			Title: "p50 against fleet size",
			X:     svgplot.Axis{Label: "VMs", Log: true},
			Y:     svgplot.Axis{Label: "seconds"},
			Series: []svgplot.Series{
				{Style: 0, X: []float64{10, 100, 1000}, Y: []float64{0.1, 0.4, 1.7}, Markers: -1},
			},
		}},
		Legend: []svgplot.LegendEntry{{Style: 0, Name: "p50"}},
	}
	var b strings.Builder
	if err := fig.Render(&b); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(strings.HasPrefix(b.String(), "<svg"), strings.Count(b.String(), "<circle"))
	fmt.Println(svgplot.LinearTicks(0, 1.7, 4))
	// Output:
	// true 4
	// [0 0.5 1 1.5 2]
}
