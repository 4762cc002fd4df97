package node

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/virtkit/virtkit/hypervisor"
)

func TestCapCheck(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name    string
		cap     uint64
		sent    hypervisor.Measured[uint64]
		elapsed time.Duration
		want    bool
	}{
		{"no cap", 0, hypervisor.Some[uint64](900 * mib), 10 * time.Second, false},
		{"too early to judge", 2 * mib, hypervisor.Some[uint64](90 * mib), 4 * time.Second, false},
		{"within the cap", 2 * mib, hypervisor.Some[uint64](20 * mib), 10 * time.Second, false},
		{"over, within QEMU's slack", 2 * mib, hypervisor.Some[uint64](29 * mib), 10 * time.Second, false},
		{"multifd through a 2 MiB/s cap", 2 * mib, hypervisor.Some[uint64](245 * mib), 10 * time.Second, true},
		{"nothing sent known", 2 * mib, hypervisor.Measured[uint64]{}, 10 * time.Second, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := capCheck{cap: tt.cap, parallel: 8}
			avg, over := c.exceeded(tt.sent, tt.elapsed)
			assert.Equal(t, tt.want, over)
			if over {
				assert.InDelta(t, float64(tt.sent.Value)/tt.elapsed.Seconds(), avg, 1)
				_, again := c.exceeded(tt.sent, tt.elapsed+time.Second)
				assert.False(t, again, "warned once per migration")
			}
		})
	}
}
