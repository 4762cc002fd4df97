package migration

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/clock"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/migration/internal/fluid"
)

// readyClock is the fluid guest's clock with timers that are always due:
// a poll is ready at every turn of Run's loop.
type readyClock struct{ *fluid.Guest }

func (readyClock) NewTimer(time.Duration) clock.Timer { return readyTimer{} }

type readyTimer struct{}

var closedTime = func() chan time.Time { c := make(chan time.Time); close(c); return c }()

func (readyTimer) C() <-chan time.Time      { return closedTime }
func (readyTimer) Stop() bool               { return true }
func (readyTimer) Reset(time.Duration) bool { return true }

// cancellingMigrator cancels the run at the job's first poll and counts
// the polls that come after. It measures no dirty rate, so the job starts
// at once.
type cancellingMigrator struct {
	g      *fluid.Guest
	cancel context.CancelFunc
	polled atomic.Bool
	after  atomic.Int32
}

func (m *cancellingMigrator) StartMigration(ctx context.Context, name string, p hypervisor.MigrationParams) (hypervisor.MigrationJob, error) {
	j, err := m.g.StartMigration(ctx, name, p)
	if err != nil {
		return nil, err
	}
	return cancellingJob{MigrationJob: j, m: m}, nil
}

type cancellingJob struct {
	hypervisor.MigrationJob
	m *cancellingMigrator
}

func (j cancellingJob) Stats(ctx context.Context) (hypervisor.JobStats, error) {
	if j.m.polled.Swap(true) {
		j.m.after.Add(1)
	} else {
		j.m.cancel()
	}
	return j.MigrationJob.Stats(ctx)
}

// A run cancelled while its next poll is due as well ends without that
// poll: a select with both ready picked one at random, so the outcome of
// a run on virtual time (one more step of the policy, or not) was the Go
// runtime's choice.
func TestEngineRunCancelBeatsADuePoll(t *testing.T) {
	for i := range 16 {
		g := fluid.New(fluid.Config{Memory: gib, Bandwidth: 115 * mb, Sensitivity: 1,
			Regions: []fluid.Region{{Size: 256 << 20, Rate: 150 * mb, Sequential: true}}}, epoch)
		ctx, cancel := context.WithCancel(context.Background())
		m := &cancellingMigrator{g: g, cancel: cancel}
		e, err := NewEngine(m, Request{Domain: "default_vm", Memory: gib},
			Options{Clock: readyClock{g}, PollInterval: time.Millisecond, Policy: NewKubeVirtPolicy(KubeVirtOptions{})})
		require.NoError(t, err)
		// The aborted job ends at the guest's next step.
		stop := make(chan struct{})
		advanced := make(chan struct{})
		go func() {
			defer close(advanced)
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
					g.Advance(100 * time.Millisecond)
				}
			}
		}()
		r, err := e.Run(ctx)
		cancel()
		close(stop)
		<-advanced
		require.ErrorIs(t, err, context.Canceled, "run %d", i)
		assert.True(t, r.Aborted, "run %d", i)
		require.True(t, m.polled.Load(), "run %d: the job was never polled", i)
		require.Zero(t, m.after.Load(), "run %d: polled after the cancel", i)
	}
}
