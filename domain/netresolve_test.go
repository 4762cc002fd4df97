package domain_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
)

func twoNICVMI() *virtkit.VirtualMachineInstance {
	vmi := &virtkit.VirtualMachineInstance{}
	vmi.Namespace, vmi.Name, vmi.UID = "default", "vm1", "uid-1"
	mem := resource.MustParse("128Mi")
	vmi.Spec.Domain.Memory = &virtkit.Memory{Guest: &mem}
	vmi.Spec.Domain.Devices.Interfaces = []virtkit.Interface{
		{Name: "default", InterfaceBindingMethod: virtkit.InterfaceBindingMethod{Masquerade: &virtkit.InterfaceMasquerade{}}},
		{Name: "sec", InterfaceBindingMethod: virtkit.InterfaceBindingMethod{Bridge: &virtkit.InterfaceBridge{}}},
	}
	vmi.Spec.Networks = []virtkit.Network{
		{Name: "default", NetworkSource: virtkit.NetworkSource{Pod: &virtkit.PodNetwork{}}},
		{Name: "sec", NetworkSource: virtkit.NetworkSource{Multus: &virtkit.MultusNetwork{NetworkName: "br"}}},
	}
	return vmi
}

func TestResolveNetworksAndRetarget(t *testing.T) {
	on := func(bridges map[string]string) domain.NetworkResolverFunc {
		return func(_ context.Context, req domain.NetworkRequest) (domain.HostNetwork, error) {
			return domain.HostNetwork{Type: domain.AttachBridge, Source: bridges[req.Interface]}, nil
		}
	}
	vmi := twoNICVMI()
	src, err := domain.Build(vmi, domain.Options{NetworkResolver: on(map[string]string{"default": "srcm", "sec": "br1"})})
	require.NoError(t, err)
	srcXML, err := src.Marshal()
	require.NoError(t, err)

	nets, err := domain.ResolveNetworks(context.Background(), vmi, on(map[string]string{"default": "dstm", "sec": "br1"}))
	require.NoError(t, err)
	assert.Equal(t, map[string]domain.HostNetwork{
		"default": {Type: domain.AttachBridge, Source: "dstm"},
		"sec":     {Type: domain.AttachBridge, Source: "br1"},
	}, nets)

	for _, tc := range []struct {
		name string
		nets map[string]domain.HostNetwork
		want []string
	}{
		{"both", nets, []string{"dstm", "br1"}},
		{"one", map[string]domain.HostNetwork{"sec": {Type: domain.AttachBridge, Source: "br9", MTU: 1400}}, []string{"srcm", "br9"}},
		{"none", nil, []string{"srcm", "br1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := domain.RetargetInterfaces(srcXML, tc.nets)
			require.NoError(t, err)
			dom := &libvirtxml.Domain{}
			require.NoError(t, dom.Unmarshal(out))
			require.Len(t, dom.Devices.Interfaces, 2)
			for i, want := range tc.want {
				assert.Equal(t, want, dom.Devices.Interfaces[i].Source.Bridge.Bridge)
				assert.Equal(t, src.Devices.Interfaces[i].MAC, dom.Devices.Interfaces[i].MAC, "the MAC is kept")
			}
		})
	}

	_, err = domain.RetargetInterfaces("<domain", nets)
	assert.Error(t, err)
	_, err = domain.ResolveNetworks(context.Background(), vmi, nil)
	assert.ErrorIs(t, err, domain.ErrNotResolved)
	bad := twoNICVMI()
	bad.Spec.Networks = bad.Spec.Networks[:1]
	_, err = domain.ResolveNetworks(context.Background(), bad, on(nil))
	assert.ErrorContains(t, err, "spec.domain.devices.interfaces[1].name")
}
