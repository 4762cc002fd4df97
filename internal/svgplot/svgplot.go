package svgplot

import (
	"bufio"
	"errors"
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// ErrNoData: a panel has no finite point to draw.
var ErrNoData = errors.New("svgplot: nothing to draw")

// Marker is a point shape.
type Marker int

// The marker shapes, in the order Styles hands them out.
const (
	Circle Marker = iota
	Square
	TriangleUp
	Diamond
	TriangleDown
	Plus
	Cross
	Star
	OpenSquare
)

var (
	colors = []string{"#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666"}
	dashes = []string{"", "8 4", "2 3", "10 3 2 3", "5 5", "14 4", "1 4", "6 2 2 2 2 2"}
	// Cross is left out: it marks failed points (Series.Crossed).
	markers = []Marker{Circle, Square, TriangleUp, Diamond, TriangleDown, Plus, OpenSquare, Star}
)

// Style is how a series looks: every index gets its own colour, dash
// pattern and marker (they repeat after eight, shifted so pairs differ).
type Style struct {
	Color  string
	Dash   string // SVG stroke-dasharray, "" = solid
	Marker Marker
}

// StyleFor returns the style of series index i.
func StyleFor(i int) Style {
	if i < 0 {
		i = -i
	}
	n := len(colors)
	return Style{Color: colors[i%n], Dash: dashes[(i+i/n)%n], Marker: markers[(i+2*(i/n))%n]}
}

// Axis describes one axis of a panel.
type Axis struct {
	Label string
	// Log makes the axis logarithmic (values <= 0 are drawn at its start).
	Log bool
	// Min and Max bound the axis; both 0 = from the data, rounded out to
	// ticks.
	Min, Max float64
	// Categories make an x axis categorical: point x = i sits in slot i.
	Categories []string
	// Format prints a tick value; nil = FormatTick.
	Format func(float64) string
	// Ticks is the approximate number of intervals of a linear axis; 0 = 5.
	Ticks int
}

// Series is one set of points in a panel.
type Series struct {
	// Style is the index handed to StyleFor.
	Style int
	X, Y  []float64
	// Markers: 0 draws none, -1 one at every point, n > 0 about n spread
	// along the line (placed differently for each style, so identical
	// lines still show every marker).
	Markers int
	// NoLine draws only the markers.
	NoLine bool
	// Stem draws a line from the x axis to each point (a lollipop).
	Stem bool
	// Crossed marks points drawn as a cross instead of the style's marker.
	Crossed []bool
	// EndGlyph is text drawn at the last point, e.g. "✕".
	EndGlyph string
	// Offset shifts the series by this many pixels down and right, so a
	// series equal to another is not hidden under it.
	Offset float64
	// Opacity of the line; 0 = 1.
	Opacity float64
}

// Panel is one plot area with its axes.
type Panel struct {
	Title  string
	X, Y   Axis
	Series []Series
}

// LegendEntry is one row of the figure's legend.
type LegendEntry struct {
	Style  int
	Name   string
	Detail string // a second, smaller line
}

// Figure is a standalone SVG: a title, panels stacked top to bottom and
// one legend on the right.
type Figure struct {
	Title    string
	Subtitle string
	// Width, PanelHeight, LegendWidth in SVG units; 0 = 1100, 420, 320.
	Width, PanelHeight, LegendWidth int
	Panels                          []Panel
	Legend                          []LegendEntry
	// Note is a line of text under the legend.
	Note string
}

const (
	marginLeft   = 80
	marginTop    = 56
	panelTitleH  = 22
	panelBottomH = 48
	markerSize   = 4.0
)

// Render writes f as an SVG document.
func (f *Figure) Render(w io.Writer) error {
	width, ph, lw := f.Width, f.PanelHeight, f.LegendWidth
	if width == 0 {
		width = 1100
	}
	if ph == 0 {
		ph = 420
	}
	if lw == 0 {
		lw = 320
	}
	if len(f.Panels) == 0 {
		return ErrNoData
	}
	height := marginTop + len(f.Panels)*(panelTitleH+ph+panelBottomH) + 10
	if lh := marginTop + 36*len(f.Legend) + 60; lh > height {
		height = lh
	}
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		width, height, width, height)
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(b, `<text x="%d" y="24" font-size="17">%s</text>`+"\n", marginLeft, esc(f.Title))
	if f.Subtitle != "" {
		fmt.Fprintf(b, `<text x="%d" y="43" fill="#555">%s</text>`+"\n", marginLeft, esc(f.Subtitle))
	}
	top := float64(marginTop)
	for i := range f.Panels {
		area := rect{x: marginLeft, y: top + panelTitleH, w: float64(width - marginLeft - lw), h: float64(ph)}
		if err := f.Panels[i].render(b, area); err != nil {
			return err
		}
		top += panelTitleH + float64(ph) + panelBottomH
	}
	f.renderLegend(b, float64(width-lw+20), marginTop+panelTitleH)
	fmt.Fprintln(b, "</svg>")
	return b.Flush()
}

type rect struct{ x, y, w, h float64 }

