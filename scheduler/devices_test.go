package scheduler

import (
	"context"
	"testing"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/virtkit/virtkit"
)

const t4 = "nvidia.com/TU104GL_Tesla_T4"

func withDevices(r string, n int64) nodeOpt {
	return func(nd *virtkit.Node) {
		nd.Status.Allocatable[virtkit.ResourceName(r)] = *resource.NewQuantity(n, resource.DecimalSI)
	}
}

func gpus(names ...string) vmiOpt {
	return func(v *virtkit.VirtualMachineInstance) {
		for i, n := range names {
			v.Spec.Domain.Devices.GPUs = append(v.Spec.Domain.Devices.GPUs, virtkit.GPU{Name: string(rune('a' + i)), DeviceName: n})
		}
	}
}

func hostDevice(name string) vmiOpt {
	return func(v *virtkit.VirtualMachineInstance) {
		v.Spec.Domain.Devices.HostDevices = append(v.Spec.Domain.Devices.HostDevices, virtkit.HostDevice{Name: "h", DeviceName: name})
	}
}

func TestDeviceRequests(t *testing.T) {
	claim := "c"
	v := mkVMI("v", "", "", gpus(t4, t4), hostDevice("intel.com/qat"))
	v.Spec.Domain.Devices.GPUs = append(v.Spec.Domain.Devices.GPUs, virtkit.GPU{Name: "dra", ClaimName: &claim})
	assert.Equal(t, map[virtkit.ResourceName]int64{t4: 2, "intel.com/qat": 1}, DeviceRequests(v))
	assert.Nil(t, DeviceRequests(mkVMI("plain", "", "")))
}

func TestScheduleDevices(t *testing.T) {
	for _, tc := range []struct {
		name   string
		nodes  []virtkit.Node
		placed []*virtkit.VirtualMachineInstance
		vmi    *virtkit.VirtualMachineInstance
		want   string // "" = unschedulable
		reason string
	}{
		{
			name:  "only the node with the device",
			nodes: []virtkit.Node{mkNode("a", "8", "32Gi"), mkNode("b", "8", "32Gi", withDevices(t4, 1))},
			vmi:   mkVMI("v", "1", "1Gi", gpus(t4)),
			want:  "b",
		},
		{
			name:   "no node has it",
			nodes:  []virtkit.Node{mkNode("a", "8", "32Gi"), mkNode("b", "8", "32Gi")},
			vmi:    mkVMI("v", "1", "1Gi", gpus(t4)),
			reason: "0/2 nodes are available: 2 Insufficient " + t4 + ".",
		},
		{
			name:   "the one device is held",
			nodes:  []virtkit.Node{mkNode("b", "8", "32Gi", withDevices(t4, 1))},
			placed: []*virtkit.VirtualMachineInstance{mkVMI("holder", "1", "1Gi", gpus(t4), on("b"))},
			vmi:    mkVMI("v", "1", "1Gi", gpus(t4)),
			reason: "0/1 nodes are available: 1 Insufficient " + t4 + ".",
		},
		{
			name:   "a finished VMI holds nothing",
			nodes:  []virtkit.Node{mkNode("b", "8", "32Gi", withDevices(t4, 1))},
			placed: []*virtkit.VirtualMachineInstance{mkVMI("done", "1", "1Gi", gpus(t4), on("b"), phase(virtkit.Succeeded))},
			vmi:    mkVMI("v", "1", "1Gi", gpus(t4)),
			want:   "b",
		},
		{
			name:   "two of them, one free",
			nodes:  []virtkit.Node{mkNode("b", "8", "32Gi", withDevices(t4, 2))},
			placed: []*virtkit.VirtualMachineInstance{mkVMI("holder", "1", "1Gi", gpus(t4), on("b"))},
			vmi:    mkVMI("v", "1", "1Gi", gpus(t4, t4)),
			reason: "0/1 nodes are available: 1 Insufficient " + t4 + ".",
		},
		{
			name:  "gpu and host device, each missing somewhere",
			nodes: []virtkit.Node{mkNode("a", "8", "32Gi", withDevices(t4, 1)), mkNode("b", "8", "32Gi", withDevices("intel.com/qat", 4)), mkNode("c", "8", "32Gi", withDevices(t4, 1), withDevices("intel.com/qat", 1))},
			vmi:   mkVMI("v", "1", "1Gi", gpus(t4), hostDevice("intel.com/qat")),
			want:  "c",
		},
		{
			name:   "both missing",
			nodes:  []virtkit.Node{mkNode("a", "8", "32Gi")},
			vmi:    mkVMI("v", "1", "1Gi", gpus(t4), hostDevice("intel.com/qat")),
			reason: "0/1 nodes are available: 1 Insufficient intel.com/qat, 1 Insufficient " + t4 + ".",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := New(Options{Clock: testingclock.NewFakePassiveClock(now)})
			got, err := f.Schedule(context.Background(), tc.vmi, tc.nodes, tc.placed)
			// The incremental state decides the same.
			p := f.NewPlacements()
			for _, v := range tc.placed {
				p.Observe(v)
			}
			got2, err2 := p.Schedule(context.Background(), tc.vmi, tc.nodes)
			assert.Equal(t, got, got2)
			if tc.want != "" {
				require.NoError(t, err)
				require.NoError(t, err2)
				assert.Equal(t, tc.want, got)
				return
			}
			require.ErrorIs(t, err, ErrUnschedulable)
			require.ErrorIs(t, err2, ErrUnschedulable)
			assert.Equal(t, tc.reason, err.Error())
		})
	}
}

