package network_test

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/network"
	"github.com/virtkit/virtkit/store"
)

func owner(i int) network.Owner {
	return network.Owner{Namespace: "default", Name: fmt.Sprintf("vmi%d", i), UID: fmt.Sprintf("uid-%d", i), Interface: "default", Node: "n1"}
}

func TestAllocateStableAndReleased(t *testing.T) {
	ctx := context.Background()
	m := &network.IPAM{Store: store.NewMemory()}
	pool := network.Pool{Name: "pod", Subnet: netip.MustParsePrefix("10.244.1.0/24")}
	a, err := m.Allocate(ctx, pool, owner(1))
	require.NoError(t, err)
	assert.Equal(t, 24, a.Bits())
	assert.True(t, pool.Subnet.Contains(a.Addr()))
	assert.NotEqual(t, netip.MustParseAddr("10.244.1.1"), a.Addr(), "the gateway is never leased")

	// A restarted agent (a new IPAM on the same store) finds the lease.
	again, err := (&network.IPAM{Store: m.Store}).Allocate(ctx, pool, owner(1))
	require.NoError(t, err)
	assert.Equal(t, a, again)

	require.NoError(t, m.Release(ctx, "uid-1"))
	leases, err := m.Leases(ctx, "pod")
	require.NoError(t, err)
	assert.Empty(t, leases)
}

func TestPoolBoundsAndExhaustion(t *testing.T) {
	ctx := context.Background()
	m := &network.IPAM{Store: store.NewMemory()}
	pool := network.Pool{Name: "default/vlan", Subnet: netip.MustParsePrefix("192.168.10.0/24"),
		RangeStart: netip.MustParseAddr("192.168.10.10"), RangeEnd: netip.MustParseAddr("192.168.10.12")}
	got := map[netip.Addr]bool{}
	for i := range 3 {
		a, err := m.Allocate(ctx, pool, owner(i))
		require.NoError(t, err)
		got[a.Addr()] = true
	}
	assert.Equal(t, map[netip.Addr]bool{
		netip.MustParseAddr("192.168.10.10"): true, netip.MustParseAddr("192.168.10.11"): true, netip.MustParseAddr("192.168.10.12"): true,
	}, got)
	_, err := m.Allocate(ctx, pool, owner(9))
	assert.ErrorIs(t, err, network.ErrPoolExhausted)

	for _, bad := range []network.Pool{
		{Subnet: pool.Subnet},
		{Name: "x"},
		{Name: "x", Subnet: netip.MustParsePrefix("10.0.0.0/31")},
		{Name: "x", Subnet: pool.Subnet, RangeStart: netip.MustParseAddr("10.0.0.1")},
		{Name: "x", Subnet: pool.Subnet, RangeStart: netip.MustParseAddr("192.168.10.9"), RangeEnd: netip.MustParseAddr("192.168.10.8")},
	} {
		_, err := m.Allocate(ctx, bad, owner(1))
		assert.ErrorIs(t, err, network.ErrInvalidPool, "%+v", bad)
	}
}

// The property: however many allocators race on one store, no address is
// handed out twice, and every owner gets exactly one.
func TestConcurrentAllocatorsNeverDuplicate(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	pool := network.Pool{Name: "pod", Subnet: netip.MustParsePrefix("10.244.7.0/26")} // 61 leasable
	const owners = 30
	for round := range 5 {
		var wg sync.WaitGroup
		addrs := make([]netip.Prefix, owners*2)
		errs := make([]error, owners*2)
		for i := range owners * 2 {
			// Two allocators (two agents) per owner, each its own IPAM.
			wg.Go(func() {
				addrs[i], errs[i] = (&network.IPAM{Store: st}).Allocate(ctx, pool, owner(round*1000+i/2))
			})
		}
		wg.Wait()
		byAddr := map[netip.Addr]string{}
		for i := range owners * 2 {
			require.NoError(t, errs[i])
			o := owner(round*1000 + i/2).UID
			if prev, ok := byAddr[addrs[i].Addr()]; ok {
				require.Equal(t, o, prev, "address %s handed to two owners", addrs[i])
			}
			byAddr[addrs[i].Addr()] = o
		}
		// Settled, every owner has one address it keeps, distinct from all others.
		final := map[netip.Addr]bool{}
		for i := range owners {
			a, err := (&network.IPAM{Store: st}).Allocate(ctx, pool, owner(round*1000+i))
			require.NoError(t, err)
			require.False(t, final[a.Addr()], "%s twice", a)
			final[a.Addr()] = true
		}
		for i := range owners {
			require.NoError(t, (&network.IPAM{Store: st}).Release(ctx, owner(round*1000+i).UID))
		}
	}
}

