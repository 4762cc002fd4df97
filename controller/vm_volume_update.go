package controller

import (
	"fmt"

	"github.com/virtkit/virtkit"
)

// VolumeMigrationNotSupportedReason is the RestartRequired reason of a VM
// whose updateVolumesStrategy virtkit does not recognize while its
// template names new volumes for a running VMI: the new volumes are used
// from the next start.
const VolumeMigrationNotSupportedReason = "VolumeMigrationNotSupported"

// volumeUpdateCondition returns the RestartRequired condition of a VM
// whose updateVolumesStrategy is not one KubeVirt knows. ok is false for
// Replacement, unset and Migration (a change of claims alone migrates
// the volumes, see syncVolumeMigration; any other change needs the
// generic restart).
func volumeUpdateCondition(vm *virtkit.VirtualMachine, vmi *virtkit.VirtualMachineInstance) (virtkit.Condition, bool) {
	s := vm.Spec.UpdateVolumesStrategy
	if s == nil || *s == virtkit.UpdateVolumesStrategyReplacement || *s == virtkit.UpdateVolumesStrategyMigration || vm.Spec.Template == nil {
		return virtkit.Condition{}, false
	}
	if len(changedClaims(vm.Spec.Template.Spec.Volumes, vmi.Spec.Volumes)) == 0 {
		return virtkit.Condition{}, false
	}
	return virtkit.Condition{Type: virtkit.VirtualMachineRestartRequired, Status: virtkit.ConditionTrue,
		Reason:  VolumeMigrationNotSupportedReason,
		Message: fmt.Sprintf("spec.updateVolumesStrategy: updateVolumes strategy not recognized: %s", *s)}, true
}
