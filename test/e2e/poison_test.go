package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/store/etcd"
	"github.com/virtkit/virtkit/store/etcd/etcdtest"
)

// TestPoisonedKeyCostsOnlyItself runs a control plane with two simulated
// hosts in this process on a real etcd in which an operator has put values
// virtkit cannot decode (as `etcdctl put` would), and checks that a new VM
// still reaches Running: controllers and node agents list and watch past
// the bad keys. It needs no virtkit binary and runs with -short too.
func TestPoisonedKeyCostsOnlyItself(t *testing.T) {
	endpoints := etcdtest.StartServer(t)
	raw, err := clientv3.New(clientv3.Config{Endpoints: endpoints, Logger: zap.NewNop()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = raw.Close() })
	st, err := etcd.New(t.Context(), etcd.Options{Endpoints: endpoints})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // hang guard
	defer cancel()
	poison := map[string]string{
		"/virtkit/VirtualMachineInstance/default/zzpoison": "not json{",
		"/virtkit/VirtualMachine/default/aapoison":         `{"kind":"VirtualMachine","metadata":{"name":"other","namespace":"default"}}`,
		"/virtkit/VirtualMachineInstance/nonamespace":      `{}`,
	}
	for k, v := range poison {
		_, err := raw.Put(ctx, k, v)
		require.NoError(t, err)
	}

	c, err := cluster.New(cluster.Options{Store: st, Nodes: 2})
	require.NoError(t, err)
	done := make(chan error, 1)
	runCtx, stop := context.WithCancel(ctx)
	go func() { done <- c.Start(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("cluster: %v", err)
		}
	})

	always := virtkit.RunStrategyAlways
	mem := resource.MustParse("64Mi")
	require.NoError(t, c.Apply(ctx, &virtkit.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachine},
		ObjectMeta: metav1.ObjectMeta{Name: "vm1", Namespace: "default"},
		Spec: virtkit.VirtualMachineSpec{
			RunStrategy: &always,
			Template: &virtkit.VirtualMachineInstanceTemplateSpec{
				Spec: virtkit.VirtualMachineInstanceSpec{Domain: virtkit.DomainSpec{Memory: &virtkit.Memory{Guest: &mem}}},
			},
		},
	}))
	vmi, err := c.WaitForVMI(ctx, "default", "vm1", cluster.VMIPhaseIs(virtkit.Running))
	require.NoError(t, err, "a new VM must reach Running with poisoned keys in etcd")
	assert.NotEmpty(t, vmi.Status.NodeName)

	// What `virtkit get vmis` does works, and the bad keys are known by
	// their etcd keys.
	vmis := &virtkit.VirtualMachineInstanceList{}
	require.NoError(t, st.List(ctx, vmis, store.ListOptions{}))
	require.Len(t, vmis.Items, 1)
	assert.Equal(t, "vm1", vmis.Items[0].Name)
	var keys []string
	for _, ce := range st.CorruptObjects() {
		keys = append(keys, ce.StorageKey)
	}
	assert.ElementsMatch(t, []string{
		"/virtkit/VirtualMachine/default/aapoison",
		"/virtkit/VirtualMachineInstance/default/zzpoison",
		"/virtkit/VirtualMachineInstance/nonamespace",
	}, keys)
	err = st.Get(ctx, store.Key{Namespace: "default", Name: "zzpoison"}, &virtkit.VirtualMachineInstance{})
	require.ErrorIs(t, err, store.ErrCorrupt)
	assert.Contains(t, err.Error(), "/virtkit/VirtualMachineInstance/default/zzpoison")

	// Corrupting a running VMI costs only that VMI's control: its guest
	// keeps running, nothing replaces it, and a repair restores it.
	vmiKey := "/virtkit/VirtualMachineInstance/default/vm1"
	resp, err := raw.Get(ctx, vmiKey)
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	good := resp.Kvs[0].Value
	_, err = raw.Put(ctx, vmiKey, "not json{")
	require.NoError(t, err)
	host := c.Node(vmi.Status.NodeName).Hypervisor
	for range 20 { // ~2 s of reconciles (watch events, retries, resyncs)
		info, err := host.Info(ctx, node.DomainName("default", "vm1"))
		require.NoError(t, err, "the guest of a corrupt VMI must not be removed")
		require.Equal(t, hypervisor.StateRunning, info.State)
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, st.List(ctx, vmis, store.ListOptions{}))
	assert.Empty(t, vmis.Items, "no second VMI was created for vm1")
	_, err = raw.Put(ctx, vmiKey, string(good))
	require.NoError(t, err)
	_, err = c.WaitForVMI(ctx, "default", "vm1", cluster.VMIPhaseIs(virtkit.Running))
	require.NoError(t, err)
	info, err := host.Info(ctx, node.DomainName("default", "vm1"))
	require.NoError(t, err)
	assert.Equal(t, hypervisor.StateRunning, info.State)

	// Repair: a delete is noticed without a restart.
	_, err = raw.Delete(ctx, "/virtkit/VirtualMachineInstance/default/zzpoison")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		for _, ce := range st.CorruptObjects() {
			if ce.Key.Name == "zzpoison" {
				return false
			}
		}
		return true
	}, time.Minute, 20*time.Millisecond, "the controllers' watches see the repair")
}
