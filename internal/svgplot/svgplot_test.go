package svgplot

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRenderErrors(t *testing.T) {
	var b strings.Builder
	assert.ErrorIs(t, (&Figure{}).Render(&b), ErrNoData)
	empty := Figure{Panels: []Panel{{Title: "nothing", Series: []Series{{X: []float64{1}, Y: []float64{-1}}}, Y: Axis{Log: true}}}}
	err := empty.Render(&b)
	assert.ErrorIs(t, err, ErrNoData)
	assert.Contains(t, err.Error(), `panel "nothing"`)
}

func TestStylesDiffer(t *testing.T) {
	seen := map[Style]bool{}
	for i := range 16 {
		st := StyleFor(i)
		assert.False(t, seen[st], "style %d repeats", i)
		assert.NotEqual(t, Cross, st.Marker, "crosses mark failures")
		seen[st] = true
	}
}

func TestRenderEscapesAndOffsets(t *testing.T) {
	fig := Figure{
		Title: "a <b> & c",
		Panels: []Panel{{
			X: Axis{Categories: []string{"x<1"}},
			Series: []Series{
				{Style: 0, X: []float64{0}, Y: []float64{1}, Markers: -1},
				{Style: 1, X: []float64{0}, Y: []float64{1}, Markers: -1, Offset: 3, Crossed: []bool{true}},
			},
		}},
	}
	var b strings.Builder
	require.NoError(t, fig.Render(&b))
	s := b.String()
	assert.Contains(t, s, "a &lt;b&gt; &amp; c")
	assert.Contains(t, s, "x&lt;1")
	assert.NotContains(t, s, "NaN")
	assert.Contains(t, s, `fill="none" stroke="#d95f02" stroke-width="2"`, "the crossed point")
}
