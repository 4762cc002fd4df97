package cluster_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/store"
)

// What `virtctl create vm --instancetype u1.small --preference fedora`
// prints, applied as it is on a default cluster, runs: the catalogue is
// installed, the matcher kinds virtctl writes are understood, and the
// VMI has u1.small's CPU and memory and fedora's devices.
func TestApplyVirtctlCreateVM(t *testing.T) {
	for _, tc := range []struct {
		file, name string
		disks      int
	}{
		{"create-vm-u1-small-fedora.yaml", "fedora", 0},
		{"create-vm-u1-small-fedora-containerdisk.yaml", "fedora-cd", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			clk := sim.NewVirtualClock(time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC))
			c, err := cluster.New(cluster.Options{Clock: clk})
			require.NoError(t, err)
			done := make(chan error, 1)
			go func() { done <- c.Start(ctx) }()
			defer func() { cancel(); <-done }()
			require.NoError(t, c.Settle(ctx))

			data, err := os.ReadFile(filepath.Join("..", "testdata", "virtctl", tc.file))
			require.NoError(t, err)
			require.NoError(t, c.Apply(ctx, decodeAll(t, data)...))
			require.NoError(t, c.Settle(ctx))

			vmi := &virtkit.VirtualMachineInstance{}
			require.NoError(t, c.Store().Get(ctx, store.Key{Namespace: "default", Name: tc.name}, vmi))
			assert.Equal(t, virtkit.Running, vmi.Status.Phase)
			assert.Equal(t, "2Gi", vmi.Spec.Domain.Memory.Guest.String(), "u1.small")
			assert.Equal(t, uint32(1), vmi.Spec.Domain.CPU.Sockets*vmi.Spec.Domain.CPU.Cores*vmi.Spec.Domain.CPU.Threads)
			assert.Equal(t, "linux", vmi.Annotations["vm.kubevirt.io/os"], "fedora")
			require.Len(t, vmi.Spec.Domain.Devices.Disks, tc.disks)
			for _, d := range vmi.Spec.Domain.Devices.Disks {
				assert.Equal(t, virtkit.DiskBusVirtio, d.Disk.Bus, "fedora's preferred disk bus")
			}

			vm := &virtkit.VirtualMachine{}
			require.NoError(t, c.Store().Get(ctx, store.Key{Namespace: "default", Name: tc.name}, vm))
			require.NotNil(t, vm.Status.InstancetypeRef)
			assert.Equal(t, virtkit.KindVirtualMachineClusterInstancetype, vm.Status.InstancetypeRef.Kind)
		})
	}
}
