package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/virtkit/virtkit"
)

// The default scheduler judges heartbeats by Options.Clock: a node whose
// heartbeat was fresh goes stale only when that clock moves on.
func TestHeartbeatFreshnessFollowsClock(t *testing.T) {
	clk := testingclock.NewFakeClock(now)
	s := New(Options{Clock: clk, HeartbeatTimeout: time.Minute})
	nodes := []virtkit.Node{mkNode("n1", "4", "8Gi")} // heartbeat 10 s before now
	vmi := mkVMI("v", "1", "1Gi")

	got, err := s.Schedule(context.Background(), vmi, nodes, nil)
	require.NoError(t, err)
	assert.Equal(t, "n1", got)

	clk.Step(2 * time.Minute)
	_, err = s.Schedule(context.Background(), vmi, nodes, nil)
	assert.ErrorIs(t, err, ErrUnschedulable, "a heartbeat 2m10s old is stale on the clock")
}
