package domain_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
)

func hostVMI(t *testing.T, domainYAML string) *virtkit.VirtualMachineInstance {
	t.Helper()
	doc := `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: host, namespace: default}
spec:
  domain:
` + domainYAML + `
  volumes:
  - {name: a, containerDisk: {image: quay.io/x/a}}
  - {name: b, containerDisk: {image: quay.io/x/b}}
  - {name: c, containerDisk: {image: quay.io/x/c}}
`
	objs, err := virtkit.DecodeBytes([]byte(doc))
	require.NoError(t, err)
	vmi := objs[0].(*virtkit.VirtualMachineInstance)
	virtkit.SetDefaults(vmi)
	require.Empty(t, virtkit.Validate(vmi))
	return vmi
}

const threeVirtioDisks = `      disks:
      - {name: a, disk: {bus: virtio}}
      - {name: b, disk: {bus: virtio}}
      - {name: c, disk: {bus: virtio}, dedicatedIOThread: true}
`

// IO threads are numbered as KubeVirt's converter numbers them, for each
// policy.
func TestBuildIOThreadPolicies(t *testing.T) {
	for _, tc := range []struct {
		name, policy string
		count        uint
		threads      []uint // per disk; 0 = the pool
	}{
		{"no policy: dedicated disk first, others share 1", "", 2, []uint{1, 1, 2}},
		{"shared", "ioThreadsPolicy: shared", 2, []uint{1, 1, 2}},
		{"auto: two per requested vCPU", "ioThreadsPolicy: auto", 3, []uint{1, 2, 3}},
		{"supplementalPool", "ioThreadsPolicy: supplementalPool\n    ioThreads: {supplementalPoolThreadCount: 4}", 4, []uint{0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := hostVMI(t, "    "+tc.policy+"\n    resources: {requests: {cpu: \"2\"}}\n    memory: {guest: 1Gi}\n    devices:\n"+threeVirtioDisks)
			dom, err := domain.Build(vmi, domain.Options{})
			require.NoError(t, err)
			assert.Equal(t, tc.count, dom.IOThreads)
			require.Len(t, dom.Devices.Disks, 3)
			for i, want := range tc.threads {
				drv := dom.Devices.Disks[i].Driver
				if want == 0 {
					require.NotNil(t, drv.IOThreads, "disk %d", i)
					assert.Len(t, drv.IOThreads.IOThread, int(tc.count))
					continue
				}
				require.NotNil(t, drv.IOThread, "disk %d", i)
				assert.Equal(t, want, *drv.IOThread, "disk %d", i)
			}
		})
	}
}

// Panic and sound devices, custom block sizes and realtime vCPUs are
// written as libvirt has them.
func TestBuildHostDependentDevices(t *testing.T) {
	vmi := hostVMI(t, `    cpu:
      cores: 2
      dedicatedCpuPlacement: true
      realtime: {}
      numa: {guestMappingPassthrough: {}}
    memory: {guest: 1Gi, hugepages: {pageSize: 2Mi}}
    devices:
      disks:
      - {name: a, disk: {bus: virtio}, blockSize: {custom: {logical: 512, physical: 4096}}}
      panicDevices: [{model: pvpanic}, {}]
      sound: {name: audio}
`)
	_, err := domain.Build(vmi, domain.Options{DedicatedCPUs: []uint{2, 3}})
	require.ErrorIs(t, err, domain.ErrUnsupported, "guest NUMA passthrough")
	assert.Contains(t, err.Error(), "spec.domain.cpu.numa.guestMappingPassthrough")

	vmi.Spec.Domain.CPU.NUMA = nil // what the builder can do, alone
	dom, err := domain.Build(vmi, domain.Options{DedicatedCPUs: []uint{2, 3}})
	require.NoError(t, err)
	assert.Equal(t, []libvirtxml.DomainPanic{{Model: "pvpanic"}, {}}, stripPanics(dom.Devices.Panics))
	require.Len(t, dom.Devices.Sounds, 1)
	assert.Equal(t, "ich9", dom.Devices.Sounds[0].Model)
	assert.Equal(t, "ua-audio", dom.Devices.Sounds[0].Alias.Name)
	require.NotNil(t, dom.Devices.Disks[0].BlockIO)
	assert.Equal(t, uint(4096), dom.Devices.Disks[0].BlockIO.PhysicalBlockSize)
	require.Len(t, dom.CPUTune.VCPUSched, 1)
	assert.Equal(t, "0-1", dom.CPUTune.VCPUSched[0].VCPUs)
	assert.Equal(t, "fifo", dom.CPUTune.VCPUSched[0].Scheduler)
	assert.Equal(t, "off", dom.Features.PMU.State)
	assert.NotNil(t, dom.MemoryBacking.MemoryNosharepages)
	doc, err := dom.Marshal()
	require.NoError(t, err)
	validateXML(t, doc)
}

