package sim_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

// The simulated guest writes its disk file, except while its filesystems
// are frozen through the guest agent.
func TestWriteDiskHonoursFreeze(t *testing.T) {
	ctx := context.Background()
	disk := filepath.Join(t.TempDir(), "root.img")
	require.NoError(t, os.WriteFile(disk, make([]byte, 16), 0o600))
	clock := sim.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := sim.New(sim.Options{Name: "node1", Clock: clock, BootDelay: time.Second})
	id, err := h.Define(ctx, fmt.Sprintf(`<domain type='kvm'><name>default_vm</name><memory unit='MiB'>64</memory>
<devices><disk type='file' device='disk'><source file='%s'/><target dev='vda' bus='virtio'/></disk>
<channel type='unix'><target type='virtio' name='org.qemu.guest_agent.0'/></channel></devices></domain>`, disk))
	require.NoError(t, err)
	assert.ErrorIs(t, h.WriteDisk(ctx, id.Name, "vda", 0, []byte("x")), hypervisor.ErrInvalidState, "not running")
	require.NoError(t, h.Start(ctx, id.Name, hypervisor.StartOptions{}))
	clock.Advance(time.Second)

	require.NoError(t, h.WriteDisk(ctx, id.Name, "vda", 2, []byte("v1")))
	_, err = h.AgentCommand(ctx, id.Name, `{"execute":"guest-fsfreeze-freeze"}`)
	require.NoError(t, err)
	assert.ErrorIs(t, h.WriteDisk(ctx, id.Name, "vda", 2, []byte("v2")), hypervisor.ErrInvalidState, "frozen")
	_, err = h.AgentCommand(ctx, id.Name, `{"execute":"guest-fsfreeze-thaw"}`)
	require.NoError(t, err)
	require.NoError(t, h.WriteDisk(ctx, id.Name, "vda", 4, []byte("v3")))
	assert.ErrorIs(t, h.WriteDisk(ctx, id.Name, "vdb", 0, []byte("x")), hypervisor.ErrInvalidArgument)

	got, err := os.ReadFile(disk)
	require.NoError(t, err)
	assert.Equal(t, "v1v3", string(got[2:6]))
	assert.Len(t, got, 16)
}
