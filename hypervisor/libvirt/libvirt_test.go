//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/hypervisortest"
	"github.com/virtkit/virtkit/hypervisor/libvirt"
	"github.com/virtkit/virtkit/hypervisor/libvirt/libvirttest"
	"github.com/virtkit/virtkit/internal/testenv"
)

// openTest connects to libvirt's in-process test driver, skipping when the
// library cannot be loaded (a libvirt_dlopen build without libvirt0).
func openTest(t testing.TB) *libvirt.Hypervisor {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := libvirt.New(ctx, libvirt.Options{URI: libvirttest.TestURI})
	if err != nil {
		testenv.Unavailable(t, "libvirt test driver unavailable ("+err.Error()+"); install libvirt0/libvirt-dev: hack/realstack/install.sh")
		return nil
	}
	t.Cleanup(func() { require.NoError(t, h.Close()) })
	return h
}

func TestConformanceTestDriver(t *testing.T) {
	hypervisortest.Run(t, func(t *testing.T) hypervisortest.Target {
		return hypervisortest.Target{
			Hypervisor:   openTest(t),
			DomainXML:    libvirttest.TestDomainXML,
			BootTimeout:  10 * time.Second,
			AgentTimeout: 5 * time.Second,
		}
	})
}

func TestNewBadURI(t *testing.T) {
	_, err := libvirt.New(context.Background(), libvirt.Options{URI: "nosuchdriver:///x"})
	require.ErrorIs(t, err, hypervisor.ErrConnection)
}

func TestNewCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := libvirt.New(ctx, libvirt.Options{URI: libvirttest.TestURI})
	require.ErrorIs(t, err, context.Canceled)
}

func TestThrottlerNotSupported(t *testing.T) {
	h := openTest(t)
	err := h.SetThrottle(context.Background(), 30)
	require.ErrorIs(t, err, hypervisor.ErrNotSupported)
	require.Contains(t, err.Error(), "SetThrottle")
}

func TestClosed(t *testing.T) {
	h, err := libvirt.New(context.Background(), libvirt.Options{URI: libvirttest.TestURI})
	if err != nil {
		testenv.Unavailable(t, err.Error())
	}
	require.NoError(t, h.Close())
	require.NoError(t, h.Close(), "Close twice")
	_, err = h.Info(context.Background(), "test")
	require.ErrorIs(t, err, hypervisor.ErrConnection)
}

func TestMigrationParamsValidation(t *testing.T) {
	h := openTest(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		params hypervisor.MigrationParams
		field  string
	}{
		{"NoDestination", hypervisor.MigrationParams{}, "DestinationURI"},
		{"InitialWithoutAutoConverge", hypervisor.MigrationParams{DestinationURI: "test:///default", AutoConvergeInitial: 30}, "AutoConvergeInitial"},
		{"InitialOver100", hypervisor.MigrationParams{DestinationURI: "test:///default", AutoConverge: true, AutoConvergeInitial: 130}, "AutoConvergeInitial"},
		{"NegativeIncrement", hypervisor.MigrationParams{DestinationURI: "test:///default", AutoConverge: true, AutoConvergeIncrement: -1}, "AutoConvergeIncrement"},
		{"NegativeParallel", hypervisor.MigrationParams{DestinationURI: "test:///default", ParallelConnections: -2}, "ParallelConnections"},
		{"NegativeDowntime", hypervisor.MigrationParams{DestinationURI: "test:///default", DowntimeLimit: -time.Second}, "DowntimeLimit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.StartMigration(ctx, "test", tc.params)
			require.ErrorIs(t, err, hypervisor.ErrInvalidArgument)
			require.Contains(t, err.Error(), tc.field)
			var de *hypervisor.DomainError
			require.True(t, errors.As(err, &de))
			require.Equal(t, "test", de.Domain)
		})
	}
}

func TestMeasureDirtyRatePeriod(t *testing.T) {
	h := openTest(t)
	for _, p := range []time.Duration{0, -time.Second, 61 * time.Second} {
		_, err := h.MeasureDirtyRate(context.Background(), "test", p)
		require.ErrorIs(t, err, hypervisor.ErrInvalidArgument, "period %v", p)
	}
}

// BenchmarkTestDriverDefineStartDestroy: one define + start + destroy +
// undefine cycle through the cgo bindings against the in-process driver.
func BenchmarkTestDriverDefineStartDestroy(b *testing.B) {
	h := openTest(b)
	ctx := context.Background()
	xml := libvirttest.TestDomainXML("vkt-bench")
	for b.Loop() {
		if _, err := h.Define(ctx, xml); err != nil {
			b.Fatal(err)
		}
		if err := h.Start(ctx, "vkt-bench", hypervisor.StartOptions{}); err != nil {
			b.Fatal(err)
		}
		if err := h.Destroy(ctx, "vkt-bench"); err != nil {
			b.Fatal(err)
		}
		if err := h.Undefine(ctx, "vkt-bench"); err != nil {
			b.Fatal(err)
		}
	}
}
