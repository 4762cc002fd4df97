package main

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGoRuntimeFlagsSettings(t *testing.T) {
	for _, tc := range []struct {
		name        string
		flags       goRuntimeFlags
		wantPercent int
		wantLimit   int64
		wantErr     string
	}{
		{name: "unset keeps the runtime's", flags: goRuntimeFlags{}},
		{name: "gc percent", flags: goRuntimeFlags{gcPercent: 200}, wantPercent: 200},
		{name: "memory limit", flags: goRuntimeFlags{memoryLimit: "2Gi"}, wantLimit: 2 << 30},
		{name: "both", flags: goRuntimeFlags{gcPercent: 300, memoryLimit: "1500M"}, wantPercent: 300, wantLimit: 1500e6},
		{name: "negative percent", flags: goRuntimeFlags{gcPercent: -1}, wantErr: "--gc-percent: -1: must not be negative"},
		{name: "bad quantity", flags: goRuntimeFlags{memoryLimit: "lots"}, wantErr: `--memory-limit: "lots"`},
		{name: "zero limit", flags: goRuntimeFlags{memoryLimit: "0"}, wantErr: `--memory-limit: "0": must be a positive number of bytes`},
		{name: "negative limit", flags: goRuntimeFlags{memoryLimit: "-1Gi"}, wantErr: "must be a positive number of bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			percent, limit, err := tc.flags.settings()
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantPercent, percent)
			assert.Equal(t, tc.wantLimit, limit)
		})
	}
}

// apply sets the collector and its restore puts back what was there.
func TestGoRuntimeFlagsApply(t *testing.T) {
	beforePercent := debug.SetGCPercent(100)
	debug.SetGCPercent(beforePercent)
	beforeLimit := debug.SetMemoryLimit(-1) // -1 reads it

	restore, err := goRuntimeFlags{gcPercent: 250, memoryLimit: "3Gi"}.apply()
	require.NoError(t, err)
	assert.Equal(t, 250, debug.SetGCPercent(250), "GC percent set")
	assert.Equal(t, int64(3<<30), debug.SetMemoryLimit(-1), "memory limit set")
	restore()
	assert.Equal(t, beforePercent, debug.SetGCPercent(beforePercent), "GC percent restored")
	assert.Equal(t, beforeLimit, debug.SetMemoryLimit(-1), "memory limit restored")

	restore, err = goRuntimeFlags{}.apply()
	require.NoError(t, err)
	restore()
	assert.Equal(t, beforePercent, debug.SetGCPercent(beforePercent), "unset flags leave the GC percent")
	assert.Equal(t, beforeLimit, debug.SetMemoryLimit(-1), "unset flags leave the limit")

	_, err = goRuntimeFlags{gcPercent: -5}.apply()
	require.Error(t, err)
}
