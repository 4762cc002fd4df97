package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// The agent stamps and times its heartbeats with Options.Clock: on a fake
// clock the Node's heartbeat reads the fake time and is renewed only when
// the clock passes HeartbeatInterval.
func TestHeartbeatFollowsClock(t *testing.T) {
	start := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	clk := testingclock.NewFakeClock(start)
	mem := store.NewMemory()
	startAgent(t, node.Options{NodeName: "clocked", Store: mem, Hypervisor: sim.New(sim.Options{Name: "clocked"}),
		Clock: clk, HeartbeatInterval: 10 * time.Second})
	heartbeat := func() time.Time {
		n := &virtkit.Node{}
		require.NoError(t, mem.Get(context.Background(), store.Key{Name: "clocked"}, n))
		require.NotNil(t, n.Status.LastHeartbeatTime)
		return n.Status.LastHeartbeatTime.Time
	}
	// The node object can exist a moment before its first heartbeat is
	// written (its status is a write of its own).
	require.Eventually(t, func() bool {
		n := &virtkit.Node{}
		return mem.Get(context.Background(), store.Key{Name: "clocked"}, n) == nil && n.Status.LastHeartbeatTime != nil
	}, 10*time.Second, 5*time.Millisecond, "the first heartbeat is written")
	assert.True(t, heartbeat().Equal(start), "registered at the clock's time, got %v", heartbeat())

	// The heartbeat ticker waits for the clock: stepping it by the
	// interval (until the ticker exists) renews the heartbeat at a stepped
	// time, never at a real one.
	require.Eventually(t, func() bool {
		clk.Step(10 * time.Second)
		return heartbeat().After(start)
	}, 10*time.Second, 5*time.Millisecond, "renewed once the clock passes the interval")
	hb := heartbeat()
	assert.False(t, hb.After(clk.Now()), "heartbeat %v from the clock (now %v)", hb, clk.Now())
	assert.Zero(t, hb.Sub(start)%(10*time.Second), "heartbeat %v on a tick of the clock", hb)
}
