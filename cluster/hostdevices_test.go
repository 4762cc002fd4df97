package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

const gpuResource = "nvidia.com/TU104GL_Tesla_T4"

func gpuVMI(name string) string {
	return fmt.Sprintf(`apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: %s
  namespace: default
spec:
  domain:
    devices:
      gpus:
      - name: gpu1
        deviceName: %s
    memory:
      guest: 128Mi
`, name, gpuResource)
}

// A VMI with a GPU runs on the node whose host has a permitted one; a
// second waits Unschedulable, naming the resource, until the first is
// deleted and frees the device.
func TestGPUVMIsPlacedOnTheNodeWithTheDevice(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	clk := sim.NewVirtualClock(time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC))
	hosts := map[string]*sim.Host{}
	c, err := cluster.New(cluster.Options{
		Clock:                 clk,
		NoCommonInstancetypes: true,
		NodeNames:             []string{"plain", "gpu"},
		NewHypervisor: func(name string) (hypervisor.Hypervisor, error) {
			o := sim.Options{Name: name, Clock: clk}
			if name == "gpu" {
				o.HostDevices.PCI = []hypervisor.PCIDevice{
					{Address: "0000:65:00.0", VendorID: "10de", DeviceID: "1eb8"},
					{Address: "0000:66:00.0", VendorID: "8086", DeviceID: "37c8"}, // not permitted
				}
			}
			hosts[name] = sim.New(o)
			return hosts[name], nil
		},
		KubeVirt: &virtkit.KubeVirtConfiguration{
			PermittedHostDevices: &virtkit.PermittedHostDevices{PciHostDevices: []virtkit.PciHostDevice{
				{PCIVendorSelector: "10DE:1EB8", ResourceName: gpuResource},
			}},
		},
	})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	require.NoError(t, c.Settle(ctx))

	get := func(name string) *virtkit.VirtualMachineInstance {
		v := &virtkit.VirtualMachineInstance{}
		err := c.Store().Get(ctx, store.Key{Namespace: "default", Name: name}, v)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		require.NoError(t, err)
		return v
	}
	advanceUntil := func(what string, cond func() bool) {
		t.Helper()
		for waited := time.Duration(0); !cond(); waited += time.Second {
			require.Less(t, waited, 2*time.Minute, "%s: not within 2m of virtual time", what)
			require.NoError(t, c.Advance(ctx, time.Second))
		}
	}

	// The node agents advertise the permitted device where the host has it.
	advanceUntil("capacity", func() bool {
		n := &virtkit.Node{}
		require.NoError(t, c.Store().Get(ctx, store.Key{Name: "gpu"}, n))
		q, ok := n.Status.Allocatable[gpuResource]
		return ok && q.Value() == 1
	})
	plain := &virtkit.Node{}
	require.NoError(t, c.Store().Get(ctx, store.Key{Name: "plain"}, plain))
	assert.NotContains(t, plain.Status.Capacity, virtkit.ResourceName(gpuResource))

	require.NoError(t, c.Apply(ctx, decodeAll(t, []byte(gpuVMI("first")))...))
	advanceUntil("first running", func() bool { v := get("first"); return v != nil && v.IsRunning() })
	first := get("first")
	assert.Equal(t, "gpu", first.Status.NodeName)
	advanceUntil("first not migratable", func() bool {
		m := virtkit.GetCondition(get("first").Status.Conditions, virtkit.VirtualMachineInstanceIsMigratable)
		return m != nil && m.Status == virtkit.ConditionFalse && m.Reason == virtkit.HostDeviceNotLiveMigratableReason
	})
	x, err := hosts["gpu"].XML(ctx, domain.DomainName(first))
	require.NoError(t, err)
	assert.Contains(t, x, `<hostdev mode="subsystem" type="pci" managed="yes">`)
	assert.Contains(t, x, `bus="0x65"`)

	require.NoError(t, c.Apply(ctx, decodeAll(t, []byte(gpuVMI("second")))...))
	advanceUntil("second unschedulable", func() bool {
		v := get("second")
		cond := virtkit.GetCondition(v.Status.Conditions, virtkit.VirtualMachineInstancePodScheduled)
		return cond != nil && cond.Status == virtkit.ConditionFalse
	})
	second := get("second")
	cond := virtkit.GetCondition(second.Status.Conditions, virtkit.VirtualMachineInstancePodScheduled)
	assert.Equal(t, virtkit.PodReasonUnschedulable, cond.Reason)
	assert.True(t, strings.Contains(cond.Message, "Insufficient "+gpuResource), cond.Message)
	assert.Empty(t, second.Status.NodeName)

	require.NoError(t, c.Store().Delete(ctx, first, store.DeleteOptions{}))
	advanceUntil("second running", func() bool { v := get("second"); return v != nil && v.IsRunning() })
	assert.Equal(t, "gpu", get("second").Status.NodeName)
}

