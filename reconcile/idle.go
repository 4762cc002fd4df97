package reconcile

// Idle reports whether the controller has nothing it could do right now:
// no request is queued and no reconcile is running. Requests waiting for a
// RequeueAfter, EnqueueAfter or retry backoff do not count; they wait for
// Options.Clock. A virtual-time harness checks Idle, together with the
// rest of the process having gone quiet, before it advances the clock.
func (c *Controller) Idle() bool {
	return c.queue.Len() == 0 && c.stats.active.n.Load() == 0
}
