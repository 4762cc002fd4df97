package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
)

// cpuLabels are the labels a node agent publishes for a host CPU.
func cpuLabels(hostModel, vendor, signature string, usable ...string) map[string]string {
	l := map[string]string{
		virtkit.HostModelCPULabelPrefix + hostModel:      "true",
		virtkit.CPUModelMigrationLabelPrefix + hostModel: "true",
		virtkit.CPUVendorLabelPrefix + vendor:            "true",
		virtkit.HostCPUSignatureLabel:                    signature,
		virtkit.HostCPUSourceLabel:                       virtkit.HostCPUSourceModelled,
	}
	for _, m := range usable {
		l[virtkit.CPUModelLabelPrefix+m] = "true"
		l[virtkit.CPUModelMigrationLabelPrefix+m] = "true"
	}
	return l
}

func TestMigrationCPUModelFilter(t *testing.T) {
	skylake := cpuLabels("Skylake-Client-IBRS", "Intel", "aaaa", "qemu64", "Haswell-noTSX")
	skylakeOtherFeatures := cpuLabels("Skylake-Client-IBRS", "Intel", "cccc", "qemu64", "Haswell-noTSX")
	epyc := cpuLabels("EPYC", "AMD", "bbbb", "qemu64")
	for _, tc := range []struct {
		name    string
		model   string
		source  map[string]string
		targets map[string]map[string]string
		want    string // target node; "" = no target
		why     string // in the Scheduling condition and the failure reason
	}{
		{name: "host-model: a target that runs the source's host model", model: virtkit.CPUModeHostModel, source: skylake,
			targets: map[string]map[string]string{"amd": epyc, "intel": skylakeOtherFeatures}, want: "intel"},
		{name: "default model is host-model", model: "", source: skylake,
			targets: map[string]map[string]string{"amd": epyc, "intel": skylakeOtherFeatures}, want: "intel"},
		{name: "host-passthrough: only the identical host CPU", model: virtkit.CPUModeHostPassthrough, source: skylake,
			targets: map[string]map[string]string{"similar": skylakeOtherFeatures, "same": skylake, "amd": epyc}, want: "same"},
		{name: "named model: a target that supports it", model: "qemu64", source: skylake,
			targets: map[string]map[string]string{"amd": epyc}, want: "amd"},
		{name: "named model nobody else offers", model: "Haswell-noTSX", source: skylake,
			targets: map[string]map[string]string{"amd": epyc}, why: "cpu model Haswell-noTSX: a target needs label cpu-model-migration.node.kubevirt.io/Haswell-noTSX=true"},
		{name: "host-model without a compatible target", model: virtkit.CPUModeHostModel, source: skylake,
			targets: map[string]map[string]string{"amd": epyc, "unlabelled": nil},
			why:     "host-model is Skylake-Client-IBRS on source node src"},
		{name: "host-passthrough without an identical CPU", model: virtkit.CPUModeHostPassthrough, source: skylake,
			targets: map[string]map[string]string{"similar": skylakeOtherFeatures},
			why:     "host-passthrough needs the source's exact host CPU"},
		{name: "a source without CPU labels adds no requirement", model: virtkit.CPUModeHostPassthrough, source: nil,
			targets: map[string]map[string]string{"amd": epyc}, want: "amd"},
	} {
		setup := func(t *testing.T) (*migEnv, *virtkit.VirtualMachineInstanceMigration) {
			e := newMigEnv(t, nil)
			e.addNode("src", tc.source)
			for name, l := range tc.targets {
				e.addNode(name, l)
			}
			e.runningVMI("vm", "src", true)
			vmi := e.vmi("vm")
			vmi.Spec.Domain.CPU = &virtkit.CPU{Model: tc.model}
			require.NoError(t, e.st.Update(e.ctx, vmi))
			m := e.migrate("vm")
			e.settle()
			return e, m
		}
		t.Run(tc.name, func(t *testing.T) {
			e, m := setup(t)
			got := e.mig(m)
			if tc.want != "" {
				require.NotNil(t, got.Status.MigrationState)
				assert.Equal(t, tc.want, got.Status.MigrationState.TargetNode)
				assert.NotEqual(t, virtkit.MigrationScheduling, got.Status.Phase)
				return
			}
			assert.Equal(t, virtkit.MigrationScheduling, got.Status.Phase, "pends while no node fits")
			c := virtkit.GetCondition(got.Status.Conditions, virtkit.VirtualMachineInstancePodScheduled)
			require.NotNil(t, c)
			assert.Equal(t, virtkit.ConditionFalse, c.Status)
			assert.Contains(t, c.Message, tc.why)

			// Nothing compatible joins: the migration fails with the reason.
			e.clock.Advance(6 * time.Minute)
			e.settle()
			failed := e.mig(m)
			assert.Equal(t, virtkit.MigrationFailed, failed.Status.Phase)
			require.NotNil(t, failed.Status.MigrationState)
			assert.Contains(t, failed.Status.MigrationState.FailureReason, virtkit.MigrationReasonUnschedulable)
			assert.Contains(t, failed.Status.MigrationState.FailureReason, tc.why)

			// A compatible node that joins in time is taken.
			e, m = setup(t)
			e.addNode("late", tc.source)
			e.settle()
			require.NotNil(t, e.mig(m).Status.MigrationState)
			assert.Equal(t, "late", e.mig(m).Status.MigrationState.TargetNode)
		})
	}
}
