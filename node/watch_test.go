package node_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/store/etcd"
	"github.com/virtkit/virtkit/store/etcd/etcdtest"
)

// An agent watches only its node's VMIs, on the memory store and on etcd
// (where its selector watch skips other nodes' VMIs undecoded): a VMI
// placed on it runs, one placed on another node is left alone, and one
// moved away (as after a migration: status.nodeName, then the node label)
// loses its domain here.
func TestAgentSeesOnlyItsVMIsAndLetsMovedOnesGo(t *testing.T) {
	tests := []struct {
		name string
		open func(t *testing.T) store.Store
	}{
		{"memory", func(*testing.T) store.Store { return store.NewMemory() }},
		{"etcd", func(t *testing.T) store.Store {
			s, err := etcd.New(t.Context(), etcd.Options{Endpoints: etcdtest.StartServer(t), Prefix: "/watch-test"})
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			return s
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.open(t)
			hv := sim.New(sim.Options{Name: nodeName, CPUs: 16, MemoryBytes: 16 << 30})
			runAgent(t, st, hv, func(o *node.Options) { o.StatusInterval = time.Hour })

			// Another node's VMI, created first: never started here.
			// (Placed on node-b from its create on: a VMI first placed
			// here would be this agent's to take until it moves.)
			newScheduledVMIOn(t, st, "elsewhere", "node-b")

			newScheduledVMI(t, st, "mine")
			eventuallyPhase(t, st, "mine", virtkit.Running)
			assert.Contains(t, domainNames(t, hv), node.DomainName("default", "mine"))
			assert.NotContains(t, domainNames(t, hv), node.DomainName("default", "elsewhere"))
			got, _ := getVMI(t, st, "elsewhere")
			assert.False(t, slices.Contains(got.Finalizers, node.Finalizer), "another node's VMI got this agent's finalizer")
			assert.Equal(t, virtkit.Scheduled, got.Status.Phase)

			// Moved away.
			changeVMI(t, st, "mine", true, func(v *virtkit.VirtualMachineInstance) { v.Status.NodeName = "node-b" })
			changeVMI(t, st, "mine", false, func(v *virtkit.VirtualMachineInstance) { v.Labels[virtkit.NodeNameLabel] = "node-b" })
			require.Eventually(t, func() bool {
				_, ok := domainNames(t, hv)[node.DomainName("default", "mine")]
				return !ok
			}, 20*time.Second, 20*time.Millisecond, "the domain of a VMI moved to another node is removed")

			// Placed here again (a migration back): it runs here again.
			changeVMI(t, st, "mine", false, func(v *virtkit.VirtualMachineInstance) { v.Labels[virtkit.NodeNameLabel] = nodeName })
			changeVMI(t, st, "mine", true, func(v *virtkit.VirtualMachineInstance) {
				v.Status.NodeName = nodeName
				v.SetPhase(virtkit.Scheduled, metav1.Now())
			})
			require.Eventually(t, func() bool {
				_, ok := domainNames(t, hv)[node.DomainName("default", "mine")]
				return ok
			}, 20*time.Second, 20*time.Millisecond, "a VMI placed here again is started")
		})
	}
}

// newScheduledVMIOn is newScheduledVMI for a VMI placed on node on.
func newScheduledVMIOn(t *testing.T, st store.Store, name, on string) *virtkit.VirtualMachineInstance {
	t.Helper()
	ctx := context.Background()
	mem := resource.MustParse("128Mi")
	vmi := &virtkit.VirtualMachineInstance{
		TypeMeta: metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstance},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
			Labels: map[string]string{virtkit.NodeNameLabel: on}},
		Spec: virtkit.VirtualMachineInstanceSpec{Domain: virtkit.DomainSpec{Memory: &virtkit.Memory{Guest: &mem}}},
	}
	virtkit.SetDefaults(vmi)
	require.Empty(t, virtkit.Validate(vmi))
	require.NoError(t, st.Create(ctx, vmi))
	vmi.Status.NodeName = on
	vmi.SetPhase(virtkit.Scheduled, metav1.Now())
	require.NoError(t, st.UpdateStatus(ctx, vmi))
	return vmi
}
