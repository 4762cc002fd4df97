//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
)

// The test driver has no domain capabilities and no host CPU model: HostCPU
// says so with ErrNotSupported (the node agent then publishes no CPU labels).
func TestHostCPUTestDriver(t *testing.T) {
	h := openTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := h.HostCPU(ctx)
	require.Error(t, err)
	require.True(t, errors.Is(err, hypervisor.ErrNotSupported), "%v", err)
}
