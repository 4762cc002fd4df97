package controller

import (
	"fmt"
	"time"
)

// FenceTimeoutAnnotation is the Node annotation in which a node agent
// publishes its fence timeout (a Go duration, e.g. "1m0s"): the agent
// destroys its own guests once it has not renewed its heartbeat in the
// store for that long. The node-health reconciler reads it to wait at least
// [MinNodeGrace] before it fails the node's VMIs.
const FenceTimeoutAnnotation = "virtkit.io/fence-timeout"

// MinNodeGrace is the shortest time after the last heartbeat change of a
// node whose agent fences after fence before its VMIs may be restarted
// elsewhere: fence plus a margin of fence/2. The margin covers the agent's
// check interval, its destroy calls, and a heartbeat write that was still
// under way when the controller saw it. A controller's
// monitor grace plus unresponsive grace should be at least this; where it
// is shorter the node-health reconciler waits this long anyway.
func MinNodeGrace(fence time.Duration) time.Duration {
	if fence <= 0 {
		return 0
	}
	return fence + fence/2
}

// ParseFenceTimeout reads a [FenceTimeoutAnnotation] value: a positive Go
// duration.
func ParseFenceTimeout(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %q: %w", FenceTimeoutAnnotation, v, err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%s: %q: not positive", FenceTimeoutAnnotation, v)
	}
	return d, nil
}
