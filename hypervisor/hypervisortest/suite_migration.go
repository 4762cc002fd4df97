package hypervisortest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
)

func migrator(e *env) hypervisor.Migrator {
	if e.tg.Peer == nil {
		e.t.Skip("no Peer host: migration subtests need a second host")
	}
	m, ok := e.h.(hypervisor.Migrator)
	if !ok {
		e.t.Skip("backend does not implement hypervisor.Migrator")
	}
	return m
}

func testMigration(e *env) {
	for _, tc := range []struct {
		name string
		run  func(*env, hypervisor.Migrator)
	}{
		{"Migrate", func(e *env, m hypervisor.Migrator) { migrateOnce(e, m, false) }},
		{"MigrateDirtying", func(e *env, m hypervisor.Migrator) {
			if e.tg.DirtyMemory == nil {
				e.t.Skip("Target.DirtyMemory is nil")
			}
			migrateOnce(e, m, true)
		}},
		{"AbortSlowed", testMigrationAbort},
		{"Errors", testMigrationErrors},
	} {
		e.run(tc.name, func(se *env) { tc.run(se, migrator(se)) })
	}
}

func (e *env) migrationParams() hypervisor.MigrationParams {
	return hypervisor.MigrationParams{DestinationURI: e.tg.PeerURI, MigrateURI: e.tg.MigrateURI, Persist: true}
}

func migrateOnce(e *env, m hypervisor.Migrator, dirty bool) {
	name := e.name("")
	id := e.start(name)
	if dirty {
		e.tg.DirtyMemory(e.t, name)
	}
	job, err := m.StartMigration(e.ctx(), name, e.migrationParams())
	skipIfNotSupported(e.t, err, "migration")
	require.NoError(e.t, err)

	// The job may not have begun yet or be over already on a fast link;
	// stats describe the job wherever it is.
	st, err := job.Stats(e.ctx())
	require.NoError(e.t, err)
	assert.Contains(e.t, []hypervisor.JobType{hypervisor.JobNone, hypervisor.JobUnbounded, hypervisor.JobCompleted}, st.Type)
	if st.Type == hypervisor.JobUnbounded {
		assert.True(e.t, st.DataTotal.Valid, "DataTotal of a running job")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*(e.tg.BootTimeout+e.tg.AgentTimeout))
	defer cancel()
	res, err := job.Result(ctx)
	require.NoError(e.t, err, "migration result")
	select {
	case <-job.Done():
	default:
		e.t.Fatal("Done is not closed after Result returned")
	}
	assert.True(e.t, res.Succeeded)
	assert.False(e.t, res.Aborted)
	assert.Equal(e.t, hypervisor.ModePreCopy, res.Mode)
	assert.False(e.t, res.Ended.Before(res.Started), "Ended not before Started")
	assert.Equal(e.t, hypervisor.JobCompleted, res.Stats.Type)

	peerInfo, err := e.tg.Peer.Info(e.ctx(), name)
	require.NoError(e.t, err, "the domain exists on the peer")
	assert.Equal(e.t, hypervisor.StateRunning, peerInfo.State, "the domain runs on the peer")
	assert.Equal(e.t, hypervisor.ReasonMigrated, peerInfo.Reason, "and arrived by migration")
	assert.Equal(e.t, id.UUID, peerInfo.UUID, "with the same UUID")
	assert.True(e.t, peerInfo.Persistent, "Persist defines it on the peer")

	src, err := e.h.Info(e.ctx(), name)
	if err != nil {
		requireDomainError(e.t, err, hypervisor.ErrNotFound, name, "Info on the source after migration")
	} else {
		assert.Equal(e.t, hypervisor.StateShutoff, src.State, "the source copy no longer runs")
		assert.Equal(e.t, hypervisor.ReasonMigrated, src.Reason, "it left by migration")
	}
}

func testMigrationAbort(e *env, m hypervisor.Migrator) {
	name := e.name("")
	e.start(name)
	const slow = 1 << 20 // 1 MiB/s: no guest finishes while the test watches
	params := e.migrationParams()
	params.Bandwidth = slow
	job, err := m.StartMigration(e.ctx(), name, params)
	skipIfNotSupported(e.t, err, "migration")
	require.NoError(e.t, err)
	require.NoError(e.t, job.SetMaxSpeed(e.ctx(), slow), "SetMaxSpeed")
	err = job.SetMaxDowntime(e.ctx(), 50*time.Millisecond)
	if !errors.Is(err, hypervisor.ErrNotSupported) {
		require.NoError(e.t, err, "SetMaxDowntime")
	}

	var st hypervisor.JobStats
	e.waitFor(e.tg.BootTimeout, "the slowed job to move data", func() (bool, error) {
		var err error
		st, err = job.Stats(context.Background())
		if err != nil {
			return false, err
		}
		return st.Type == hypervisor.JobUnbounded && st.DataProcessed.Or(0) > 0, fmt.Errorf("job %s processed %v", st.Type, st.DataProcessed)
	})
	assert.Equal(e.t, hypervisor.ModePreCopy, st.Mode)
	assert.True(e.t, st.DataTotal.Valid, "DataTotal")
	assert.True(e.t, st.DataRemaining.Valid, "DataRemaining")
	assert.Positive(e.t, st.DataRemaining.Value, "a slowed job has data remaining")
	assert.True(e.t, st.Elapsed.Valid, "Elapsed")

	require.NoError(e.t, job.Abort(e.ctx()))
	ctx, cancel := context.WithTimeout(context.Background(), e.tg.BootTimeout)
	defer cancel()
	res, err := job.Result(ctx)
	require.ErrorIs(e.t, err, hypervisor.ErrMigrationAborted)
	assert.True(e.t, res.Aborted)
	assert.False(e.t, res.Succeeded)

	info := e.info(name)
	assert.Equal(e.t, hypervisor.StateRunning, info.State, "an aborted migration leaves the source running")
	peerInfo, err := e.tg.Peer.Info(e.ctx(), name)
	if err == nil {
		assert.False(e.t, peerInfo.State.IsActive(), "nothing runs on the peer after an abort")
	} else {
		require.ErrorIs(e.t, err, hypervisor.ErrNotFound)
	}
	require.ErrorIs(e.t, job.Abort(e.ctx()), hypervisor.ErrNoJob, "Abort of an ended job")
}

func testMigrationErrors(e *env, m hypervisor.Migrator) {
	name := e.name("")
	e.define(name)
	_, err := m.StartMigration(e.ctx(), name, e.migrationParams())
	skipIfNotSupported(e.t, err, "migration")
	requireDomainError(e.t, err, hypervisor.ErrInvalidState, name, "migrating a shut-off domain")
}
