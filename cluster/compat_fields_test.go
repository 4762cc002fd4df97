package cluster_test

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/guestagent/qgaserver"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
)

// compatCluster starts an embedded cluster of one simulated node whose
// domain builder has opts (its runtime directory in a temporary one) and
// returns the cluster and the node's simulated host.
func compatCluster(t *testing.T, opts domain.Options) (context.Context, *cluster.Cluster, *sim.Host) {
	t.Helper()
	return compatClusterWith(t, opts, nil)
}

// compatClusterWith is compatCluster with a KubeVirt configuration.
func compatClusterWith(t *testing.T, opts domain.Options, kv *virtkit.KubeVirtConfiguration) (context.Context, *cluster.Cluster, *sim.Host) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	opts.RuntimeDir = t.TempDir()
	var host *sim.Host
	c, err := cluster.New(cluster.Options{
		Nodes:      1,
		KubeVirt:   kv,
		Domain:     opts,
		GuestAgent: node.GuestAgentSourceOptions{},
		NewHypervisor: func(name string) (hypervisor.Hypervisor, error) {
			host = sim.New(sim.Options{Name: name})
			return host, nil
		},
	})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return ctx, c, host
}

func applyDoc(ctx context.Context, t *testing.T, c *cluster.Cluster, doc string) {
	t.Helper()
	objs, err := virtkit.DecodeBytes([]byte(doc))
	require.NoError(t, err)
	for _, o := range objs {
		require.NoError(t, c.Apply(ctx, o))
	}
}

// A passt interface runs on the simulated node: the guest is up and
// reports its address on the pod network.
func TestPasstBindingRuns(t *testing.T) {
	ctx, c, _ := compatCluster(t, domain.Options{})
	applyDoc(ctx, t, c, `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: passt, namespace: default}
spec:
  domain:
    resources: {requests: {memory: 64Mi}}
    devices:
      interfaces: [{name: default, passtBinding: {}, ports: [{port: 22}]}]
  networks: [{name: default, pod: {}}]
`)
	got, err := c.WaitForVMI(ctx, "default", "passt", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && (v.IsFinal() || len(v.Status.Interfaces) > 0 && v.Status.Interfaces[0].IP != "")
	})
	require.NoError(t, err)
	require.Equal(t, virtkit.Running, got.Status.Phase, "reason %q, conditions %v", got.Status.Reason, got.Status.Conditions)
	ip, err := netip.ParseAddr(got.Status.Interfaces[0].IP)
	require.NoError(t, err)
	assert.True(t, netip.MustParsePrefix(qgaserver.GuestSubnet).Contains(ip), "%s", ip)
	assert.True(t, virtkit.IsConditionTrue(got.Status.Conditions, virtkit.VirtualMachineInstanceIsMigratable),
		"a passt interface does not stop live migration, as in KubeVirt")
}

const containerPathVMI = `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: irsa, namespace: default}
spec:
  domain:
    resources: {requests: {memory: 64Mi}}
    devices:
      filesystems: [{name: token, virtiofs: {}}]
  volumes:
  - name: token
    containerPath: {path: PATH, readOnly: true}
`

// A containerPath volume below a directory the node allows is shared
// with the guest: a copy of the directory's files, taken at start.
func TestContainerPathAllowedRuns(t *testing.T) {
	src := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "token"), []byte("eyJhbGciOi"), 0o600))
	ctx, c, host := compatClusterWith(t, domain.Options{ContainerPaths: domain.HostPathPolicy{Allow: []string{src}}}, containerPathGate)
	applyDoc(ctx, t, c, strings.Replace(containerPathVMI, "PATH", src, 1))
	got, err := c.WaitForVMI(ctx, "default", "irsa", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && (v.IsFinal() || v.Status.Phase == virtkit.Running)
	})
	require.NoError(t, err)
	require.Equal(t, virtkit.Running, got.Status.Phase, "reason %q, conditions %v", got.Status.Reason, got.Status.Conditions)
	shares := host.VirtiofsShares(domain.DomainName(got))
	require.Contains(t, shares, "token")
	assert.NotEqual(t, src, shares["token"], "the guest is served a copy, not the host directory")
	data, err := os.ReadFile(filepath.Join(shares["token"], "token"))
	require.NoError(t, err)
	assert.Equal(t, "eyJhbGciOi", string(data))
}