// The incremental state counts a device as held from the decision on and
// free again once its VMI is forgotten.
func TestPlacementsCountDevices(t *testing.T) {
	f := New(Options{Clock: testingclock.NewFakePassiveClock(now)})
	p := f.NewPlacements()
	nodes := []virtkit.Node{mkNode("b", "8", "32Gi", withDevices(t4, 1))}
	ctx := context.Background()
	got, err := p.Schedule(ctx, mkVMI("first", "1", "1Gi", gpus(t4)), nodes)
	require.NoError(t, err)
	assert.Equal(t, "b", got)
	_, err = p.Schedule(ctx, mkVMI("second", "1", "1Gi", gpus(t4)), nodes)
	require.ErrorIs(t, err, ErrUnschedulable)
	p.Forget("default", "first")
	got, err = p.Schedule(ctx, mkVMI("second", "1", "1Gi", gpus(t4)), nodes)
	require.NoError(t, err)
	assert.Equal(t, "b", got)
}

func TestScheduleLaunchSecurity(t *testing.T) {
	yes := true
	sev := func(es bool) vmiOpt {
		return func(v *virtkit.VirtualMachineInstance) {
			v.Spec.Domain.LaunchSecurity = &virtkit.LaunchSecurity{SEV: &virtkit.SEV{}}
			if es {
				v.Spec.Domain.LaunchSecurity.SEV.Policy = &virtkit.SEVPolicy{EncryptedState: &yes}
			}
		}
	}
	snp := func(v *virtkit.VirtualMachineInstance) {
		v.Spec.Domain.LaunchSecurity = &virtkit.LaunchSecurity{SNP: &virtkit.SEVSNP{}}
	}
	tdx := func(v *virtkit.VirtualMachineInstance) {
		v.Spec.Domain.LaunchSecurity = &virtkit.LaunchSecurity{TDX: &virtkit.TDXGuest{}}
	}
	for _, tc := range []struct {
		name   string
		nodes  []virtkit.Node
		vmi    *virtkit.VirtualMachineInstance
		want   string
		reason string
	}{
		{"sev on the sev node", []virtkit.Node{mkNode("a", "8", "32Gi"), mkNode("b", "8", "32Gi", withLabel(LabelSEV, ""))}, mkVMI("v", "1", "1Gi", sev(false)), "b", ""},
		{"sev nowhere", []virtkit.Node{mkNode("a", "8", "32Gi")}, mkVMI("v", "1", "1Gi", sev(false)), "", "spec.domain.launchSecurity.sev"},
		{"sev-es needs its own label", []virtkit.Node{mkNode("b", "8", "32Gi", withLabel(LabelSEV, ""))}, mkVMI("v", "1", "1Gi", sev(true)), "", "spec.domain.launchSecurity.sev.policy.encryptedState"},
		{"sev-es", []virtkit.Node{mkNode("b", "8", "32Gi", withLabel(LabelSEV, ""), withLabel(LabelSEVES, ""))}, mkVMI("v", "1", "1Gi", sev(true)), "b", ""},
		{"snp", []virtkit.Node{mkNode("a", "8", "32Gi", withLabel(LabelSEV, "")), mkNode("c", "8", "32Gi", withLabel(LabelSEVSNP, "true"))}, mkVMI("v", "1", "1Gi", snp), "c", ""},
		{"tdx nowhere", []virtkit.Node{mkNode("a", "8", "32Gi", withLabel(LabelSEVSNP, ""))}, mkVMI("v", "1", "1Gi", tdx), "", "spec.domain.launchSecurity.tdx"},
		{"no launch security anywhere is fine", []virtkit.Node{mkNode("a", "8", "32Gi")}, mkVMI("v", "1", "1Gi"), "a", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := New(Options{Clock: testingclock.NewFakePassiveClock(now)}).Schedule(context.Background(), tc.vmi, tc.nodes, nil)
			if tc.want != "" {
				require.NoError(t, err)
				assert.Equal(t, tc.want, got)
				return
			}
			require.ErrorIs(t, err, ErrUnschedulable)
			assert.Contains(t, err.Error(), "didn't offer "+tc.reason+" (label")
		})
	}
}
