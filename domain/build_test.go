package domain_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenOptions are the Options of the golden cases that need more than
// the zero value.
// disksHostPaths allows the host disks of testdata/vmi/disks.yaml.
var disksHostPaths = domain.HostPathPolicy{Allow: []string{"/dev/sdz", "/srv/shared"}}

var goldenOptions = map[string]domain.Options{
	"config-volumes": {ConfigResolver: goldenConfig},
	"virtiofs":       {ConfigResolver: goldenConfig},
	"cpu-model-kvm":  {Type: domain.TypeKVM},
	"disks":          {HostPaths: disksHostPaths},
	"interfaces": {NetworkResolver: &domain.NetResolver{Multus: map[string]domain.HostNetwork{
		"storage-net":     {Type: domain.AttachBridge, Source: "br-storage", MTU: 9000},
		"team/legacy-net": {Type: domain.AttachNetwork, Source: "legacy"},
	}}},
	"multiqueue": {NetworkResolver: &domain.NetResolver{Multus: map[string]domain.HostNetwork{
		"br-net": {Type: domain.AttachEthernet, Source: "tap-mq0"},
	}}},
	"sriov": {NetworkResolver: &domain.NetResolver{PodNetwork: "default", Multus: map[string]domain.HostNetwork{
		"sriov-net": {Type: domain.AttachHostdev, PCIAddress: "0000:3b:02.1"},
	}}},
	"dedicated-cpu": {DedicatedCPUs: []uint{2, 3, 4}},
	"hostdevices": {HostDevices: map[string]domain.AssignedDevice{
		"gpu1":  {PCIAddress: "0000:65:00.0"},
		"vgpu1": {MdevUUID: "6f0a8a53-4f4a-4c8b-9d58-2a3c1e7e9b10"},
		"qat1":  {PCIAddress: "0000:3d:01.2"},
	}},
	"kernel-boot": {
		RuntimeDir: "/run/vk",
		Emulator:   "/usr/bin/qemu-system-x86_64",
		VolumeResolver: &domain.DirResolver{Kernels: map[string]domain.HostKernel{
			"localhost/virtkit/tiny-guest:latest": {Kernel: "/boot/vmlinuz-6.1.0-cloud-amd64", Initrd: "/srv/virtkit/initramfs.gz"},
		}},
	},
	"containerpath": {ContainerPaths: domain.HostPathPolicy{Allow: []string{"/var/run/secrets/eks.amazonaws.com"}}},
	"windows":       {Type: domain.TypeKVM, SMBIOS: domain.SMBIOS{Manufacturer: "ACME", Version: "1.2", SKU: "vk-1"}},
	"usb-hostdevices": {HostDevices: map[string]domain.AssignedDevice{
		"node-usb-to-vmi-storage": {USB: []domain.USBDevice{{Bus: 3, Device: 7, Vendor: "46f4", Product: "0001"}, {Bus: 3, Device: 9, Vendor: "1B1C", Product: "1a0a"}}},
	}},
	"launchsecurity-sev-es": {Type: domain.TypeKVM, LaunchSecurity: domain.LaunchSecurity{SEV: true, SEVES: true, CBitPos: 51, ReducedPhysBits: 1}},
	"launchsecurity-snp":    {Type: domain.TypeKVM, LaunchSecurity: domain.LaunchSecurity{SEV: true, SEVES: true, SNP: true}},
	"launchsecurity-tdx":    {Type: domain.TypeKVM, LaunchSecurity: domain.LaunchSecurity{TDX: true}},
}

// schemaPredates are the golden cases whose XML the schema of the
// libvirt the tests run with (Debian 12's) cannot know.
var schemaPredates = map[string]string{
	"launchsecurity-tdx": "Intel TDX launch security came to libvirt after the schema the tests use",
}

func decodeVMI(t testing.TB, path string) *virtkit.VirtualMachineInstance {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	objs, err := virtkit.DecodeBytes(data)
	require.NoError(t, err)
	require.Len(t, objs, 1)
	vmi, ok := objs[0].(*virtkit.VirtualMachineInstance)
	require.True(t, ok, "%s holds a %T", path, objs[0])
	return vmi
}