// containerPathGate turns on KubeVirt's ContainerPathVolumes gate (alpha).
var containerPathGate = &virtkit.KubeVirtConfiguration{DeveloperConfiguration: &virtkit.DeveloperConfiguration{
	FeatureGates: []string{virtkit.FeatureGateContainerPathVolumes}}}

// Where the node cannot run a feature, the VMI fails with a condition
// naming the field, instead of admission refusing the manifest.
func TestUnrunnableFeaturesNameTheField(t *testing.T) {
	for _, tc := range []struct {
		name, doc, field string
		kv               *virtkit.KubeVirtConfiguration
	}{
		{"a containerPath the node does not allow", strings.Replace(containerPathVMI, "PATH", "/var/run/secrets/eks.amazonaws.com/serviceaccount", 1),
			"spec.volumes[0].containerPath: a virtkit node has no launcher container", containerPathGate},
		{"a containerPath without its feature gate", strings.Replace(containerPathVMI, "PATH", "/var/run/secrets/eks.amazonaws.com/serviceaccount", 1),
			"spec.volumes[0].containerPath: VMI has ContainerPath volumes but the ContainerPathVolumes feature gate is disabled", nil},
		{"a network binding plugin", `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: irsa, namespace: default}
spec:
  domain:
    resources: {requests: {memory: 64Mi}}
    devices:
      interfaces: [{name: default, binding: {name: managedtap}}]
  networks: [{name: default, pod: {}}]
`, "spec.domain.devices.interfaces[0].binding: couldn't find configuration for network binding: managedtap", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, c, _ := compatClusterWith(t, domain.Options{}, tc.kv)
			applyDoc(ctx, t, c, tc.doc)
			got, err := c.WaitForVMI(ctx, "default", "irsa", func(v *virtkit.VirtualMachineInstance, found bool) bool {
				return found && v.IsFinal()
			})
			require.NoError(t, err)
			assert.Equal(t, virtkit.Failed, got.Status.Phase)
			cond := virtkit.GetCondition(got.Status.Conditions, virtkit.VirtualMachineInstanceSynchronized)
			require.NotNil(t, cond, "%v", got.Status.Conditions)
			assert.Equal(t, virtkit.ConditionFalse, cond.Status)
			assert.Contains(t, cond.Message, tc.field)
		})
	}
}

const pluginVMI = `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: plugged, namespace: default}
spec:
  domain:
    resources: {requests: {memory: 64Mi}}
    devices:
      interfaces: [{name: default, binding: {name: PLUGIN}}]
  networks: [{name: default, pod: {}}]
`

// A binding plugin the KubeVirt configuration registers with the
// managedTap attachment and no sidecar runs; one with a sidecar fails
// naming the interface's binding.
func TestBindingPluginsOnTheNode(t *testing.T) {
	kv := &virtkit.KubeVirtConfiguration{NetworkConfiguration: &virtkit.NetworkConfiguration{
		Binding: map[string]virtkit.InterfaceBindingPlugin{
			"managedtap": {DomainAttachmentType: virtkit.DomainAttachmentManagedTap},
			"passt":      {SidecarImage: "quay.io/kubevirt/network-passt-binding:v1.9.0", NetworkAttachmentDefinition: "default/netbindingpasst"},
		}}}
	ctx, c, _ := compatClusterWith(t, domain.Options{}, kv)

	applyDoc(ctx, t, c, strings.Replace(pluginVMI, "PLUGIN", "managedtap", 1))
	got, err := c.WaitForVMI(ctx, "default", "plugged", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && (v.IsFinal() || len(v.Status.Interfaces) > 0 && v.Status.Interfaces[0].IP != "")
	})
	require.NoError(t, err)
	require.Equal(t, virtkit.Running, got.Status.Phase, "reason %q, conditions %v", got.Status.Reason, got.Status.Conditions)
	assert.False(t, virtkit.IsConditionTrue(got.Status.Conditions, virtkit.VirtualMachineInstanceIsMigratable))

	applyDoc(ctx, t, c, strings.NewReplacer("PLUGIN", "passt", "plugged", "sidecar").Replace(pluginVMI))
	got, err = c.WaitForVMI(ctx, "default", "sidecar", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.IsFinal()
	})
	require.NoError(t, err)
	cond := virtkit.GetCondition(got.Status.Conditions, virtkit.VirtualMachineInstanceSynchronized)
	require.NotNil(t, cond)
	assert.Contains(t, cond.Message, "spec.domain.devices.interfaces[0].binding:")
}
