package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

func TestObjectDefaultsPodNetworkBinding(t *testing.T) {
	for _, tc := range []struct {
		name       string
		binding    virtkit.NetworkBinding
		masquerade bool
	}{
		{name: "zero value: masquerade", binding: "", masquerade: true},
		{name: "bridge, KubeVirt's stock default", binding: virtkit.NetworkBindingBridge, masquerade: false},
		{name: "masquerade", binding: virtkit.NetworkBindingMasquerade, masquerade: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := cluster.New(cluster.Options{Nodes: 1, Defaults: virtkit.DefaultOptions{PodNetworkBinding: tc.binding}})
			require.NoError(t, err)
			go func() { _ = c.Start(ctx) }()

			// Apply defaults a VMI directly.
			mem := virtkit.DomainSpec{Memory: &virtkit.Memory{Guest: ptr(resource.MustParse("64Mi"))}}
			vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "direct"},
				Spec: virtkit.VirtualMachineInstanceSpec{Domain: mem}}
			require.NoError(t, c.Apply(ctx, vmi))
			got := &virtkit.VirtualMachineInstance{}
			require.NoError(t, c.Store().Get(ctx, store.Key{Namespace: "default", Name: "direct"}, got))
			require.Len(t, got.Spec.Domain.Devices.Interfaces, 1)
			assert.Equal(t, tc.masquerade, got.Spec.Domain.Devices.Interfaces[0].Masquerade != nil)

			// The VM controller defaults the VMI it creates from a template
			// stored without defaults.
			running := virtkit.RunStrategyAlways
			vm := &virtkit.VirtualMachine{
				ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "default"},
				Spec: virtkit.VirtualMachineSpec{RunStrategy: &running,
					Template: &virtkit.VirtualMachineInstanceTemplateSpec{Spec: virtkit.VirtualMachineInstanceSpec{Domain: mem}}},
			}
			require.NoError(t, c.Store().Create(ctx, vm))
			fromVM, err := c.WaitForVMI(ctx, "default", "vm", func(_ *virtkit.VirtualMachineInstance, found bool) bool { return found })
			require.NoError(t, err)
			require.Len(t, fromVM.Spec.Domain.Devices.Interfaces, 1)
			assert.Equal(t, tc.masquerade, fromVM.Spec.Domain.Devices.Interfaces[0].Masquerade != nil)
		})
	}
}
