package node_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// simHost lets libvirtLikeHost embed the sim host (whose Host method would
// clash with a field named Host).
type simHost = sim.Host

// libvirtLikeHost is a sim host that migrates as libvirt does: it reports
// no direct throttle up front and its jobs do not implement
// hypervisor.Throttler. It records the parameters of every migration.
type libvirtLikeHost struct {
	*simHost
	mu     sync.Mutex
	params []hypervisor.MigrationParams
}

func (h *libvirtLikeHost) MigrationCapabilities(context.Context) (hypervisor.MigrationCapabilities, error) {
	return hypervisor.MigrationCapabilities{}, nil
}

func (h *libvirtLikeHost) StartMigration(ctx context.Context, name string, p hypervisor.MigrationParams) (hypervisor.MigrationJob, error) {
	h.mu.Lock()
	h.params = append(h.params, p)
	h.mu.Unlock()
	job, err := h.simHost.StartMigration(ctx, name, p)
	if err != nil {
		return nil, err
	}
	return struct{ hypervisor.MigrationJob }{job}, nil // hides the sim's Throttler
}

func (h *libvirtLikeHost) started() []hypervisor.MigrationParams {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hypervisor.MigrationParams(nil), h.params...)
}

// TestMigrationEnablesQEMUAutoConvergeWithoutDirectThrottle: on a backend
// without a direct throttle, allowAutoConverge must reach the job as QEMU's
// auto-converge at the start (it cannot be enabled later); without the
// permission it stays off.
func TestMigrationEnablesQEMUAutoConvergeWithoutDirectThrottle(t *testing.T) {
	for _, allow := range []bool{true, false} {
		t.Run(map[bool]string{true: "allowed", false: "not allowed"}[allow], func(t *testing.T) {
			hosts := map[string]*libvirtLikeHost{}
			var mu sync.Mutex
			cfg := &virtkit.MigrationConfiguration{AllowAutoConverge: ptr(allow)}
			c := startMigClusterWith(t, 2, sim.Link{Bandwidth: 2 << 30}, controller.MigrationOptions{Config: cfg},
				func(h *sim.Host) hypervisor.Hypervisor {
					w := &libvirtLikeHost{simHost: h}
					mu.Lock()
					hosts[h.Name()] = w
					mu.Unlock()
					return w
				})
			vmi := c.runningVMI(t, migratableVMI("steady", "64Mi"))
			source := vmi.Status.NodeName
			mig, err := actions.Migrate(c.ctx, c.Store(), store.KeyOf(vmi), actions.MigrateOptions{})
			require.NoError(t, err)
			done := c.waitMigration(t, mig, "final", isReleased)
			require.Equal(t, virtkit.MigrationSucceeded, done.Status.Phase, "%+v", done.Status.MigrationState)
			mu.Lock()
			started := hosts[source].started()
			mu.Unlock()
			require.Len(t, started, 1)
			assert.Equal(t, allow, started[0].AutoConverge, "QEMU auto-converge at the start follows allowAutoConverge")
		})
	}
}

// TestMigrationTLSAndMultifdByDefault: as KubeVirt, a migration is
// encrypted unless the configuration says disableTLS, and uses multifd
// with 8 connections unless the node is configured otherwise; the
// hypervisor's storage safety check is overridden only with
// unsafeMigrationOverride.
func TestMigrationTLSAndMultifdByDefault(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cfg        *virtkit.MigrationConfiguration
		wantTLS    bool
		wantUnsafe bool
	}{
		{"default", nil, true, false},
		{"disableTLS", &virtkit.MigrationConfiguration{DisableTLS: ptr(true)}, false, false},
		{"disableTLS false", &virtkit.MigrationConfiguration{DisableTLS: ptr(false)}, true, false},
		{"unsafeMigrationOverride", &virtkit.MigrationConfiguration{UnsafeMigrationOverride: ptr(true)}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			hosts := map[string]*libvirtLikeHost{}
			c := startMigClusterWith(t, 2, sim.Link{Bandwidth: 2 << 30}, controller.MigrationOptions{Config: tc.cfg},
				func(h *sim.Host) hypervisor.Hypervisor {
					w := &libvirtLikeHost{simHost: h}
					mu.Lock()
					hosts[h.Name()] = w
					mu.Unlock()
					return w
				})
			vmi := c.runningVMI(t, migratableVMI("secret", "64Mi"))
			source := vmi.Status.NodeName
			mig, err := actions.Migrate(c.ctx, c.Store(), store.KeyOf(vmi), actions.MigrateOptions{})
			require.NoError(t, err)
			done := c.waitMigration(t, mig, "final", isReleased)
			require.Equal(t, virtkit.MigrationSucceeded, done.Status.Phase, "%+v", done.Status.MigrationState)
			mu.Lock()
			started := hosts[source].started()
			mu.Unlock()
			require.Len(t, started, 1)
			assert.Equal(t, tc.wantTLS, started[0].TLS, "TLS on the migration stream")
			assert.Equal(t, tc.wantUnsafe, started[0].Unsafe, "the hypervisor's storage safety check overridden")
			assert.Equal(t, node.DefaultParallelConnections, started[0].ParallelConnections, "multifd connections")
		})
	}
}
