//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package libvirt_test

import (
	"context"
	"encoding/json"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	lv "libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/libvirt/libvirttest"
)

// migrationTLSCreds reads the TLS credentials object QEMU's migration uses
// on the source (empty: clear text), through the QEMU monitor.
func migrationTLSCreds(t *testing.T, name string) string {
	t.Helper()
	c, err := lv.NewConnect(libvirttest.SourceURI)
	require.NoError(t, err)
	defer c.Close()
	d, err := c.LookupDomainByName(name)
	require.NoError(t, err)
	defer d.Free()
	reply, err := d.QemuMonitorCommand(`{"execute":"query-migrate-parameters"}`, lv.DOMAIN_QEMU_MONITOR_COMMAND_DEFAULT)
	require.NoError(t, err)
	var r struct {
		Return struct {
			TLSCreds string `json:"tls-creds"`
		} `json:"return"`
	}
	require.NoError(t, json.Unmarshal([]byte(reply), &r), reply)
	return r.Return.TLSCreds
}

// TestRealMigrationTLSMultifd migrates with TLS and 4 multifd connections
// (hack/realstack/libvirtd.sh gives both daemons migrate-TLS
// certificates): QEMU's migration runs with TLS credentials while the job
// runs, and the guest arrives.
func TestRealMigrationTLSMultifd(t *testing.T) {
	rs := newRealStack(t)
	name := "vkt-real-migrate-tls"
	rs.boot(t, name, libvirttest.GuestOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	job, err := rs.src.StartMigration(ctx, name, hypervisor.MigrationParams{
		DestinationURI: libvirttest.PeerURI, MigrateURI: libvirttest.MigrateURI(t),
		Bandwidth: 8 << 20, TLS: true, ParallelConnections: 4, Persist: true,
	})
	require.NoError(t, err, "TLS migration starts (certificates from hack/realstack/libvirtd.sh)")
	// libvirt sets QEMU's migration parameters once the destination is
	// prepared, shortly after the job appears; data flows after that.
	var creds string
	require.Eventually(t, func() bool {
		st, err := job.Stats(ctx)
		if err != nil || st.DataProcessed.Or(0) == 0 {
			return false
		}
		creds = migrationTLSCreds(t, name)
		return true
	}, 30*time.Second, 100*time.Millisecond, "data flows")
	assert.NotEmpty(t, creds, "QEMU migrates with TLS credentials")
	require.NoError(t, job.SetMaxSpeed(ctx, 0))
	res, err := job.Result(ctx)
	require.NoError(t, err)
	require.True(t, res.Succeeded)
	t.Logf("TLS + multifd(4) migration: creds %q, total %v, downtime %v", creds,
		res.Ended.Sub(res.Started).Round(time.Millisecond), res.Stats.Downtime)
	info, err := rs.peer.Info(ctx, name)
	require.NoError(t, err)
	assert.Equal(t, hypervisor.StateRunning, info.State)
}

// TestRealMigrationClearTextHasNoTLS is the control: without TLS, QEMU's
// migration has no TLS credentials (so the check above can fail).
func TestRealMigrationClearTextHasNoTLS(t *testing.T) {
	rs := newRealStack(t)
	name := "vkt-real-migrate-clear"
	rs.boot(t, name, libvirttest.GuestOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	job, err := rs.src.StartMigration(ctx, name, hypervisor.MigrationParams{
		DestinationURI: libvirttest.PeerURI, MigrateURI: libvirttest.MigrateURI(t), Bandwidth: 8 << 20,
	})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		st, err := job.Stats(ctx)
		return err == nil && st.DataProcessed.Or(0) > 0
	}, 30*time.Second, 100*time.Millisecond, "data flows")
	assert.Empty(t, migrationTLSCreds(t, name))
	require.NoError(t, job.Abort(ctx))
	_, err = job.Result(ctx)
	require.ErrorIs(t, err, hypervisor.ErrMigrationAborted)
}

// hostIPv4 is a non-loopback address of this machine, or "".
func hostIPv4() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}

// TestRealMigrationTLSRefusesUntrustedPeer: the realstack certificates are
// valid for 127.0.0.1 and localhost only, so a TLS migration over the
// machine's other address cannot be set up. It fails with a reason that
// names TLS, nothing moves in clear text, and the guest stays.
func TestRealMigrationTLSRefusesUntrustedPeer(t *testing.T) {
	rs := newRealStack(t)
	ip := hostIPv4()
	if ip == "" {
		t.Skip("no non-loopback IPv4 address to migrate over")
	}
	name := "vkt-real-migrate-tls-bad"
	rs.boot(t, name, libvirttest.GuestOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	job, err := rs.src.StartMigration(ctx, name, hypervisor.MigrationParams{
		DestinationURI: libvirttest.PeerURI, MigrateURI: "tcp://" + ip, TLS: true,
	})
	if err == nil {
		_, err = job.Result(ctx)
	}
	require.ErrorIs(t, err, hypervisor.ErrMigrationFailed)
	assert.Contains(t, err.Error(), "TLS migration failed")
	t.Logf("refused: %v", err)
	info, err := rs.src.Info(ctx, name)
	require.NoError(t, err)
	assert.Equal(t, hypervisor.StateRunning, info.State, "the guest stays on the source")
	_, err = rs.peer.Info(ctx, name)
	assert.ErrorIs(t, err, hypervisor.ErrNotFound)
}
