package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/store"
)

const hostDeviceVMI = `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: usb
  namespace: default
spec:
  domain:
    devices:
      hostDevices:
      - name: usb
        deviceName: kubevirt.io/storage
    memory:
      guest: 128Mi
`

// New creates the KubeVirt object kubevirt/kubevirt with KubeVirt's
// default configuration; admission reads it for every request, so a gated
// field is refused until the object enables its gate.
func TestKubeVirtObjectGatesAdmission(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := cluster.New(cluster.Options{NoCommonInstancetypes: true})
	require.NoError(t, err)

	kv := &virtkit.KubeVirt{}
	require.NoError(t, c.Store().Get(ctx, store.Key{Namespace: "kubevirt", Name: "kubevirt"}, kv))
	assert.Equal(t, virtkit.KubeVirtPhaseDeployed, kv.Status.Phase)
	assert.Nil(t, kv.Spec.Configuration.DeveloperConfiguration, "KubeVirt's defaults")

	err = c.Apply(ctx, decodeAll(t, []byte(hostDeviceVMI))...)
	require.ErrorIs(t, err, cluster.ErrInvalidObject)
	errs := cluster.FieldErrors(err)
	require.Len(t, errs, 1, "%v", err)
	assert.Equal(t, "spec.domain.devices.hostDevices", errs[0].Field)
	assert.Contains(t, errs[0].Detail, "Host Devices feature gate is not enabled in kubevirt-config")

	// As a user applies it: a manifest without the stored object's
	// resource version or status.
	manifest := virtkit.DefaultKubeVirt()
	manifest.Spec.Configuration.DeveloperConfiguration = &virtkit.DeveloperConfiguration{FeatureGates: []string{virtkit.FeatureGateHostDevices}}
	require.NoError(t, c.Apply(ctx, manifest))
	require.NoError(t, c.Store().Get(ctx, store.KeyOf(manifest), kv))
	assert.Equal(t, virtkit.KubeVirtPhaseDeployed, kv.Status.Phase, "applying the spec keeps the status")
	require.NoError(t, c.Apply(ctx, decodeAll(t, []byte(hostDeviceVMI))...), "the gate is on now")
}

// Options.KubeVirt supplies the configuration; its migrations become the
// cluster migration configuration.
func TestKubeVirtOptions(t *testing.T) {
	ctx := context.Background()
	bw := uint32(3)
	cfg := &virtkit.KubeVirtConfiguration{
		DeveloperConfiguration: &virtkit.DeveloperConfiguration{FeatureGates: []string{virtkit.FeatureGateHostDisk}},
		MigrationConfiguration: &virtkit.MigrationConfiguration{ParallelMigrationsPerCluster: &bw},
	}
	c, err := cluster.New(cluster.Options{NoCommonInstancetypes: true, KubeVirt: cfg})
	require.NoError(t, err)
	kv := &virtkit.KubeVirt{}
	require.NoError(t, c.Store().Get(ctx, store.Key{Namespace: virtkit.DefaultKubeVirtNamespace, Name: virtkit.DefaultKubeVirtName}, kv))
	assert.Equal(t, []string{virtkit.FeatureGateHostDisk}, kv.Spec.Configuration.DeveloperConfiguration.FeatureGates)

	// A second cluster on the same store keeps the stored configuration
	// unless given one.
	_, err = cluster.New(cluster.Options{NoCommonInstancetypes: true, Store: c.Store()})
	require.NoError(t, err)
	require.NoError(t, c.Store().Get(ctx, store.Key{Namespace: virtkit.DefaultKubeVirtNamespace, Name: virtkit.DefaultKubeVirtName}, kv))
	assert.Equal(t, []string{virtkit.FeatureGateHostDisk}, kv.Spec.Configuration.DeveloperConfiguration.FeatureGates)

	bad := virtkit.VMRolloutStrategy("Sometimes")
	_, err = cluster.New(cluster.Options{NoCommonInstancetypes: true, KubeVirt: &virtkit.KubeVirtConfiguration{VMRolloutStrategy: &bad}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.configuration.vmRolloutStrategy")
}

// The configuration's node selectors place every VMI, under the VMI's own,
// without changing its spec.
func TestKubeVirtNodeSelectors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	clk := sim.NewVirtualClock(time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC))
	c, err := cluster.New(cluster.Options{
		Clock: clk, NoCommonInstancetypes: true, NodeNames: []string{"a1", "b1"},
		NodeLabels: func(name string) map[string]string { return map[string]string{"zone": name[:1]} },
		KubeVirt: &virtkit.KubeVirtConfiguration{DeveloperConfiguration: &virtkit.DeveloperConfiguration{
			NodeSelectors: map[string]string{"zone": "b"},
		}},
	})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	defer func() { cancel(); <-done }()
	require.NoError(t, c.Settle(ctx))

	const vmiYAML = `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: NAME, namespace: default}
spec:
  SELECTOR
  domain:
    devices: {}
    memory: {guest: 128Mi}
`
	mk := func(name, selector string) virtkit.Object {
		doc := strings.ReplaceAll(strings.ReplaceAll(vmiYAML, "NAME", name), "SELECTOR", selector)
		return decodeAll(t, []byte(doc))[0]
	}
	require.NoError(t, c.Apply(ctx, mk("cluster-wide", "terminationGracePeriodSeconds: 0"), mk("cluster-wide-2", "terminationGracePeriodSeconds: 0"),
		mk("cluster-wide-3", "terminationGracePeriodSeconds: 0"), mk("own", "nodeSelector: {zone: a}")))
	require.NoError(t, c.Settle(ctx))
	for name, node := range map[string]string{"cluster-wide": "b1", "cluster-wide-2": "b1", "cluster-wide-3": "b1", "own": "a1"} {
		vmi := &virtkit.VirtualMachineInstance{}
		require.NoError(t, c.Store().Get(ctx, store.Key{Namespace: "default", Name: name}, vmi))
		assert.Equal(t, node, vmi.Status.NodeName, name)
	}
	vmi := &virtkit.VirtualMachineInstance{}
	require.NoError(t, c.Store().Get(ctx, store.Key{Namespace: "default", Name: "cluster-wide"}, vmi))
	assert.Empty(t, vmi.Spec.NodeSelector, "the stored spec is not changed")
}

// The cluster's memoryOvercommit gives a VMI that sets no memory request
// one of guest × 100 / memoryOvercommit, by which it is placed.
func TestMemoryOvercommitLowersTheRequest(t *testing.T) {
	ctx := context.Background()
	c, err := cluster.New(cluster.Options{NoCommonInstancetypes: true, KubeVirt: &virtkit.KubeVirtConfiguration{
		DeveloperConfiguration: &virtkit.DeveloperConfiguration{MemoryOvercommit: 150},
	}})
	require.NoError(t, err)
	require.NoError(t, c.Apply(ctx, decodeAll(t, []byte(`apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: dense, namespace: default}
spec:
  domain:
    devices: {}
    memory: {guest: 3Gi}
`))...))
	v := &virtkit.VirtualMachineInstance{}
	require.NoError(t, c.Store().Get(ctx, store.Key{Namespace: "default", Name: "dense"}, v))
	q := v.Spec.Domain.Resources.Requests[virtkit.ResourceMemory]
	assert.Equal(t, int64(2<<30), q.Value())
	assert.Equal(t, int64(3<<30), v.Spec.Domain.Memory.Guest.Value())
}
