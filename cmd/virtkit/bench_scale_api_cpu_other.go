//go:build !unix

package main

import "time"

// benchProcessCPU is 0 where the platform does not say.
func benchProcessCPU() time.Duration { return 0 }