func stripPanics(ps []libvirtxml.DomainPanic) []libvirtxml.DomainPanic {
	out := make([]libvirtxml.DomainPanic, len(ps))
	for i, p := range ps {
		out[i] = libvirtxml.DomainPanic{Model: p.Model}
	}
	return out
}

// What a node without host devices, confidential computing or a volume
// probe cannot give is refused with the field's path.
func TestBuildRefusesHostOnly(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, path string
	}{
		{"gpus without assignment", "    memory: {guest: 1Gi}\n    devices:\n      gpus: [{name: g, deviceName: nvidia.com/GA102}]", "spec.domain.devices.gpus[0]"},
		{"hostDevices without assignment", "    memory: {guest: 1Gi}\n    devices:\n      hostDevices: [{name: h, deviceName: intel.com/qat}]", "spec.domain.devices.hostDevices[0]"},
		{"gpu from a claim", "    memory: {guest: 1Gi}\n    devices:\n      gpus: [{name: g, claimName: c, requestName: r}]", "spec.domain.devices.gpus[0].claimName"},
		{"launchSecurity", "    memory: {guest: 1Gi}\n    launchSecurity: {sev: {}}\n    features: {smm: {enabled: false}}\n    firmware: {bootloader: {efi: {secureBoot: false}}}\n    devices: {}", "spec.domain.launchSecurity"},
		{"blockSize matchVolume", "    memory: {guest: 1Gi}\n    devices:\n      disks:\n      - {name: a, blockSize: {matchVolume: {}}}", "spec.domain.devices.disks[0].blockSize.matchVolume"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := domain.Build(hostVMI(t, tc.yaml), domain.Options{})
			require.ErrorIs(t, err, domain.ErrUnsupported)
			assert.Contains(t, err.Error(), tc.path)
		})
	}
}

// A confidential VMI the node's platform cannot run is refused naming
// the field of the kind it lacks.
func TestBuildLaunchSecurityRefusals(t *testing.T) {
	const efi = "    features: {smm: {enabled: false}}\n    firmware: {bootloader: {efi: {secureBoot: false}}}\n    memory: {guest: 1Gi}\n    devices: {}\n"
	all := domain.LaunchSecurity{SEV: true, SEVES: true, SNP: true, TDX: true}
	for _, tc := range []struct {
		name, ls string
		caps     domain.LaunchSecurity
		path     string
	}{
		{"no SEV", "{sev: {}}", domain.LaunchSecurity{SNP: true, TDX: true}, "spec.domain.launchSecurity.sev"},
		{"no SEV-ES", "{sev: {policy: {encryptedState: true}}}", domain.LaunchSecurity{SEV: true}, "spec.domain.launchSecurity.sev.policy.encryptedState"},
		{"no SNP", "{snp: {}}", domain.LaunchSecurity{SEV: true, SEVES: true, TDX: true}, "spec.domain.launchSecurity.snp"},
		{"no TDX", "{tdx: {}}", domain.LaunchSecurity{SEV: true, SNP: true}, "spec.domain.launchSecurity.tdx"},
		{"session blob", "{sev: {session: AAAA}}", all, "spec.domain.launchSecurity.sev.session"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := domain.Build(hostVMI(t, "    launchSecurity: "+tc.ls+"\n"+efi), domain.Options{LaunchSecurity: tc.caps})
			require.ErrorIs(t, err, domain.ErrUnsupported)
			assert.Contains(t, err.Error(), tc.path+":")
		})
	}
	t.Run("attestation", func(t *testing.T) {
		vmi := hostVMI(t, "    launchSecurity: {sev: {}}\n"+efi)
		vmi.Spec.Domain.LaunchSecurity.SEV.Attestation = &virtkit.SEVAttestation{}
		_, err := domain.Build(vmi, domain.Options{LaunchSecurity: all})
		require.ErrorIs(t, err, domain.ErrUnsupported)
		assert.Contains(t, err.Error(), "spec.domain.launchSecurity.sev.attestation:")
	})
	t.Run("offered", func(t *testing.T) {
		dom, err := domain.Build(hostVMI(t, "    launchSecurity: {sev: {}}\n"+efi), domain.Options{LaunchSecurity: all})
		require.NoError(t, err)
		require.NotNil(t, dom.LaunchSecurity)
		require.NotNil(t, dom.LaunchSecurity.SEV)
		assert.Equal(t, uint(1), *dom.LaunchSecurity.SEV.Policy, "no debugging, no encrypted state")
		assert.Nil(t, dom.LaunchSecurity.SEV.CBitPos, "unknown to the node: libvirt fills it in")
	})
}