// validateXML runs libvirt's own schema check over one document.
func validateXML(t *testing.T, doc string) {
	t.Helper()
	tool := testenv.LookTool(t, "virt-xml-validate", "Debian libvirt-clients and libxml2-utils")
	f := filepath.Join(t.TempDir(), "domain.xml")
	require.NoError(t, os.WriteFile(f, []byte(doc), 0o644))
	out, err := exec.Command(tool, f, "domain").CombinedOutput()
	require.NoError(t, err, "virt-xml-validate rejected the document:\n%s\n%s", out, doc)
}

func TestBuildGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/vmi/*.yaml")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(inputs), 15)
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".yaml")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			vmi := decodeVMI(t, in)
			dom, err := domain.Build(vmi, goldenOptions[name])
			require.NoError(t, err)
			doc, err := dom.Marshal()
			require.NoError(t, err)
			doc += "\n"

			golden := filepath.Join("testdata", "golden", name+".xml")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
				require.NoError(t, os.WriteFile(golden, []byte(doc), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test ./domain -update to create it")
			assert.Equal(t, string(want), doc)

			// Round trip: libvirtxml reads back exactly what it wrote.
			var back libvirtxml.Domain
			require.NoError(t, back.Unmarshal(doc))
			again, err := back.Marshal()
			require.NoError(t, err)
			assert.Equal(t, doc, again+"\n")

			if why, skip := schemaPredates[name]; skip {
				t.Logf("not checked against libvirt's schema: %s", why)
				return
			}
			validateXML(t, doc)
		})
	}
}

func TestBuildDeterministic(t *testing.T) {
	for _, in := range []string{"testdata/vmi/disks.yaml", "testdata/vmi/windows.yaml", "testdata/vmi/cloudinit.yaml"} {
		vmi := decodeVMI(t, in)
		a, err := domain.BuildXML(vmi, domain.Options{HostPaths: disksHostPaths})
		require.NoError(t, err)
		b, err := domain.BuildXML(vmi.DeepCopy(), domain.Options{HostPaths: disksHostPaths})
		require.NoError(t, err)
		assert.Equal(t, a, b, in)
	}
}

func TestBuildMapping(t *testing.T) {
	vmi := decodeVMI(t, "testdata/vmi/disks.yaml")
	dom, err := domain.Build(vmi, domain.Options{HostPaths: disksHostPaths})
	require.NoError(t, err)
	targets := map[string]string{}
	for _, d := range dom.Devices.Disks {
		targets[strings.TrimPrefix(d.Alias.Name, "ua-")] = d.Target.Dev
	}
	assert.Equal(t, map[string]string{
		"boot": "vda", "data-sata": "sda", "data-scsi": "sdb", "lun0": "sdc", "usbstick": "sdd",
		"installer": "sde", "shared": "vdb", "iso-rw": "sdf", "fast": "vdc",
	}, targets)
	assert.Equal(t, "default_minimal", domain.DomainName(decodeVMI(t, "testdata/vmi/minimal.yaml")))
}

func TestBuildErrors(t *testing.T) {
	base := func() *virtkit.VirtualMachineInstance {
		return decodeVMI(t, "testdata/vmi/minimal.yaml")
	}
	for _, tc := range []struct {
		name   string
		mutate func(*virtkit.VirtualMachineInstance)
		opts   domain.Options
		is     error
		path   string
	}{
		{"bad domain type", func(*virtkit.VirtualMachineInstance) {}, domain.Options{Type: "xen"}, nil, "Options.Type"},
		{"no memory", func(v *virtkit.VirtualMachineInstance) { v.Spec.Domain.Memory = nil }, domain.Options{}, nil, "spec.domain.memory.guest"},
		{"missing volume", func(v *virtkit.VirtualMachineInstance) { v.Spec.Volumes = nil }, domain.Options{}, nil, "spec.domain.devices.disks[0].name"},
		{"cdrom on virtio", func(v *virtkit.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks[0].Disk = nil
			v.Spec.Domain.Devices.Disks[0].CDRom = &virtkit.CDRomTarget{Bus: virtkit.DiskBusVirtio}
		}, domain.Options{}, nil, "spec.domain.devices.disks[0].cdrom.bus"},
		{"ide bus", func(v *virtkit.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks[0].Disk.Bus = virtkit.DiskBusIDE
		}, domain.Options{}, domain.ErrUnsupported, "spec.domain.devices.disks[0].disk.bus"},
		{"lun reservation", func(v *virtkit.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks[0].Disk = nil
			v.Spec.Domain.Devices.Disks[0].LUN = &virtkit.LunTarget{Bus: virtkit.DiskBusSCSI, Reservation: true}
		}, domain.Options{}, domain.ErrUnsupported, "spec.domain.devices.disks[0].lun.reservation"},
		{"cloud-init secret", func(v *virtkit.VirtualMachineInstance) {
			v.Spec.Volumes[0].ContainerDisk = nil
			v.Spec.Volumes[0].CloudInitNoCloud = &virtkit.CloudInitNoCloudSource{UserDataSecretRef: &virtkit.LocalObjectReference{Name: "s"}}
		}, domain.Options{}, domain.ErrUnsupported, "spec.volumes[0].cloudInitNoCloud.secretRef"},
		{"bad base64", func(v *virtkit.VirtualMachineInstance) {
			v.Spec.Volumes[0].ContainerDisk = nil
			v.Spec.Volumes[0].CloudInitConfigDrive = &virtkit.CloudInitConfigDriveSource{UserDataBase64: "!!"}
		}, domain.Options{}, nil, "spec.volumes[0].cloudInitConfigDrive.userDataBase64"},
		{"two sources", func(v *virtkit.VirtualMachineInstance) {
			v.Spec.Volumes[0].EmptyDisk = &virtkit.EmptyDiskSource{}
		}, domain.Options{}, nil, "spec.volumes[0]"},
		{"multus without attachment", func(v *virtkit.VirtualMachineInstance) {
			v.Spec.Networks = []virtkit.Network{{Name: "n", NetworkSource: virtkit.NetworkSource{Multus: &virtkit.MultusNetwork{NetworkName: "x"}}}}
			v.Spec.Domain.Devices.Interfaces = []virtkit.Interface{{Name: "n", InterfaceBindingMethod: virtkit.InterfaceBindingMethod{Bridge: &virtkit.InterfaceBridge{}}}}
		}, domain.Options{}, domain.ErrNotResolved, "spec.domain.devices.interfaces[0]"},
		{"sriov without device", func(v *virtkit.VirtualMachineInstance) {
			v.Spec.Networks = []virtkit.Network{{Name: "n", NetworkSource: virtkit.NetworkSource{Multus: &virtkit.MultusNetwork{NetworkName: "x"}}}}
			v.Spec.Domain.Devices.Interfaces = []virtkit.Interface{{Name: "n", InterfaceBindingMethod: virtkit.InterfaceBindingMethod{SRIOV: &virtkit.InterfaceSRIOV{}}}}
		}, domain.Options{NetworkResolver: &domain.NetResolver{Multus: map[string]domain.HostNetwork{"x": {Type: domain.AttachBridge, Source: "br0"}}}},
			domain.ErrNotResolved, "spec.domain.devices.interfaces[0]"},
		{"slirp", func(v *virtkit.VirtualMachineInstance) {
			v.Spec.Networks = []virtkit.Network{{Name: "n", NetworkSource: virtkit.NetworkSource{Pod: &virtkit.PodNetwork{}}}}
			v.Spec.Domain.Devices.Interfaces = []virtkit.Interface{{Name: "n", InterfaceBindingMethod: virtkit.InterfaceBindingMethod{Slirp: &virtkit.DeprecatedBinding{}}}}
		}, domain.Options{}, domain.ErrUnsupported, "spec.domain.devices.interfaces[0].slirp"},
		{"multiqueue on user networking", func(v *virtkit.VirtualMachineInstance) {
			v.Spec.Domain.CPU = &virtkit.CPU{Cores: 2}
			v.Spec.Domain.Devices.NetworkInterfaceMultiQueue = ptr(true)
			v.Spec.Networks = []virtkit.Network{{Name: "n", NetworkSource: virtkit.NetworkSource{Pod: &virtkit.PodNetwork{}}}}
			v.Spec.Domain.Devices.Interfaces = []virtkit.Interface{{Name: "n", InterfaceBindingMethod: virtkit.InterfaceBindingMethod{Masquerade: &virtkit.InterfaceMasquerade{}}}}
		}, domain.Options{}, domain.ErrUnsupported, "spec.domain.devices.networkInterfaceMultiqueue"},
		{"bad mac", func(v *virtkit.VirtualMachineInstance) {
			v.Spec.Networks = []virtkit.Network{{Name: "n", NetworkSource: virtkit.NetworkSource{Pod: &virtkit.PodNetwork{}}}}
			v.Spec.Domain.Devices.Interfaces = []virtkit.Interface{{Name: "n", MacAddress: "01:00:5e:00:00:01", InterfaceBindingMethod: virtkit.InterfaceBindingMethod{Masquerade: &virtkit.InterfaceMasquerade{}}}}
		}, domain.Options{}, nil, "spec.domain.devices.interfaces[0].macAddress"},
		{"secure boot without smm", func(v *virtkit.VirtualMachineInstance) {
			v.Spec.Domain.Firmware.Bootloader = &virtkit.Bootloader{EFI: &virtkit.EFI{}}
		}, domain.Options{}, nil, "spec.domain.firmware.bootloader.efi.secureBoot"},
		{"persistent efi", func(v *virtkit.VirtualMachineInstance) {
			v.Spec.Domain.Firmware.Bootloader = &virtkit.Bootloader{EFI: &virtkit.EFI{SecureBoot: ptr(false), Persistent: ptr(true)}}
		}, domain.Options{}, domain.ErrUnsupported, "spec.domain.firmware.bootloader.efi.persistent"},
		{"dedicated cpus missing", func(v *virtkit.VirtualMachineInstance) {
			v.Spec.Domain.CPU = &virtkit.CPU{DedicatedCPUPlacement: true}
		}, domain.Options{}, domain.ErrNotResolved, "spec.domain.cpu.dedicatedCpuPlacement"},
		{"vcpu count wraps", func(v *virtkit.VirtualMachineInstance) {
			v.Spec.Domain.CPU = &virtkit.CPU{Sockets: 2097152, Cores: 4194304, Threads: 2097152}
		}, domain.Options{}, nil, "spec.domain.cpu"},
		{"vcpu count too large with hotplug room", func(v *virtkit.VirtualMachineInstance) {
			v.Spec.Domain.CPU = &virtkit.CPU{Sockets: 1, Cores: 64, Threads: 2, MaxSockets: 65535}
			v.Spec.Domain.Memory.MaxGuest = v.Spec.Domain.Memory.Guest
		}, domain.Options{}, nil, "spec.domain.cpu"},
		{"bad uuid", func(v *virtkit.VirtualMachineInstance) { v.Spec.Domain.Firmware.UUID = "nope" }, domain.Options{}, nil, "spec.domain.firmware.uuid"},
		{"kernel boot without container", func(v *virtkit.VirtualMachineInstance) {
			v.Spec.Domain.Firmware.KernelBoot = &virtkit.KernelBoot{KernelArgs: "console=ttyS0"}
		}, domain.Options{}, nil, "spec.domain.firmware.kernelBoot.container"},
		{"native io without cache none", func(v *virtkit.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks[0].IO = virtkit.IONative
			v.Spec.Domain.Devices.Disks[0].Cache = virtkit.CacheWriteBack
		}, domain.Options{}, nil, "spec.domain.devices.disks[0].io"},
		{"hyperv spinlocks too low", func(v *virtkit.VirtualMachineInstance) {
			v.Spec.Domain.Features = &virtkit.Features{Hyperv: &virtkit.FeatureHyperv{Spinlocks: &virtkit.FeatureSpinlocks{Retries: ptr(uint32(10))}}}
		}, domain.Options{}, nil, "spec.domain.features.hyperv.spinlocks.spinlocks"},
		{"tlbflush direct", func(v *virtkit.VirtualMachineInstance) {
			v.Spec.Domain.Features = &virtkit.Features{Hyperv: &virtkit.FeatureHyperv{TLBFlush: &virtkit.TLBFlush{Direct: &virtkit.FeatureState{}}}}
		}, domain.Options{}, domain.ErrUnsupported, "spec.domain.features.hyperv.tlbflush.direct"},
		{"duplicate boot order", func(v *virtkit.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks[0].BootOrder = ptr(uint(1))
			v.Spec.Networks = []virtkit.Network{{Name: "n", NetworkSource: virtkit.NetworkSource{Pod: &virtkit.PodNetwork{}}}}
			v.Spec.Domain.Devices.Interfaces = []virtkit.Interface{{Name: "n", BootOrder: ptr(uint(1)), InterfaceBindingMethod: virtkit.InterfaceBindingMethod{Masquerade: &virtkit.InterfaceMasquerade{}}}}
		}, domain.Options{}, nil, "spec.domain.devices.interfaces[0].bootOrder"},
		{"user network prefix", func(v *virtkit.VirtualMachineInstance) {
			v.Spec.Networks = []virtkit.Network{{Name: "n", NetworkSource: virtkit.NetworkSource{Pod: &virtkit.PodNetwork{VMNetworkCIDR: "10.0.0.0/30"}}}}
			v.Spec.Domain.Devices.Interfaces = []virtkit.Interface{{Name: "n", InterfaceBindingMethod: virtkit.InterfaceBindingMethod{Masquerade: &virtkit.InterfaceMasquerade{}}}}
		}, domain.Options{}, domain.ErrUnsupported, "spec.networks[0].pod.vmNetworkCIDR"},
		{"user network ipv6 prefix", func(v *virtkit.VirtualMachineInstance) {
			v.Spec.Networks = []virtkit.Network{{Name: "n", NetworkSource: virtkit.NetworkSource{Pod: &virtkit.PodNetwork{VMIPv6NetworkCIDR: virtkit.DefaultVMIPv6NetworkCIDR}}}}
			v.Spec.Domain.Devices.Interfaces = []virtkit.Interface{{Name: "n", InterfaceBindingMethod: virtkit.InterfaceBindingMethod{Masquerade: &virtkit.InterfaceMasquerade{}}}}
		}, domain.Options{}, domain.ErrUnsupported, "spec.networks[0].pod.vmIPv6NetworkCIDR"},
		{"resolver failure", func(*virtkit.VirtualMachineInstance) {}, domain.Options{
			VolumeResolver: domain.VolumeResolverFunc(func(_ context.Context, req domain.VolumeRequest) (domain.HostVolume, error) {
				return domain.HostVolume{}, fmt.Errorf("image %s not pulled: %w", req.Image, domain.ErrNotResolved)
			}),
		}, domain.ErrNotResolved, "spec.volumes[0].containerDisk"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := base()
			tc.mutate(vmi)
			_, err := domain.Build(vmi, tc.opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.path+": ")
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestMutators(t *testing.T) {
	vmi := decodeVMI(t, "testdata/vmi/minimal.yaml")
	var order []int
	opts := domain.Options{Mutators: []domain.Mutator{
		func(v *virtkit.VirtualMachineInstance, d *libvirtxml.Domain) error {
			order = append(order, 1)
			d.Description = "hooked " + v.Name
			return nil
		},
		func(_ *virtkit.VirtualMachineInstance, d *libvirtxml.Domain) error {
			order = append(order, 2)
			d.Description += "!"
			return nil
		},
	}}
	dom, err := domain.Build(vmi, opts)
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2}, order)
	assert.Equal(t, "hooked minimal!", dom.Description)

	boom := errors.New("boom")
	opts.Mutators = append(opts.Mutators, func(*virtkit.VirtualMachineInstance, *libvirtxml.Domain) error { return boom })
	_, err = domain.Build(vmi, opts)
	assert.ErrorIs(t, err, boom)
	assert.ErrorContains(t, err, "mutator 2")
}

func TestMakeRuntimeDir(t *testing.T) {
	vmi := decodeVMI(t, "testdata/vmi/minimal.yaml")
	opts := domain.Options{RuntimeDir: t.TempDir()}
	dir, err := domain.MakeRuntimeDir(vmi, opts, -1, -1)
	require.NoError(t, err)
	assert.Equal(t, domain.RuntimeDir(vmi, opts), dir)
	assert.Equal(t, filepath.Join(dir, "qga.sock"), domain.GuestAgentSocket(vmi, opts))
	st, err := os.Stat(dir)
	require.NoError(t, err)
	assert.True(t, st.IsDir())
	assert.Equal(t, os.FileMode(0o750), st.Mode().Perm())
}

func TestBuildMetadataNode(t *testing.T) {
	vmi := decodeVMI(t, "testdata/vmi/minimal.yaml")
	for _, tc := range []struct {
		name, node, want string
	}{
		{"without a node name the element is left out", "", ""},
		{"the node name is written", "node-a", "<node>node-a</node>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dom, err := domain.Build(vmi, domain.Options{NodeName: tc.node})
			require.NoError(t, err)
			require.NotNil(t, dom.Metadata)
			if tc.want == "" {
				assert.NotContains(t, dom.Metadata.XML, "<node>")
				return
			}
			assert.Contains(t, dom.Metadata.XML, tc.want)
		})
	}
}
