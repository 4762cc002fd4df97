package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/spf13/cobra"
)

// addCPUProfileFlag adds --cpu-profile FILE to a long-running command.
func addCPUProfileFlag(cmd *cobra.Command, path *string) {
	cmd.Flags().StringVar(path, "cpu-profile", "", "write a Go CPU profile of the whole run to FILE (for go tool pprof)")
}

// startCPUProfile starts profiling into path ("" does nothing) and returns
// the function that stops it.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
