package domain_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
)

func bindingVMI(iface virtkit.Interface, net virtkit.NetworkSource) *virtkit.VirtualMachineInstance {
	vmi := &virtkit.VirtualMachineInstance{}
	vmi.Name, vmi.Namespace = "b", "ns"
	mem := resource.MustParse("128Mi")
	vmi.Spec.Domain.Memory = &virtkit.Memory{Guest: &mem}
	iface.Name = "default"
	vmi.Spec.Domain.Devices.Interfaces = []virtkit.Interface{iface}
	vmi.Spec.Networks = []virtkit.Network{{Name: "default", NetworkSource: net}}
	return vmi
}

func TestBuildBindings(t *testing.T) {
	pod := virtkit.NetworkSource{Pod: &virtkit.PodNetwork{}}
	multus := virtkit.NetworkSource{Multus: &virtkit.MultusNetwork{NetworkName: "n"}}
	passt := virtkit.InterfaceBindingMethod{PasstBinding: &virtkit.InterfacePasstBinding{}}
	for _, tc := range []struct {
		name    string
		vmi     *virtkit.VirtualMachineInstance
		want    []libvirtxml.DomainInterfaceSourcePortForward
		errPath string
		errIs   error
	}{{
		name: "passt forwards every port when none is listed",
		vmi:  bindingVMI(virtkit.Interface{InterfaceBindingMethod: passt}, pod),
		want: []libvirtxml.DomainInterfaceSourcePortForward{{Proto: "tcp"}, {Proto: "udp"}},
	}, {
		name: "passt forwards the listed ports by protocol",
		vmi: bindingVMI(virtkit.Interface{InterfaceBindingMethod: passt, Ports: []virtkit.Port{
			{Port: 22}, {Port: 8080, Protocol: "tcp"}, {Port: 53, Protocol: "UDP"}}}, pod),
		want: []libvirtxml.DomainInterfaceSourcePortForward{
			{Proto: "tcp", Ranges: []libvirtxml.DomainInterfaceSourcePortForwardRange{{Start: 22}, {Start: 8080}}},
			{Proto: "udp", Ranges: []libvirtxml.DomainInterfaceSourcePortForwardRange{{Start: 53}}},
		},
	}, {
		name:    "passt on a secondary network",
		vmi:     bindingVMI(virtkit.Interface{InterfaceBindingMethod: passt}, multus),
		errPath: "spec.domain.devices.interfaces[0].passtBinding",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dom, err := domain.Build(tc.vmi, domain.Options{})
			if tc.errPath != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.errPath+":")
				if tc.errIs != nil {
					assert.ErrorIs(t, err, tc.errIs)
				}
				return
			}
			require.NoError(t, err)
			require.Len(t, dom.Devices.Interfaces, 1)
			got := dom.Devices.Interfaces[0]
			require.NotNil(t, got.Source)
			assert.NotNil(t, got.Source.User, "passt is a user-mode interface")
			require.NotNil(t, got.Backend)
			assert.Equal(t, "passt", got.Backend.Type)
			assert.Empty(t, got.IP, "passt gives the guest the node's address, not a masquerade network's")
			assert.Equal(t, tc.want, got.PortForward)
		})
	}
}

func containerPathVMI(path string, readOnly *bool) *virtkit.VirtualMachineInstance {
	vmi := &virtkit.VirtualMachineInstance{}
	vmi.Name, vmi.Namespace = "cp", "ns"
	mem := resource.MustParse("128Mi")
	vmi.Spec.Domain.Memory = &virtkit.Memory{Guest: &mem}
	vmi.Spec.Domain.Devices.Filesystems = []virtkit.Filesystem{{Name: "token", Virtiofs: &virtkit.FilesystemVirtiofs{}}}
	vmi.Spec.Volumes = []virtkit.Volume{{Name: "token", VolumeSource: virtkit.VolumeSource{
		ContainerPath: &virtkit.ContainerPathVolumeSource{Path: path, ReadOnly: readOnly}}}}
	return vmi
}

