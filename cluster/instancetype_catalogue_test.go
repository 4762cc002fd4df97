package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/store"
)

const catalogueVM = `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: catalogued
  namespace: default
spec:
  runStrategy: Always
  instancetype:
    name: u1.small
  preference:
    name: fedora
  template:
    spec:
      domain:
        devices:
          disks:
          - name: root
      volumes:
      - name: root
        containerDisk:
          image: quay.io/containerdisks/fedora:41
`

// A cluster has KubeVirt's common instance types and preferences unless
// told otherwise, and a VM naming u1.small and fedora runs with them.
func TestCommonInstancetypesInstalledByDefault(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	clk := sim.NewVirtualClock(time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC))
	c, err := cluster.New(cluster.Options{Clock: clk})
	require.NoError(t, err)

	its := &virtkit.VirtualMachineClusterInstancetypeList{}
	require.NoError(t, c.Store().List(ctx, its, store.ListOptions{}))
	assert.Len(t, its.Items, 65)
	prefs := &virtkit.VirtualMachineClusterPreferenceList{}
	require.NoError(t, c.Store().List(ctx, prefs, store.ListOptions{}))
	assert.Len(t, prefs.Items, 57)
	small := &virtkit.VirtualMachineClusterInstancetype{}
	require.NoError(t, c.Store().Get(ctx, store.Key{Name: "u1.small"}, small))
	assert.Equal(t, "kubevirt.io", small.Labels[virtkit.InstancetypeVendorLabel])

	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	defer func() { cancel(); <-done }()
	require.NoError(t, c.Settle(ctx))
	require.NoError(t, c.Apply(ctx, decodeAll(t, []byte(catalogueVM))...))
	require.NoError(t, c.Settle(ctx))

	vmi := &virtkit.VirtualMachineInstance{}
	require.NoError(t, c.Store().Get(ctx, store.Key{Namespace: "default", Name: "catalogued"}, vmi))
	assert.Equal(t, virtkit.Running, vmi.Status.Phase)
	require.NotNil(t, vmi.Spec.Domain.Memory)
	assert.Equal(t, "2Gi", vmi.Spec.Domain.Memory.Guest.String(), "u1.small")
	assert.Equal(t, virtkit.DiskBusVirtio, vmi.Spec.Domain.Devices.Disks[0].Disk.Bus, "fedora")
	assert.Equal(t, "linux", vmi.Annotations["vm.kubevirt.io/os"], "fedora's annotations")

	// A second cluster on the same store brings a changed catalogue
	// object back, as KubeVirt's operator does.
	require.NoError(t, c.Store().Get(ctx, store.Key{Name: "u1.small"}, small))
	small.Spec.CPU.Guest = 7
	require.NoError(t, c.Store().Update(ctx, small))
	_, err = cluster.New(cluster.Options{Clock: clk, Store: c.Store()})
	require.NoError(t, err)
	require.NoError(t, c.Store().Get(ctx, store.Key{Name: "u1.small"}, small))
	assert.Equal(t, uint32(1), small.Spec.CPU.Guest)
}

func TestNoCommonInstancetypes(t *testing.T) {
	c, err := cluster.New(cluster.Options{NoCommonInstancetypes: true})
	require.NoError(t, err)
	its := &virtkit.VirtualMachineClusterInstancetypeList{}
	require.NoError(t, c.Store().List(context.Background(), its, store.ListOptions{}))
	assert.Empty(t, its.Items)
	vm := decodeAll(t, []byte(catalogueVM))
	err = c.Apply(context.Background(), vm...)
	require.ErrorIs(t, err, cluster.ErrInvalidObject, "u1.small is not there")
}
