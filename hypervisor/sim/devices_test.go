package sim_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

// Disks attach to and detach from a running domain, live and in its
// definition; the block stats follow; what libvirt refuses is refused.
func TestAttachAndDetachDisk(t *testing.T) {
	ctx := context.Background()
	h, _ := virtualHost(t, sim.Options{})
	_, err := h.Define(ctx, `<domain type='kvm'><name>ns_hp</name><memory unit='MiB'>256</memory>
  <devices><controller type='scsi' index='0' model='virtio-non-transitional'/>
  <disk type='file' device='disk'><source file='/img/root.qcow2'/><target dev='vda' bus='virtio'/></disk></devices></domain>`)
	require.NoError(t, err)
	disk := `<disk type='file' device='disk'><source file='/pvc/data.img'/><target dev='sda' bus='scsi'/><alias name='ua-data'/></disk>`

	err = h.AttachDevice(ctx, "ns_hp", disk)
	require.ErrorIs(t, err, hypervisor.ErrInvalidState, "a domain that is not running")
	require.NoError(t, h.Start(ctx, "ns_hp", hypervisor.StartOptions{}))

	require.NoError(t, h.AttachDevice(ctx, "ns_hp", disk))
	live, err := h.XML(ctx, "ns_hp")
	require.NoError(t, err)
	assert.Contains(t, live, `<alias name="ua-data">`)
	st, err := h.Stats(ctx, "ns_hp")
	require.NoError(t, err)
	require.Len(t, st.Block, 2)
	assert.Equal(t, "sda", st.Block[1].Name)
	assert.Equal(t, "/pvc/data.img", st.Block[1].Path)

	require.ErrorIs(t, h.AttachDevice(ctx, "ns_hp", disk), hypervisor.ErrInvalidArgument, "the target is taken")
	require.ErrorIs(t, h.AttachDevice(ctx, "ns_hp", `<interface type='user'/>`), hypervisor.ErrNotSupported)
	require.ErrorIs(t, h.AttachDevice(ctx, "nowhere", disk), hypervisor.ErrNotFound)

	require.NoError(t, h.DetachDevice(ctx, "ns_hp", disk))
	live, err = h.XML(ctx, "ns_hp")
	require.NoError(t, err)
	assert.NotContains(t, live, `ua-data`)
	require.ErrorIs(t, h.DetachDevice(ctx, "ns_hp", disk), hypervisor.ErrInvalidArgument, "no such disk")

	// The definition keeps an attached disk: a restart has it.
	require.NoError(t, h.AttachDevice(ctx, "ns_hp", disk))
	require.NoError(t, h.Destroy(ctx, "ns_hp"))
	require.NoError(t, h.Start(ctx, "ns_hp", hypervisor.StartOptions{}))
	live, err = h.XML(ctx, "ns_hp")
	require.NoError(t, err)
	assert.Contains(t, live, `ua-data`, "attached with the config flag: the definition keeps it")
}
