package node

import (
	"context"
	"fmt"
	"time"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
)

// EventReasonBandwidthCapExceeded is the Warning a source agent records
// when a migration moves data clearly faster than its bandwidth cap
// (bandwidthPerMigration): QEMU 9 and later do not hold multifd
// connections to max-bandwidth, so a cap set to protect a shared link does
// not hold with ParallelConnections above 1.
const EventReasonBandwidthCapExceeded = "MigrationBandwidthCapExceeded"

// EventReasonMigrationCompletionExtended is the reason of the Normal event
// a source node agent records when its migration runs past the completion
// timeout because the engine's model says it converges (virtkit's
// virtkitMaxCompletionTimeoutPerGiB; KubeVirt has no such event).
const EventReasonMigrationCompletionExtended = "MigrationCompletionExtended"

// capCheck watches one migration's average rate against its cap. The
// average over the whole job, after capCheckAfter, is what the cap bounds
// (QEMU's limiter works in 100 ms windows; one fast poll says nothing).
type capCheck struct {
	cap      uint64 // bytes/s; 0 = no cap
	parallel int
	warned   bool
}

const (
	capCheckAfter = 5 * time.Second
	// capCheckOver is how far over the cap the average must be: QEMU's
	// own accounting lets a window's budget through in bursts, and the
	// switchover runs uncapped.
	capCheckOver = 1.5
)

// exceeded reports the job's average rate when it is over the cap by
// capCheckOver, once per migration.
func (c *capCheck) exceeded(dataSent hypervisor.Measured[uint64], elapsed time.Duration) (float64, bool) {
	if c.cap == 0 || c.warned || elapsed < capCheckAfter {
		return 0, false
	}
	sent, ok := dataSent.Get()
	if !ok {
		return 0, false
	}
	avg := float64(sent) / elapsed.Seconds()
	if avg <= capCheckOver*float64(c.cap) {
		return 0, false
	}
	c.warned = true
	return avg, true
}

// warnCapExceeded logs and records the warning for o's VMI.
func (a *Agent) warnCapExceeded(ctx context.Context, o *outgoing, avg float64) {
	c := &o.cap
	why := "the hypervisor does not hold the migration to it"
	if c.parallel > 1 {
		why = fmt.Sprintf("QEMU does not hold its %d parallel (multifd) connections to it; with node option Migration.ParallelConnections 1 the cap holds", c.parallel)
	}
	a.log.Warn("migration exceeds its bandwidth cap", "vmi", o.key.String(), "average", avg, "cap", c.cap, "parallelConnections", c.parallel)
	a.event(ctx, o.vmiRef(), virtkit.EventTypeWarning, EventReasonBandwidthCapExceeded, "Migrate",
		"migration uid %s moves %.1f MB/s on average, over its bandwidthPerMigration cap of %.1f MB/s: %s",
		o.uid, avg/1e6, float64(c.cap)/1e6, why)
}