// scale maps data values to pixels along one axis.
type scale struct {
	log    bool
	lo, hi float64
	p0, p1 float64 // pixel of lo and hi
}

func (s scale) at(v float64) float64 {
	if s.log {
		v = math.Max(v, s.lo)
		return s.p0 + (s.p1-s.p0)*math.Log(v/s.lo)/math.Log(s.hi/s.lo)
	}
	return s.p0 + (s.p1-s.p0)*(v-s.lo)/(s.hi-s.lo)
}

// ticks returns the axis's ticks and its scale's bounds.
func (a *Axis) ticks(vals []float64) ([]float64, float64, float64, error) {
	lo, hi := a.Min, a.Max
	if lo == 0 && hi == 0 {
		lo, hi = math.Inf(1), math.Inf(-1)
		for _, v := range vals {
			if math.IsNaN(v) || math.IsInf(v, 0) || (a.Log && v <= 0) {
				continue
			}
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		if math.IsInf(lo, 1) {
			return nil, 0, 0, ErrNoData
		}
		if !a.Log && lo > 0 {
			lo = 0 // linear axes start at zero
		}
	}
	if a.Log {
		t := LogTicks(lo, hi)
		return t, t[0], t[len(t)-1], nil
	}
	n := a.Ticks
	if n == 0 {
		n = 5
	}
	t := LinearTicks(lo, hi, n)
	return t, t[0], t[len(t)-1], nil
}

func (a *Axis) format(v float64) string {
	if a.Format != nil {
		return a.Format(v)
	}
	return FormatTick(v)
}

func (p *Panel) render(b *bufio.Writer, r rect) error {
	var xs, ys []float64
	for _, s := range p.Series {
		xs = append(xs, s.X...)
		ys = append(ys, s.Y...)
	}
	yt, ylo, yhi, err := p.Y.ticks(ys)
	if err != nil {
		return fmt.Errorf("panel %q: %w", p.Title, err)
	}
	ysc := scale{log: p.Y.Log, lo: ylo, hi: yhi, p0: r.y + r.h, p1: r.y}
	var xsc scale
	var xt []float64
	cats := len(p.X.Categories)
	if cats > 0 {
		xsc = scale{lo: -0.5, hi: float64(cats) - 0.5, p0: r.x, p1: r.x + r.w}
	} else {
		var xlo, xhi float64
		if xt, xlo, xhi, err = p.X.ticks(xs); err != nil {
			return fmt.Errorf("panel %q: %w", p.Title, err)
		}
		xsc = scale{log: p.X.Log, lo: xlo, hi: xhi, p0: r.x, p1: r.x + r.w}
	}

	fmt.Fprintf(b, `<text x="%.0f" y="%.0f" font-size="14" font-weight="bold">%s</text>`+"\n", r.x, r.y-8, esc(p.Title))
	// Grid and tick labels.
	for _, t := range yt {
		y := ysc.at(t)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e6e6e6"/>`+"\n", r.x, y, r.x+r.w, y)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", r.x-6, y+4, esc(p.Y.format(t)))
	}
	if cats > 0 {
		for i, c := range p.X.Categories {
			x := xsc.at(float64(i))
			if i > 0 {
				xb := xsc.at(float64(i) - 0.5)
				fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e6e6e6"/>`+"\n", xb, r.y, xb, r.y+r.h)
			}
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, r.y+r.h+18, esc(c))
		}
	} else {
		for _, t := range xt {
			x := xsc.at(t)
			fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e6e6e6"/>`+"\n", x, r.y, x, r.y+r.h)
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, r.y+r.h+18, esc(p.X.format(t)))
		}
	}
	fmt.Fprintf(b, `<g stroke="#888"><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/></g>`+"\n",
		r.x, r.y, r.x, r.y+r.h, r.x, r.y+r.h, r.x+r.w, r.y+r.h)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", r.x+r.w/2, r.y+r.h+38, esc(p.X.Label))
	fmt.Fprintf(b, `<text transform="translate(%.1f %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", r.x-58, r.y+r.h/2, esc(p.Y.Label))

	// Series, clipped to the plot area.
	fmt.Fprintf(b, `<g>`+"\n")
	for _, s := range p.Series {
		st := StyleFor(s.Style)
		pts := make([][2]float64, 0, len(s.X))
		for i := range s.X {
			if i >= len(s.Y) || math.IsNaN(s.Y[i]) || math.IsNaN(s.X[i]) {
				continue
			}
			pts = append(pts, [2]float64{xsc.at(s.X[i]) + s.Offset, ysc.at(s.Y[i]) + s.Offset})
		}
		if len(pts) == 0 {
			continue
		}
		if s.Stem {
			for _, pt := range pts {
				fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2" opacity="0.5"/>`+"\n",
					pt[0], ysc.p0, pt[0], pt[1], st.Color)
			}
		}
		if !s.NoLine && len(pts) > 1 {
			var sb strings.Builder
			for _, pt := range pts {
				fmt.Fprintf(&sb, "%.1f,%.1f ", pt[0], pt[1])
			}
			op := s.Opacity
			if op == 0 {
				op = 1
			}
			dash := ""
			if st.Dash != "" {
				dash = fmt.Sprintf(` stroke-dasharray="%s"`, st.Dash)
			}
			fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.8" stroke-opacity="%.2f"%s points="%s"/>`+"\n",
				st.Color, op, dash, strings.TrimSpace(sb.String()))
		}
		for _, i := range markerIndexes(len(pts), s.Markers, s.Style) {
			if s.EndGlyph != "" && i == len(pts)-1 {
				continue // the glyph marks the end
			}
			if i < len(s.Crossed) && s.Crossed[i] {
				marker(b, Cross, pts[i][0], pts[i][1], markerSize+1.5, st.Color)
				continue
			}
			marker(b, st.Marker, pts[i][0], pts[i][1], markerSize, st.Color)
		}
		if s.EndGlyph != "" {
			last := pts[len(pts)-1]
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" fill="%s" text-anchor="middle" font-size="15" font-weight="bold">%s</text>`+"\n",
				last[0], last[1]+5, st.Color, esc(s.EndGlyph))
		}
	}
	fmt.Fprintf(b, "</g>\n")
	return nil
}