const sevVMI = `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: sev
  namespace: default
spec:
  domain:
    launchSecurity:
      sev: {}
    features:
      smm: {enabled: false}
    firmware:
      bootloader:
        efi: {secureBoot: false}
    devices: {}
    memory:
      guest: 128Mi
`

// A confidential VMI is admitted and waits Unschedulable, naming
// spec.domain.launchSecurity, while no node offers SEV.
func TestSEVVMIWaitsUnschedulable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	clk := sim.NewVirtualClock(time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC))
	c, err := cluster.New(cluster.Options{Clock: clk, NoCommonInstancetypes: true, Nodes: 2})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	require.NoError(t, c.Settle(ctx))

	require.NoError(t, c.Apply(ctx, decodeAll(t, []byte(sevVMI))...))
	var cond *virtkit.Condition
	for waited := time.Duration(0); cond == nil || cond.Status != virtkit.ConditionFalse; waited += time.Second {
		require.Less(t, waited, time.Minute)
		require.NoError(t, c.Advance(ctx, time.Second))
		v := &virtkit.VirtualMachineInstance{}
		require.NoError(t, c.Store().Get(ctx, store.Key{Namespace: "default", Name: "sev"}, v))
		cond = virtkit.GetCondition(v.Status.Conditions, virtkit.VirtualMachineInstancePodScheduled)
	}
	assert.Equal(t, virtkit.PodReasonUnschedulable, cond.Reason)
	assert.Contains(t, cond.Message, "2 node(s) didn't offer spec.domain.launchSecurity.sev")
}

// A GPU VMI that no node can run waits Unschedulable and runs once a node
// whose host has the device joins.
func TestGPUVMIRunsWhenANodeWithTheDeviceJoins(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	clk := sim.NewVirtualClock(time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC))
	c, err := cluster.New(cluster.Options{
		Clock: clk, NoCommonInstancetypes: true, NodeNames: []string{"plain"},
		KubeVirt: &virtkit.KubeVirtConfiguration{PermittedHostDevices: &virtkit.PermittedHostDevices{
			PciHostDevices: []virtkit.PciHostDevice{{PCIVendorSelector: "10de:1eb8", ResourceName: gpuResource}},
		}},
	})
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = c.Start(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	require.NoError(t, c.Settle(ctx))

	get := func() *virtkit.VirtualMachineInstance {
		v := &virtkit.VirtualMachineInstance{}
		require.NoError(t, c.Store().Get(ctx, store.Key{Namespace: "default", Name: "late"}, v))
		return v
	}
	advanceUntil := func(what string, cond func() bool) {
		t.Helper()
		for waited := time.Duration(0); !cond(); waited += time.Second {
			require.Less(t, waited, 5*time.Minute, "%s: not within 5m of virtual time", what)
			require.NoError(t, c.Advance(ctx, time.Second))
		}
	}
	require.NoError(t, c.Apply(ctx, decodeAll(t, []byte(gpuVMI("late")))...))
	advanceUntil("unschedulable", func() bool {
		cond := virtkit.GetCondition(get().Status.Conditions, virtkit.VirtualMachineInstancePodScheduled)
		return cond != nil && cond.Reason == virtkit.PodReasonUnschedulable
	})

	host := sim.New(sim.Options{Name: "gpu", Clock: clk, HostDevices: hypervisor.HostDevices{
		PCI: []hypervisor.PCIDevice{{Address: "0000:65:00.0", VendorID: "10de", DeviceID: "1eb8"}},
	}})
	agent, err := cluster.NewNode(cluster.NodeOptions{Agent: node.Options{NodeName: "gpu", Store: c.Store(), Hypervisor: host, Clock: clk}})
	require.NoError(t, err)
	wg.Add(1)
	go func() { defer wg.Done(); _ = agent.Start(ctx) }()
	advanceUntil("running on the new node", func() bool { return get().IsRunning() })
	assert.Equal(t, "gpu", get().Status.NodeName)
}
