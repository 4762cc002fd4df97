//go:build !unix

package cluster_test

import "time"

// cpuTime is unknown here.
func cpuTime() time.Duration { return 0 }