func TestBuildContainerPathPolicy(t *testing.T) {
	allowed := t.TempDir()
	no := false
	for _, tc := range []struct {
		name    string
		vmi     *virtkit.VirtualMachineInstance
		policy  domain.HostPathPolicy
		errPath string
	}{
		{"allowed", containerPathVMI(allowed, nil), domain.HostPathPolicy{Allow: []string{allowed}}, ""},
		{"no policy allows nothing", containerPathVMI(allowed, nil), domain.HostPathPolicy{}, "spec.volumes[0].containerPath"},
		{"outside the allowed prefix", containerPathVMI("/etc", nil), domain.HostPathPolicy{Allow: []string{allowed}}, "spec.volumes[0].containerPath"},
		{"escaping by dot-dot", containerPathVMI(allowed+"/../x", nil), domain.HostPathPolicy{Allow: []string{allowed}}, "spec.volumes[0].containerPath"},
		{"read-write", containerPathVMI(allowed, &no), domain.HostPathPolicy{Allow: []string{allowed}}, "spec.volumes[0].containerPath.readOnly"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dom, err := domain.Build(tc.vmi, domain.Options{ContainerPaths: tc.policy})
			if tc.errPath == "" {
				require.NoError(t, err)
				require.Len(t, dom.Devices.Filesystems, 1)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, domain.ErrUnsupported)
			assert.Contains(t, err.Error(), tc.errPath+":")
		})
	}
}

func TestSharesContainerPathCopiesRegularFiles(t *testing.T) {
	src := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(src, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "token"), []byte("jwt"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(src, "sub", "ca.crt"), []byte("pem"), 0o600))
	outside := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(outside, []byte("host secret"), 0o600))
	require.NoError(t, os.Symlink(outside, filepath.Join(src, "link")))

	opts := domain.Options{ContainerPaths: domain.HostPathPolicy{Allow: []string{src}}, RuntimeDir: t.TempDir()}
	shares, err := domain.Shares(context.Background(), containerPathVMI(src, nil), opts)
	require.NoError(t, err)
	require.Len(t, shares, 1)
	sh := shares[0]
	assert.Equal(t, domain.VolumeContainerPath, sh.Kind)
	assert.NotEqual(t, src, sh.Dir, "the guest is served a copy, never the host directory")
	assert.ElementsMatch(t, []domain.ConfigFile{{Path: "token", Data: []byte("jwt")}, {Path: "sub/ca.crt", Data: []byte("pem")}}, sh.Files,
		"symbolic links are not followed")

	_, err = domain.Shares(context.Background(), containerPathVMI(filepath.Join(src, "missing"), nil), opts)
	require.Error(t, err)
	assert.ErrorIs(t, err, domain.ErrNotResolved)
	assert.False(t, errors.Is(err, domain.ErrUnsupported), "a missing directory may appear: the node retries")
}

func TestBuildBindingPlugins(t *testing.T) {
	pod := virtkit.NetworkSource{Pod: &virtkit.PodNetwork{}}
	plugins := map[string]virtkit.InterfaceBindingPlugin{
		"managedtap": {DomainAttachmentType: virtkit.DomainAttachmentManagedTap},
		"tap":        {DomainAttachmentType: virtkit.DomainAttachmentTap},
		"passt":      {SidecarImage: "quay.io/kubevirt/network-passt-binding:v1.9.0", NetworkAttachmentDefinition: "default/netbindingpasst"},
	}
	for _, tc := range []struct {
		plugin string
		errMsg string
		errIs  error
	}{
		{plugin: "managedtap"},
		{plugin: "unregistered", errMsg: "couldn't find configuration for network binding: unregistered", errIs: domain.ErrUnsupported},
		{plugin: "tap", errMsg: "managedTap only", errIs: domain.ErrUnsupported},
		{plugin: "passt", errMsg: "needs its sidecar", errIs: domain.ErrUnsupported},
	} {
		t.Run(tc.plugin, func(t *testing.T) {
			vmi := bindingVMI(virtkit.Interface{Binding: &virtkit.PluginBinding{Name: tc.plugin}}, pod)
			dom, err := domain.Build(vmi, domain.Options{BindingPlugins: plugins})
			if tc.errMsg != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "spec.domain.devices.interfaces[0].binding: ")
				assert.Contains(t, err.Error(), tc.errMsg)
				if tc.errIs != nil {
					assert.ErrorIs(t, err, tc.errIs)
				}
				return
			}
			require.NoError(t, err)
			require.Len(t, dom.Devices.Interfaces, 1)
			got := dom.Devices.Interfaces[0]
			assert.Nil(t, got.Backend, "managedTap is attached as the bridge binding is, not through passt")
			assert.Equal(t, "ua-default", got.Alias.Name)
		})
	}
}
