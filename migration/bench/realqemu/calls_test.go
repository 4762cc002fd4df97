package realqemu

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

// TestRecordingMigratorKeepsTheJobsFace: recording must not change what
// the engine can do with the job (a directly throttleable job stays one)
// nor what the host reports, and it records the steering calls in order.
func TestRecordingMigratorKeepsTheJobsFace(t *testing.T) {
	src, dst := sim.New(sim.Options{Name: "a"}), sim.New(sim.Options{Name: "b"})
	require.NoError(t, sim.NewNetwork().Connect(src, dst, sim.Link{Bandwidth: 1 << 20}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := src.Define(ctx, `<domain type="kvm"><name>rec</name><memory unit="MiB">64</memory><vcpu>1</vcpu></domain>`)
	require.NoError(t, err)
	require.NoError(t, src.Start(ctx, "rec", hypervisor.StartOptions{}))

	log := &callLog{began: time.Now()}
	rm := &recordingMigrator{m: src, log: log}
	want, err := src.MigrationCapabilities(ctx)
	require.NoError(t, err)
	got, err := rm.MigrationCapabilities(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	job, err := rm.StartMigration(ctx, "rec", hypervisor.MigrationParams{DestinationURI: "b", Bandwidth: 1 << 20, DowntimeLimit: 50 * time.Millisecond})
	require.NoError(t, err)
	thr, ok := job.(hypervisor.Throttler)
	require.True(t, ok, "the sim's job can be throttled directly; the recorded one too")
	require.NoError(t, thr.SetThrottle(ctx, 20))
	require.NoError(t, job.SetMaxDowntime(ctx, 270*time.Millisecond))
	_, err = job.Stats(ctx)
	require.NoError(t, err)
	require.NoError(t, job.Abort(ctx))
	<-job.Done()
	assert.Regexp(t, `^\d+\.\d\d MigrationCapabilities \(\d+ ms\), \d+\.\d\d StartMigration\{bandwidth 1 MiB/s, downtime 50ms\} \(job seen after \d+ ms\), \d+\.\d\d SetThrottle 20%, \d+\.\d\d SetMaxDowntime 270ms, \d+\.\d\d Abort, Stats x1 \(`, log.String())

	// A host without capability reports answers "not supported", which the
	// engine reads as not knowing, as when the method is absent.
	_, err = (&recordingMigrator{m: onlyMigrator{src}, log: log}).MigrationCapabilities(ctx)
	assert.ErrorIs(t, err, hypervisor.ErrNotSupported)
}

type onlyMigrator struct{ m hypervisor.Migrator }

func (o onlyMigrator) StartMigration(ctx context.Context, name string, p hypervisor.MigrationParams) (hypervisor.MigrationJob, error) {
	return o.m.StartMigration(ctx, name, p)
}
