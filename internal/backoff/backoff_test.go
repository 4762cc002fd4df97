package backoff

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestStartFailureDelay(t *testing.T) {
	maxJitter := func(n int) int { return n - 1 }
	tests := []struct {
		name  string
		count int
		intn  IntN
		want  time.Duration
	}{
		{"first failure no jitter", 1, nil, 10 * time.Second},
		{"zero count is one", 0, nil, 10 * time.Second},
		{"second failure", 2, nil, 40 * time.Second},
		{"fifth failure", 5, nil, 250 * time.Second},
		{"capped", 6, nil, 300 * time.Second},
		{"huge count capped", 1 << 40, nil, 300 * time.Second},
		{"first failure max jitter", 1, maxJitter, 15 * time.Second},
		{"third failure max jitter", 3, maxJitter, 135 * time.Second},
		{"jitter capped", 5, maxJitter, 300 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, StartFailureDelay(tt.count, tt.intn))
		})
	}
}

func TestStartFailureDelayJitterRange(t *testing.T) {
	var asked []int
	intn := func(n int) int { asked = append(asked, n); return 0 }
	StartFailureDelay(2, intn)
	assert.Equal(t, []int{21}, asked, "jitter is drawn from [0, base/2]")
}
