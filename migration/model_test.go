package migration

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
)

const (
	gib = 1 << 30
	mb  = 1e6
	gb  = 1e9
)

func TestPredict(t *testing.T) {
	m16 := uint64(16 * gib)
	tests := []struct {
		name       string
		in         ModelInput
		converges  bool
		iterations int
		total      float64 // seconds, hand-computed
		downtime   float64 // seconds
		sent       float64 // bytes
		floor      float64
		minThr     int
		postCopy   float64
	}{
		{
			// fluid model, r = 0.10: V1 = 0.1M = 1.718 GB > 345 MB,
			// k = ceil(ln(345e6/1.718e9)/ln 0.1) = 1, T = (M + V1·(1−0.01)/0.9)/B.
			name:      "r=0.10 converges in 2 rounds",
			in:        ModelInput{Memory: m16, Bandwidth: 1.15 * gb, DirtyRate: 0.115 * gb},
			converges: true, iterations: 2, total: 16.58, downtime: 0.1494, sent: 19.07 * gb, postCopy: 16.43,
		},
		{
			// r = 0.5: n* = 6, T = 29.6 s ≈ 1.98 × M/B.
			name:      "r=0.50 converges in 6 rounds",
			in:        ModelInput{Memory: m16, Bandwidth: 1.15 * gb, DirtyRate: 0.575 * gb},
			converges: true, iterations: 6, total: 29.64, downtime: 0.2335, sent: 34.09 * gb, postCopy: 22.41,
		},
		{
			name:      "r=0.90 converges in 38 rounds",
			in:        ModelInput{Memory: m16, Bandwidth: 1.15 * gb, DirtyRate: 1.035 * gb},
			converges: true, iterations: 38, total: 146.9, downtime: 0.2733, sent: 168.9 * gb, postCopy: 28.39,
		},
		{
			// P3 build box: 150 MB/s sequential over 2 GiB on 1 GbE. r = 1.3,
			// the floor is W = 2 GiB, 18.7 s of downtime; a throttle above
			// 1 − 115/150 = 23.3 % converges.
			name:  "working-set floor above B×dl does not converge",
			in:    ModelInput{Memory: 8 * gib, Bandwidth: 115 * mb, DirtyRate: 150 * mb, WorkingSet: 2 * gib},
			floor: 2 * gib, minThr: 24, postCopy: 93.37,
		},
		{
			// r ≥ 1 but the working set (20 MB) fits under B×dl = 34.5 MB:
			// one pass, then a 174 ms pause.
			name:      "small working set converges after one pass despite r>1",
			in:        ModelInput{Memory: 4 * gib, Bandwidth: 115 * mb, DirtyRate: 200 * mb, WorkingSet: 20 * mb},
			converges: true, iterations: 1, total: 37.52, downtime: 0.1739, sent: 4*gib + 20*mb, postCopy: 37.52,
		},
		{
			name:      "memory under B×dl is a single stop-and-copy",
			in:        ModelInput{Memory: 100 * mb, Bandwidth: 1 * gb, DirtyRate: 10 * gb},
			converges: true, iterations: 0, total: 0.1, downtime: 0.1, sent: 100 * mb, postCopy: 0.2,
		},
		{
			// 2 GB/s throttled 60 % with ε = 1: 0.8 GB/s on 1 GB/s, r = 0.8.
			// 8 GiB: V1 = 6.872 GB, k = ceil(ln(0.3/6.872)/ln 0.8) = 15.
			name:      "throttle lowers the effective rate",
			in:        ModelInput{Memory: 8 * gib, Bandwidth: 1 * gb, DirtyRate: 2 * gb, Throttle: 60},
			converges: true, iterations: 16, total: 41.98, downtime: 0.2418, sent: 41.98 * gb, postCopy: 15.46, minThr: 51,
		},
		{
			// I/O-driven dirtying: ε = 0.2 means 99 % throttle still leaves
			// 80 %; P8 cannot be helped by throttling.
			name: "insensitive dirtying cannot be throttled",
			in: ModelInput{Memory: 16 * gib, Bandwidth: 575 * mb, DirtyRate: 800 * mb, WorkingSet: 8 * gib,
				ThrottleSensitivity: hypervisor.Some(0.2)},
			floor: 8 * gib, minThr: -1, postCopy: 44.82,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Predict(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.converges, p.Converges, p.Why)
			assert.Equal(t, tt.iterations, p.Iterations)
			assert.InDelta(t, tt.total, p.Total.Seconds(), 0.01*tt.total+0.001)
			assert.InDelta(t, tt.downtime, p.Downtime.Seconds(), 0.01*tt.downtime+0.0001)
			assert.InDelta(t, tt.sent, float64(p.BytesSent), 0.005*tt.sent+1)
			assert.InDelta(t, tt.floor, float64(p.Floor), 1)
			assert.Equal(t, tt.minThr, p.MinThrottle)
			assert.InDelta(t, tt.postCopy, p.PostCopyTotal.Seconds(), 0.01*tt.postCopy)
			assert.InDelta(t, float64(tt.in.Memory)/tt.in.Bandwidth, p.LowerBound.Seconds(), 1e-6)
			if !tt.converges {
				assert.NotEmpty(t, p.Why)
			}
		})
	}
}

func TestPredictInvalid(t *testing.T) {
	tests := []struct {
		name  string
		in    ModelInput
		field string
	}{
		{"no memory", ModelInput{Bandwidth: 1}, "memory"},
		{"no bandwidth", ModelInput{Memory: 1}, "bandwidth"},
		{"negative dirty rate", ModelInput{Memory: 1, Bandwidth: 1, DirtyRate: -1}, "dirtyRate"},
		{"working set too big", ModelInput{Memory: 1, Bandwidth: 1, WorkingSet: 2}, "workingSet"},
		{"throttle 100", ModelInput{Memory: 1, Bandwidth: 1, Throttle: 100}, "throttle"},
		{"sensitivity 2", ModelInput{Memory: 1, Bandwidth: 1, ThrottleSensitivity: hypervisor.Some(2.0)}, "throttleSensitivity"},
		{"negative downtime", ModelInput{Memory: 1, Bandwidth: 1, DowntimeLimit: -time.Second}, "downtimeLimit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Predict(tt.in)
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrInvalidInput))
			assert.Contains(t, err.Error(), tt.field+":")
		})
	}
}

func TestThrottleFor(t *testing.T) {
	tests := []struct {
		name             string
		d, b, ratio, eps float64
		want             int
		ok               bool
	}{
		{"already under", 50 * mb, 115 * mb, 0.5, 1, 0, true},
		// 1 − 0.5·115/150 = 61.7 % → 62.
		{"build box to r=0.5", 150 * mb, 115 * mb, 0.5, 1, 62, true},
		// (1 − 0.5·575/800)/0.2 = 320 % → impossible.
		{"insensitive", 800 * mb, 575 * mb, 0.5, 0.2, 99, false},
		{"no sensitivity", 800 * mb, 575 * mb, 0.5, 0, 99, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ThrottleFor(tt.d, tt.b, tt.ratio, tt.eps)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.ok, ok)
		})
	}
}
