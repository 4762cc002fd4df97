package svgplot

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLinearTicks(t *testing.T) {
	tests := []struct {
		lo, hi float64
		n      int
		want   []float64
	}{
		{0, 8.6, 5, []float64{0, 2, 4, 6, 8, 10}},
		{0, 16, 5, []float64{0, 5, 10, 15, 20}},
		{0, 330, 5, []float64{0, 100, 200, 300, 400}},
		{0, 0.9, 4, []float64{0, 0.5, 1}},
		{0, 1, 5, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}},
		{12, 47, 5, []float64{10, 20, 30, 40, 50}},
		{3, 3, 5, []float64{3, 3.2, 3.4, 3.6, 3.8, 4}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, LinearTicks(tt.lo, tt.hi, tt.n), "%v..%v", tt.lo, tt.hi)
	}
}

func TestLogTicks(t *testing.T) {
	tests := []struct {
		lo, hi float64
		want   []float64
	}{
		{1, 12800, []float64{1, 10, 100, 1000, 10000, 20000}},
		{1, 6400, []float64{1, 10, 100, 1000, 10000}},
		{1, 900, []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}},
		{1.01, 856, []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}},
		{1, 4.3, []float64{1, 2, 5}},
		{1, 100, []float64{1, 2, 5, 10, 20, 50, 100}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, LogTicks(tt.lo, tt.hi), "%v..%v", tt.lo, tt.hi)
	}
}

func TestFormatTick(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 0.2: "0.2", 0.30000000000000004: "0.3", 20000: "20000", 1e7: "1e+07", 2.5: "2.5"} {
		assert.Equal(t, want, FormatTick(v))
	}
}
