package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSummarize(t *testing.T) {
	r := func(vms int, total time.Duration, writes float64) result {
		return result{VMs: vms, Nodes: 3, Backend: "etcd", Total: total, CPUPerVM: time.Millisecond, PeakRSS: 64 << 20, WritesPerVM: writes, ReconcilesPerVM: 7}
	}
	tests := []struct {
		name     string
		old, new [][]result
		want     []string
		err      string
	}{
		{
			name: "median of three, ratio new/old",
			old:  [][]result{{r(1000, 8*time.Second, 8)}, {r(1000, 10*time.Second, 8)}, {r(1000, 9*time.Second, 8)}},
			new:  [][]result{{r(1000, 4*time.Second, 6)}, {r(1000, 5*time.Second, 6)}, {r(1000, 30*time.Second, 6)}},
			want: []string{"9.00s → 5.00s", "0.56×", "0.75×", "1.00×"},
		},
		{
			name: "a size only one tree measured",
			old:  [][]result{{r(1000, time.Second, 8)}},
			new:  [][]result{{r(2000, time.Second, 8)}},
			err:  "1000 VMs: measured by one tree only",
		},
		{name: "nothing", err: "no results"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := summarize(&out, tc.old, tc.new)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			for _, w := range tc.want {
				assert.Contains(t, out.String(), w)
			}
		})
	}
}
