//go:build !linux

package cluster

import "time"

// processCPU is unknown off Linux.
func processCPU() time.Duration { return 0 }

func resetPeakRSS() bool { return false }

// peakRSS is unknown off Linux.
func peakRSS() uint64 { return 0 }
