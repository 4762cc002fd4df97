package sim_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

// hotplugXML is a domain with room for 4 vCPUs (1 plugged) and a 3GiB
// virtio-mem device on top of 1GiB of boot memory, as the domain builder
// writes it for maxSockets 4 and maxGuest 4Gi.
const hotplugXML = `<domain type='qemu'><name>default_hot</name>
  <maxMemory slots='16' unit='GiB'>4</maxMemory><memory unit='GiB'>1</memory>
  <vcpu current='1'>4</vcpu>
  <cpu><topology sockets='4' cores='1' threads='1'/><numa><cell id='0' cpus='0-3' memory='1' unit='GiB'/></numa></cpu>
  <devices><memory model='virtio-mem'><target><size unit='GiB'>3</size><node>0</node><block unit='KiB'>2048</block><requested unit='KiB'>0</requested></target></memory></devices>
</domain>`

func startHot(t *testing.T, domainXML string) (*sim.Host, context.Context) {
	t.Helper()
	ctx := context.Background()
	h := sim.New(sim.Options{Name: "n1"})
	_, err := h.Define(ctx, domainXML)
	require.NoError(t, err)
	require.NoError(t, h.Start(ctx, "default_hot", hypervisor.StartOptions{}))
	return h, ctx
}

func TestSetVCPUs(t *testing.T) {
	for _, tc := range []struct {
		count   int
		wantErr error
		want    int
	}{
		{count: 2, want: 2},
		{count: 4, want: 4},
		{count: 1, want: 1},
		{count: 5, wantErr: hypervisor.ErrInvalidArgument, want: 1},
		{count: 0, wantErr: hypervisor.ErrInvalidArgument, want: 1},
	} {
		t.Run(fmt.Sprint(tc.count), func(t *testing.T) {
			h, ctx := startHot(t, hotplugXML)
			err := h.SetVCPUs(ctx, "default_hot", tc.count)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
			} else {
				require.NoError(t, err)
			}
			info, err := h.Info(ctx, "default_hot")
			require.NoError(t, err)
			assert.Equal(t, tc.want, info.VCPUs)
			stats, err := h.Stats(ctx, "default_hot")
			require.NoError(t, err)
			assert.Len(t, stats.VCPUs, tc.want, "per-vCPU statistics")
			// The persistent definition keeps the count (libvirt's config flag).
			require.NoError(t, h.Destroy(ctx, "default_hot"))
			info, err = h.Info(ctx, "default_hot")
			require.NoError(t, err)
			assert.Equal(t, tc.want, info.VCPUs, "after a restart")
		})
	}
}

func TestSetVCPUsNeedsARunningDomain(t *testing.T) {
	ctx := context.Background()
	h := sim.New(sim.Options{Name: "n1"})
	_, err := h.Define(ctx, hotplugXML)
	require.NoError(t, err)
	require.ErrorIs(t, h.SetVCPUs(ctx, "default_hot", 2), hypervisor.ErrInvalidState)
	require.ErrorIs(t, h.SetVCPUs(ctx, "nope", 2), hypervisor.ErrNotFound)
}

func TestRequestPluggableMemory(t *testing.T) {
	for _, tc := range []struct {
		name    string
		bytes   uint64
		wantErr error
		want    uint64
	}{
		{name: "1GiB", bytes: 1 << 30, want: 1 << 30},
		{name: "all of it", bytes: 3 << 30, want: 3 << 30},
		{name: "nothing", bytes: 0, want: 0},
		{name: "beyond the size", bytes: 4 << 30, wantErr: hypervisor.ErrInvalidArgument},
		{name: "not a block multiple", bytes: 1<<30 + 4096, wantErr: hypervisor.ErrInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, ctx := startHot(t, hotplugXML)
			err := h.RequestPluggableMemory(ctx, "default_hot", tc.bytes)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
			} else {
				require.NoError(t, err)
			}
			pm, err := h.PluggableMemory(ctx, "default_hot")
			require.NoError(t, err)
			assert.Equal(t, hypervisor.PluggableMemory{SizeBytes: 3 << 30, BlockBytes: 2 << 20, RequestedBytes: tc.want, CurrentBytes: tc.want}, pm)
			info, err := h.Info(ctx, "default_hot")
			require.NoError(t, err)
			assert.Equal(t, uint64(4<<30), info.MaxMemoryBytes, "boot memory and the device's size, as libvirt reports it")
			assert.Equal(t, uint64(1<<30)+tc.want, info.MemoryBytes, "boot memory and what the guest plugged")
		})
	}
}

func TestPluggableMemoryWithoutDevice(t *testing.T) {
	h, ctx := startHot(t, `<domain type='qemu'><name>default_hot</name><memory unit='MiB'>128</memory></domain>`)
	_, err := h.PluggableMemory(ctx, "default_hot")
	require.ErrorIs(t, err, hypervisor.ErrNotSupported)
	require.ErrorIs(t, h.RequestPluggableMemory(ctx, "default_hot", 0), hypervisor.ErrNotSupported)
}

// A running domain gets a second vCPU and 1GiB more memory through its
// virtio-mem device, as a node agent does for KubeVirt's LiveUpdate.
func ExampleHost_SetVCPUs() {
	ctx := context.Background()
	h := sim.New(sim.Options{Name: "n1"})
	if _, err := h.Define(ctx, hotplugXML); err != nil {
		fmt.Println(err)
		return
	}
	_ = h.Start(ctx, "default_hot", hypervisor.StartOptions{})
	if err := h.SetVCPUs(ctx, "default_hot", 2); err != nil {
		fmt.Println(err)
		return
	}
	if err := h.RequestPluggableMemory(ctx, "default_hot", 1<<30); err != nil {
		fmt.Println(err)
		return
	}
	info, _ := h.Info(ctx, "default_hot")
	pm, _ := h.PluggableMemory(ctx, "default_hot")
	fmt.Println("vCPUs:", info.VCPUs)
	fmt.Println("memory:", info.MemoryBytes>>20, "MiB of", info.MaxMemoryBytes>>20)
	fmt.Println("virtio-mem plugged:", pm.CurrentBytes>>20, "MiB of", pm.SizeBytes>>20)
	// Output:
	// vCPUs: 2
	// memory: 2048 MiB of 4096
	// virtio-mem plugged: 1024 MiB of 3072
}