func TestNodeSubnet(t *testing.T) {
	ctx := context.Background()
	m := &network.IPAM{Store: store.NewMemory()}
	cluster := netip.MustParsePrefix("10.244.0.0/16")
	seen := map[netip.Prefix]string{}
	for i := range 20 {
		n := fmt.Sprintf("node-%d", i)
		s, err := m.NodeSubnet(ctx, cluster, 24, n)
		require.NoError(t, err)
		assert.Equal(t, 24, s.Bits())
		assert.True(t, cluster.Contains(s.Addr()))
		_, dup := seen[s]
		require.False(t, dup, "%s given twice", s)
		seen[s] = n
		again, err := m.NodeSubnet(ctx, cluster, 24, n)
		require.NoError(t, err)
		assert.Equal(t, s, again, "a node keeps its subnet")
	}
	_, err := m.NodeSubnet(ctx, cluster, 8, "x")
	assert.ErrorIs(t, err, network.ErrInvalidPool)
	small := netip.MustParsePrefix("10.9.0.0/23")
	_, err = m.NodeSubnet(ctx, small, 24, "a")
	require.NoError(t, err)
	_, err = m.NodeSubnet(ctx, small, 24, "b")
	require.NoError(t, err)
	_, err = m.NodeSubnet(ctx, small, 24, "c")
	assert.ErrorIs(t, err, network.ErrPoolExhausted)
}

func TestCollectReleasesDeletedOwners(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	m := &network.IPAM{Store: st}
	pool := network.Pool{Name: "pod", Subnet: netip.MustParsePrefix("10.244.1.0/24")}
	mk := func(name string, phase virtkit.VirtualMachineInstancePhase) *virtkit.VirtualMachineInstance {
		v := &virtkit.VirtualMachineInstance{}
		v.Namespace, v.Name = "default", name
		require.NoError(t, st.Create(ctx, v))
		if phase != "" {
			v.Status.Phase = phase
			require.NoError(t, st.UpdateStatus(ctx, v))
		}
		return v
	}
	alive, done, gone := mk("alive", virtkit.Running), mk("done", virtkit.Succeeded), mk("gone", "")
	for _, v := range []*virtkit.VirtualMachineInstance{alive, done, gone} {
		_, err := m.Allocate(ctx, pool, network.Owner{Namespace: "default", Name: v.Name, UID: string(v.UID), Interface: "default"})
		require.NoError(t, err)
	}
	// A lease of an earlier VMI of the same name.
	_, err := m.Allocate(ctx, pool, network.Owner{Namespace: "default", Name: "alive", UID: string(types.UID("old")), Interface: "default"})
	require.NoError(t, err)
	require.NoError(t, st.Delete(ctx, gone, store.DeleteOptions{}))
	_, err = m.NodeSubnet(ctx, netip.MustParsePrefix("10.244.0.0/16"), 24, "n1")
	require.NoError(t, err)

	n, err := m.Collect(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	left, err := m.Leases(ctx, "")
	require.NoError(t, err)
	require.Len(t, left, 2)
	owners := []string{left[0].Spec.OwnerUID, left[1].Spec.OwnerUID}
	assert.ElementsMatch(t, []string{string(alive.UID), ""}, owners)
}
