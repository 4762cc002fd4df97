package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
)

func TestVolumeUpdateStrategyRestartRequired(t *testing.T) {
	strategy := func(s virtkit.UpdateVolumesStrategy) *virtkit.UpdateVolumesStrategy { return &s }
	for _, tc := range []struct {
		name       string
		strategy   *virtkit.UpdateVolumesStrategy
		wantReason string
		wantInMsg  string
	}{
		{"unset: a restart applies the new claim", nil, "NotLiveUpdatable", "template spec"},
		{"Replacement", strategy(virtkit.UpdateVolumesStrategyReplacement), "NotLiveUpdatable", "template spec"},
		{"an unknown strategy", strategy("Mirror"), VolumeMigrationNotSupportedReason, "spec.updateVolumesStrategy: updateVolumes strategy not recognized: Mirror"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 1)
			vm := newVM("vm", virtkit.RunStrategyAlways)
			vm.Spec.UpdateVolumesStrategy = tc.strategy
			spec := &vm.Spec.Template.Spec
			spec.Domain.Devices.Disks = append(spec.Domain.Devices.Disks, virtkit.Disk{Name: "root"}, virtkit.Disk{Name: "data"})
			spec.Volumes = append(spec.Volumes, virtkit.Volume{Name: "root", VolumeSource: virtkit.VolumeSource{
				ContainerDisk: &virtkit.ContainerDiskSource{Image: "quay.io/containerdisks/fedora:40"}}})
			spec.Volumes = append(spec.Volumes, virtkit.Volume{Name: "data", VolumeSource: virtkit.VolumeSource{
				PersistentVolumeClaim: &virtkit.PersistentVolumeClaimVolumeSource{ClaimName: "old"}}})
			require.Len(t, spec.Volumes, 2, "the test names spec.template.spec.volumes[1]")
			require.NoError(t, e.st.Create(e.ctx, vm))
			e.settle()
			require.NotNil(t, e.getVMI("vm"))

			vm = e.getVM("vm")
			vm.Spec.Template.Spec.Volumes[1].PersistentVolumeClaim.ClaimName = "new"
			require.NoError(t, e.st.Update(e.ctx, vm))
			e.settle()
			c := virtkit.GetCondition(e.getVM("vm").Status.Conditions, virtkit.VirtualMachineRestartRequired)
			require.NotNil(t, c)
			assert.Equal(t, virtkit.ConditionTrue, c.Status)
			assert.Equal(t, tc.wantReason, c.Reason)
			assert.Contains(t, c.Message, tc.wantInMsg)
			assert.Equal(t, "old", e.getVMI("vm").Spec.Volumes[1].PersistentVolumeClaim.ClaimName,
				"the running VMI keeps its volume")
		})
	}
}