// markerIndexes picks which of n points get a marker.
func markerIndexes(n, want, style int) []int {
	switch {
	case n == 0 || want == 0:
		return nil
	case want < 0 || want >= n:
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	phase := float64(style%4+1) / 5
	out := make([]int, 0, want)
	for k := 0; k < want; k++ {
		i := int((float64(k) + phase) / float64(want) * float64(n-1))
		if len(out) == 0 || out[len(out)-1] != i {
			out = append(out, i)
		}
	}
	return out
}

// marker draws shape m centred on (x, y).
func marker(b *bufio.Writer, m Marker, x, y, s float64, color string) {
	fill := fmt.Sprintf(`fill="%s" stroke="white" stroke-width="0.8"`, color)
	line := fmt.Sprintf(`fill="none" stroke="%s" stroke-width="2"`, color)
	switch m {
	case Circle:
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="%.1f" %s/>`+"\n", x, y, s, fill)
	case Square:
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" %s/>`+"\n", x-s, y-s, 2*s, 2*s, fill)
	case TriangleUp:
		fmt.Fprintf(b, `<path d="M%.1f %.1fL%.1f %.1fL%.1f %.1fZ" %s/>`+"\n", x, y-1.2*s, x+1.1*s, y+0.9*s, x-1.1*s, y+0.9*s, fill)
	case TriangleDown:
		fmt.Fprintf(b, `<path d="M%.1f %.1fL%.1f %.1fL%.1f %.1fZ" %s/>`+"\n", x, y+1.2*s, x+1.1*s, y-0.9*s, x-1.1*s, y-0.9*s, fill)
	case Diamond:
		fmt.Fprintf(b, `<path d="M%.1f %.1fL%.1f %.1fL%.1f %.1fL%.1f %.1fZ" %s/>`+"\n", x, y-1.3*s, x+1.3*s, y, x, y+1.3*s, x-1.3*s, y, fill)
	case Plus:
		fmt.Fprintf(b, `<path d="M%.1f %.1fH%.1fM%.1f %.1fV%.1f" %s/>`+"\n", x-1.3*s, y, x+1.3*s, x, y-1.3*s, y+1.3*s, line)
	case OpenSquare:
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="white" stroke="%s" stroke-width="2"/>`+"\n", x-s, y-s, 2*s, 2*s, color)
	case Cross:
		fmt.Fprintf(b, `<path d="M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f" %s/>`+"\n", x-s, y-s, x+s, y+s, x-s, y+s, x+s, y-s, line)
	case Star:
		var sb strings.Builder
		for k := 0; k < 10; k++ {
			rad := 1.4 * s
			if k%2 == 1 {
				rad = 0.6 * s
			}
			a := math.Pi/2 + float64(k)*math.Pi/5
			cmd := "L"
			if k == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&sb, "%s%.1f %.1f", cmd, x+rad*math.Cos(a), y-rad*math.Sin(a))
		}
		fmt.Fprintf(b, `<path d="%sZ" %s/>`+"\n", sb.String(), fill)
	}
}

func (f *Figure) renderLegend(b *bufio.Writer, x, y float64) {
	for i, e := range f.Legend {
		st := StyleFor(e.Style)
		ly := y + 36*float64(i)
		dash := ""
		if st.Dash != "" {
			dash = fmt.Sprintf(` stroke-dasharray="%s"`, st.Dash)
		}
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2.5"%s/>`+"\n", x, ly, x+34, ly, st.Color, dash)
		marker(b, st.Marker, x+17, ly, markerSize, st.Color)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-weight="bold">%s</text>`+"\n", x+42, ly+4, esc(e.Name))
		if e.Detail != "" {
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="11" fill="#444">%s</text>`+"\n", x+42, ly+18, esc(e.Detail))
		}
	}
	if f.Note != "" {
		ny := y + 36*float64(len(f.Legend)) + 8
		for j, line := range strings.Split(f.Note, "\n") {
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="11" fill="#444">%s</text>`+"\n", x, ny+14*float64(j), esc(line))
		}
	}
}

func esc(s string) string { return html.EscapeString(s) }
