package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/cluster"
)

// A small fleet on virtual time: every period a tenth of the VMs restart
// and a tenth migrate through the library, and the operations complete.
func TestMeasureChurnSmall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := cluster.MeasureChurn(ctx, cluster.ChurnOptions{VMs: 40, Nodes: 4, Duration: 5 * time.Minute, RestartRate: 0.1, MigrateRate: 0.1})
	require.NoError(t, err)
	assert.Equal(t, 5*time.Minute, r.Virtual)
	assert.Positive(t, r.RunningVirtual)
	assert.Positive(t, r.Wall)
	// 4 restarts and 4 migrations asked per minute, minus VMs still busy.
	assert.GreaterOrEqual(t, r.Restarts, 10, "%+v", r)
	assert.GreaterOrEqual(t, r.Migrations, 10, "%+v", r)
	assert.GreaterOrEqual(t, r.RestartsDone, r.Restarts-4, "restarts asked in the last minute may still run: %+v", r)
	assert.GreaterOrEqual(t, r.MigrationsSucceeded, r.Migrations-4, "%+v", r)
	assert.Zero(t, r.MigrationsFailed, "%+v", r)
}

func TestChurnOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    cluster.ChurnOptions
		ok   bool
	}{
		{"zero", cluster.ChurnOptions{}, true},
		{"negative duration", cluster.ChurnOptions{Duration: -time.Second}, false},
		{"restart rate above one", cluster.ChurnOptions{RestartRate: 1.5}, false},
		{"rates above one together", cluster.ChurnOptions{RestartRate: 0.6, MigrateRate: 0.6}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			if tc.ok {
				assert.NoError(t, err)
			} else {
				assert.Error(t, err)
			}
		})
	}
}
