package leader

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestRenewalsLate(t *testing.T) {
	c := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	r := newRenewals(6*time.Second, c)
	for _, tc := range []struct {
		step time.Duration
		late bool
	}{
		{2 * time.Second, false},         // on time: every third of the TTL
		{2500 * time.Millisecond, false}, // the client's half-second tick
		{4 * time.Second, false},         // exactly two thirds
		{4001 * time.Millisecond, true},  // within a third of the TTL of the loss
		{2 * time.Second, false},
	} {
		c.SetTime(c.Now().Add(tc.step))
		gap, late := r.answered()
		assert.Equal(t, tc.step, gap)
		assert.Equal(t, tc.late, late, "%v", tc.step)
	}
	c.SetTime(c.Now().Add(1500 * time.Millisecond))
	assert.Equal(t, 1500*time.Millisecond, r.since())
}
