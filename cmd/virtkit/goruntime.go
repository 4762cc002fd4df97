package main

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"
)

// goRuntimeFlags are the Go garbage collector's settings of a long-running
// process (virtkit controller): --gc-percent is GOGC, --memory-limit is
// GOMEMLIMIT. Unset, the process keeps the Go runtime's (the environment's
// GOGC and GOMEMLIMIT, else 100 and no limit).
type goRuntimeFlags struct {
	gcPercent   int
	memoryLimit string
}

func (g *goRuntimeFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.IntVar(&g.gcPercent, "gc-percent", 0,
		"Go garbage collector target (GOGC): the heap grows this many percent over the live heap before a collection; "+
			"higher spends less CPU on collection for more memory (0: the Go runtime's, GOGC or 100)")
	fs.StringVar(&g.memoryLimit, "memory-limit", "",
		"soft memory limit of the Go runtime (GOMEMLIMIT), a quantity such as 2Gi: the collector runs more often "+
			"as the process nears it; set it below the container's limit when raising --gc-percent (empty: GOMEMLIMIT or none)")
}

// settings checks the flags: the GC percent and the memory limit in
// bytes to set, 0 for one left to the runtime.
func (g goRuntimeFlags) settings() (gcPercent int, memoryLimit int64, err error) {
	if g.gcPercent < 0 {
		return 0, 0, fmt.Errorf("--gc-percent: %d: must not be negative", g.gcPercent)
	}
	if g.memoryLimit == "" {
		return g.gcPercent, 0, nil
	}
	q, err := resource.ParseQuantity(g.memoryLimit)
	if err != nil {
		return 0, 0, fmt.Errorf("--memory-limit: %q: %w", g.memoryLimit, err)
	}
	limit, ok := q.AsInt64()
	if !ok || limit <= 0 {
		return 0, 0, fmt.Errorf("--memory-limit: %q: %w", g.memoryLimit, errors.New("must be a positive number of bytes"))
	}
	return g.gcPercent, limit, nil
}

// apply sets the runtime's collector as the flags say and returns a
// function restoring what was set before.
func (g goRuntimeFlags) apply() (restore func(), err error) {
	percent, limit, err := g.settings()
	if err != nil {
		return nil, err
	}
	oldPercent, oldLimit := -2, int64(-1)
	if percent > 0 {
		oldPercent = debug.SetGCPercent(percent)
	}
	if limit > 0 {
		oldLimit = debug.SetMemoryLimit(limit)
	}
	return func() {
		if oldPercent != -2 {
			debug.SetGCPercent(oldPercent)
		}
		if oldLimit >= 0 {
			debug.SetMemoryLimit(oldLimit)
		}
	}, nil
}
