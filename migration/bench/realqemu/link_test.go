package realqemu

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMeasureLink(t *testing.T) {
	rate, err := MeasureLink(context.Background(), "127.0.0.1")
	require.NoError(t, err)
	// A measurement, not a benchmark: under the race detector on a loaded
	// machine loopback has measured under 50 MB/s, so only a rate that is
	// plainly wrong (nothing moved) fails here.
	assert.Greater(t, rate, float64(1<<20))

	_, err = MeasureLink(context.Background(), "not-an-address")
	assert.ErrorContains(t, err, "not-an-address")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = MeasureLink(ctx, "127.0.0.1")
	assert.ErrorIs(t, err, context.Canceled)
}
