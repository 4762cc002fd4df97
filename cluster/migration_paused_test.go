package cluster_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/store"
)

// leavesPausedHost is a simulated host whose failed outgoing migrations
// leave the source guest paused for the switchover (reason Migration), as
// a hypervisor may when the job breaks down during the stop-and-copy.
type leavesPausedHost struct {
	*simHost
	mu     sync.Mutex
	paused map[string]bool
}

func (h *leavesPausedHost) StartMigration(ctx context.Context, name string, p hypervisor.MigrationParams) (hypervisor.MigrationJob, error) {
	job, err := h.simHost.StartMigration(ctx, name, p)
	if err != nil {
		return nil, err
	}
	return &leavesPausedJob{MigrationJob: job, h: h, name: name}, nil
}

func (h *leavesPausedHost) mark(name string, paused bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.paused[name] = paused
}

func (h *leavesPausedHost) fix(d hypervisor.DomainInfo) hypervisor.DomainInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.paused[d.Name] && d.State == hypervisor.StatePaused {
		d.Reason = hypervisor.ReasonMigration
	}
	return d
}

func (h *leavesPausedHost) Info(ctx context.Context, name string) (hypervisor.DomainInfo, error) {
	d, err := h.simHost.Info(ctx, name)
	return h.fix(d), err
}

func (h *leavesPausedHost) List(ctx context.Context) ([]hypervisor.DomainInfo, error) {
	ds, err := h.simHost.List(ctx)
	for i := range ds {
		ds[i] = h.fix(ds[i])
	}
	return ds, err
}

func (h *leavesPausedHost) Resume(ctx context.Context, name string) error {
	h.mark(name, false)
	return h.simHost.Resume(ctx, name)
}

type leavesPausedJob struct {
	hypervisor.MigrationJob
	h    *leavesPausedHost
	name string
	once sync.Once
}

func (j *leavesPausedJob) Result(ctx context.Context) (hypervisor.MigrationResult, error) {
	res, err := j.MigrationJob.Result(ctx)
	if !res.Succeeded {
		j.once.Do(func() {
			if j.h.simHost.Pause(context.WithoutCancel(ctx), j.name) == nil {
				j.h.mark(j.name, true)
			}
		})
	}
	return res, err
}

// TestCancelledMigrationLeavesNoGuestPaused cancels a migration on a host
// that leaves the source guest paused for the switchover when the job
// fails: the source agent resumes the guest, so the VMI is not left
// Paused by the migration monitor after the migration ended.
func TestCancelledMigrationLeavesNoGuestPaused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	logs := &syncBuffer{}
	dumpOnFailure(t, logs)
	clk := sim.NewVirtualClock(virtualStart)
	network, err := sim.NewMeshNetwork(sim.Link{Bandwidth: 20_000_000})
	require.NoError(t, err)
	c, err := cluster.New(cluster.Options{
		Clock:  clk,
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
		NewHypervisor: func(name string) (hypervisor.Hypervisor, error) {
			h := sim.New(sim.Options{Name: name, Clock: clk, CPUs: 4, MemoryBytes: 4 << 30})
			return &leavesPausedHost{simHost: h, paused: map[string]bool{}}, network.Join(h)
		},
	})
	require.NoError(t, err)
	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Start(cctx) }()
	defer func() { stop(); <-done }()
	require.NoError(t, c.Settle(ctx))

	key := store.Key{Namespace: "vt", Name: "stays"}
	require.NoError(t, c.Apply(ctx, virtualVM(key.Name)))
	vmi := runningOn(t, ctx, c, key)
	_, err = advanceUntil(ctx, c, time.Minute, func() (bool, struct{}, error) {
		v := &virtkit.VirtualMachineInstance{}
		err := c.Store().Get(ctx, key, v)
		return virtkit.IsConditionTrue(v.Status.Conditions, virtkit.VirtualMachineInstanceIsMigratable), struct{}{}, err
	})
	require.NoError(t, err)
	mig, err := actions.Migrate(ctx, c.Store(), key, actions.MigrateOptions{})
	require.NoError(t, err)
	require.NoError(t, c.Advance(ctx, 5*time.Second))
	require.NoError(t, c.Store().Delete(ctx, mig, store.DeleteOptions{}))
	_, err = advanceUntil(ctx, c, time.Minute, func() (bool, struct{}, error) {
		err := c.Store().Get(ctx, store.KeyOf(mig), &virtkit.VirtualMachineInstanceMigration{})
		return err != nil, struct{}{}, ignoreNotFound(err)
	})
	require.NoError(t, err)
	require.NoError(t, c.Advance(ctx, 2*time.Second))

	got := &virtkit.VirtualMachineInstance{}
	require.NoError(t, c.Store().Get(ctx, key, got))
	assert.Equal(t, vmi.Status.NodeName, got.Status.NodeName, "the guest stays")
	assert.Equal(t, virtkit.Running, got.Status.Phase)
	assert.False(t, virtkit.IsConditionTrue(got.Status.Conditions, virtkit.VirtualMachineInstancePaused), "not left paused")
	info, err := c.Node(got.Status.NodeName).Hypervisor.Info(ctx, "vt_stays")
	require.NoError(t, err)
	assert.Equal(t, hypervisor.StateRunning, info.State)
	assert.NoError(t, cluster.CheckNoPausedByEndedMigration(ctx, c))
	assert.NoError(t, cluster.CheckNoLeakedDomains(ctx, c))
}
