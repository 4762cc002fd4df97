package leader

import (
	"context"
	"log/slog"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/utils/clock"
)

// renewals follows the answers etcd gives to the renewals of a session's
// lease. etcd's client renews every third of the TTL and ends the session
// when no renewal has been answered for a whole TTL, so a gap of more than
// two thirds of the TTL between answers means the lease came within a
// third of its TTL of being lost: the process or etcd stalled (CPU
// starvation, a slow disk delaying etcd's apply, a congested link). Such a
// gap is logged, and a lost session says how long ago the last answer came.
type renewals struct {
	ttl   time.Duration
	clock clock.PassiveClock

	mu   sync.Mutex
	last time.Time
}

func newRenewals(ttl time.Duration, c clock.PassiveClock) *renewals {
	return &renewals{ttl: ttl, clock: c, last: c.Now()}
}

// answered records an answer; it returns the gap since the previous one and
// whether that gap was late (more than two thirds of the TTL).
func (r *renewals) answered() (gap time.Duration, late bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	gap, r.last = now.Sub(r.last), now
	return gap, gap > 2*r.ttl/3
}

// since is the time since the last answer (or since the session began).
func (r *renewals) since() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.clock.Since(r.last)
}

// watch listens to the lease's renewal answers until ctx ends or the lease
// is gone. It adds a listener to the client's keep-alive of the lease (the
// session's own): it sends no renewal of its own.
func (r *renewals) watch(ctx context.Context, c *clientv3.Client, lease clientv3.LeaseID, log *slog.Logger) {
	ch, err := c.KeepAlive(ctx, lease)
	if err != nil {
		log.Debug("following lease renewals", "err", err)
		return
	}
	for range ch {
		if gap, late := r.answered(); late {
			log.Warn("leader election lease renewed late: the process or etcd stalled; a stall of a whole TTL loses the lease",
				"sinceLastRenewal", gap.Round(time.Millisecond), "ttl", r.ttl)
		}
	}
}
