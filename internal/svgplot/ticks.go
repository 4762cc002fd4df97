package svgplot

import (
	"math"
	"strconv"
)

// niceStep returns the 1-2-5 step (1, 2 or 5 times a power of ten) that
// cuts span into about n intervals.
func niceStep(span float64, n int) float64 {
	if span <= 0 || n < 1 || math.IsInf(span, 0) || math.IsNaN(span) {
		return 1
	}
	raw := span / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// LinearTicks returns round ticks (a 1-2-5 step) from a multiple of the
// step at or below lo to one at or above hi, about n intervals apart.
func LinearTicks(lo, hi float64, n int) []float64 {
	if hi < lo {
		lo, hi = hi, lo
	}
	if hi == lo {
		hi = lo + 1
	}
	step := niceStep(hi-lo, n)
	first := math.Floor(lo/step + 1e-9)
	// Round to the step's decimals: 0.6, not 0.6000000000000001.
	pow := math.Pow(10, math.Max(0, -math.Floor(math.Log10(step))))
	var ticks []float64
	for i := 0; ; i++ {
		t := math.Round((first+float64(i))*step*pow) / pow
		ticks = append(ticks, t)
		if t >= hi-1e-9*step || i > 1000 {
			break
		}
	}
	return ticks
}

// LogTicks returns ticks for a logarithmic axis over [lo, hi]: powers of
// ten from the one at or below lo, with 2 and 5 times each added when the
// range spans three decades or fewer, ending at the first 1, 2 or 5
// times a power of ten at or above hi (the axis's end).
func LogTicks(lo, hi float64) []float64 {
	if lo <= 0 {
		lo = math.Min(1, hi)
	}
	if hi < lo {
		lo, hi = hi, lo
	}
	start := math.Floor(math.Log10(lo) + 1e-9)
	end := math.Ceil(math.Log10(hi) - 1e-9)
	if end <= start {
		end = start + 1
	}
	fine := end-start <= 3
	var ticks []float64
	for e := start; e <= end; e++ {
		p := math.Pow(10, e)
		for _, m := range []float64{1, 2, 5} {
			v := m * p
			if m != 1 && !fine {
				// Coarse axes show decades only, but may end on 2 or 5.
				if v >= hi*(1-1e-9) && ticks[len(ticks)-1] < hi*(1-1e-9) {
					return append(ticks, v)
				}
				continue
			}
			ticks = append(ticks, v)
			if v >= hi*(1-1e-9) {
				return ticks
			}
		}
	}
	return ticks
}

// FormatTick prints a tick value without trailing zeros: 0.5, 2, 1000,
// 1e+06 for very large or small ones.
func FormatTick(v float64) string {
	if v != 0 && (math.Abs(v) >= 1e6 || math.Abs(v) < 1e-3) {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return strconv.FormatFloat(math.Round(v*1e6)/1e6, 'f', -1, 64)
}
