package bench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
)

func TestPassRecorder(t *testing.T) {
	st := func(typ hypervisor.JobType, mode hypervisor.MigrationMode, it, rem, sent uint64) hypervisor.JobStats {
		return hypervisor.JobStats{Type: typ, Mode: mode, MemoryIteration: hypervisor.Some(it),
			DataRemaining: hypervisor.Some(rem), DataProcessed: hypervisor.Some(sent)}
	}
	pre, post := hypervisor.ModePreCopy, hypervisor.ModePostCopy
	for _, tc := range []struct {
		name string
		seen []hypervisor.JobStats
		want []Pass
	}{
		{name: "nothing seen"},
		{
			name: "the first sample of each iteration; later ones and older iterations ignored",
			seen: []hypervisor.JobStats{
				st(hypervisor.JobUnbounded, pre, 1, 100, 0),
				st(hypervisor.JobUnbounded, pre, 1, 80, 20),
				st(hypervisor.JobUnbounded, pre, 3, 30, 90),
				st(hypervisor.JobUnbounded, pre, 2, 50, 95),
				st(hypervisor.JobUnbounded, pre, 3, 10, 110),
			},
			want: []Pass{
				{Iteration: 1, Seconds: 0, RemainingBytes: 100, SentBytes: 0},
				{Iteration: 3, Seconds: 2, RemainingBytes: 30, SentBytes: 90, BeforeSentBytes: 20},
			},
		},
		{
			name: "no job, a finished job and post-copy are not passes",
			seen: []hypervisor.JobStats{
				st(hypervisor.JobNone, pre, 1, 100, 0),
				st(hypervisor.JobUnbounded, pre, 1, 100, 0),
				st(hypervisor.JobUnbounded, post, 2, 40, 60),
				st(hypervisor.JobCompleted, pre, 4, 0, 120),
			},
			want: []Pass{{Iteration: 1, Seconds: 1, RemainingBytes: 100}},
		},
		{
			name: "a sample without an iteration or remaining data is skipped",
			seen: []hypervisor.JobStats{
				{Type: hypervisor.JobUnbounded, DataRemaining: hypervisor.Some[uint64](5)},
				{Type: hypervisor.JobUnbounded, MemoryIteration: hypervisor.Some[uint64](1)},
				{Type: hypervisor.JobUnbounded, MemoryIteration: hypervisor.Some[uint64](1), MemoryRemaining: hypervisor.Some[uint64](7)},
			},
			want: []Pass{{Iteration: 1, Seconds: 2, RemainingBytes: 7}},
		},
		{
			name: "constant memory and the dirty rate as the job reports them",
			seen: []hypervisor.JobStats{
				{Type: hypervisor.JobUnbounded, MemoryIteration: hypervisor.Some[uint64](1), DataRemaining: hypervisor.Some[uint64](90)},
				{Type: hypervisor.JobUnbounded, MemoryIteration: hypervisor.Some[uint64](2), DataRemaining: hypervisor.Some[uint64](30),
					MemoryConstant: hypervisor.Some[uint64](40), MemoryDirtyRate: hypervisor.Some[uint64](0)},
			},
			want: []Pass{
				{Iteration: 1, Seconds: 0, RemainingBytes: 90},
				{Iteration: 2, Seconds: 1, RemainingBytes: 30, ConstantBytes: 40, DirtyRate: new(uint64)},
			},
		},
		{
			name: "the sample before a new iteration is kept with it, whichever iteration it was",
			seen: []hypervisor.JobStats{
				st(hypervisor.JobUnbounded, pre, 1, 100, 0),
				st(hypervisor.JobUnbounded, pre, 1, 20, 70),
				st(hypervisor.JobUnbounded, pre, 2, 25, 80),
				st(hypervisor.JobUnbounded, pre, 2, 15, 90),
				st(hypervisor.JobUnbounded, pre, 3, 12, 95),
			},
			want: []Pass{
				{Iteration: 1, Seconds: 0, RemainingBytes: 100},
				{Iteration: 2, Seconds: 2, RemainingBytes: 25, SentBytes: 80, BeforeSentBytes: 70},
				{Iteration: 3, Seconds: 4, RemainingBytes: 12, SentBytes: 95, BeforeSentBytes: 90},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r PassRecorder
			for i, s := range tc.seen {
				r.Observe(time.Duration(i)*time.Second, s)
			}
			assert.Equal(t, tc.want, r.Passes())
		})
	}
}

// Sampling the passes reads the job's stats between the engine's polls:
// the engine sees nothing of it, so the run is the same run.
func TestSamplePassesLeavesTheRunAlone(t *testing.T) {
	profiles, _ := loadRealRuns(t)
	for _, p := range profiles {
		for _, policy := range []string{"kubevirt", "virtkit"} {
			t.Run(p.Name+"/"+policy, func(t *testing.T) {
				opts := Options{LinkCapacity: 256 << 20}
				plain, err := RunOne(context.Background(), p, policy, opts)
				require.NoError(t, err)
				opts.SamplePasses = 20 * time.Millisecond
				sampled, err := RunOne(context.Background(), p, policy, opts)
				require.NoError(t, err)
				require.NotEmpty(t, sampled.Passes)
				assert.Equal(t, uint64(1), sampled.Passes[0].Iteration)
				first := float64(sampled.Passes[0].RemainingBytes)
				assert.InDelta(t, float64(p.MemoryBytes()), first, 0.05*float64(p.MemoryBytes()), "little sent before the first sample")
				for i := 1; i < len(sampled.Passes); i++ {
					prev, cur := sampled.Passes[i-1], sampled.Passes[i]
					assert.Greater(t, cur.Iteration, prev.Iteration)
					assert.GreaterOrEqual(t, cur.SentBytes, prev.SentBytes)
					assert.Greater(t, cur.Seconds, prev.Seconds)
				}
				assert.LessOrEqual(t, sampled.Passes[len(sampled.Passes)-1].Iteration, sampled.Iterations)
				sampled.Passes = nil
				// Reading the stats splits the simulator's steps
				// differently: the byte counts may round apart.
				assert.InDelta(t, float64(plain.BytesSent), float64(sampled.BytesSent), 16)
				sampled.BytesSent = plain.BytesSent
				assert.Equal(t, plain, sampled)
			})
		}
	}
}

func TestPassStartRemaining(t *testing.T) {
	for _, tc := range []struct {
		name string
		pass Pass
		want uint64
	}{
		{name: "sampled before the window's burst", pass: Pass{RemainingBytes: 10, SentBytes: 50, BeforeSentBytes: 50}, want: 10},
		{name: "sampled after one burst", pass: Pass{RemainingBytes: 7, SentBytes: 53, BeforeSentBytes: 50}, want: 10},
		{name: "constant pages found are not added back",
			pass: Pass{RemainingBytes: 100, SentBytes: 30, ConstantBytes: 60, BeforeSentBytes: 20}, want: 110},
		{name: "counters that went back are not trusted", pass: Pass{RemainingBytes: 9, SentBytes: 10, BeforeSentBytes: 50}, want: 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.pass.StartRemainingBytes())
		})
	}
}
