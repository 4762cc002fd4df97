package controller

import (
	"fmt"
	"strings"

	"github.com/virtkit/virtkit"
)

// VolumeMigrationNotSupportedReason is the RestartRequired reason of a VM
// whose updateVolumesStrategy is Migration and whose template names new
// persistent volumes for a running VMI: virtkit's live migration does not
// copy volumes, so the new volumes are used from the next start.
const VolumeMigrationNotSupportedReason = "VolumeMigrationNotSupported"

// volumeUpdateCondition returns the RestartRequired condition of a VM
// whose updateVolumesStrategy asks for volume migration, naming each
// template volume whose claim or DataVolume differs from the running
// VMI's. ok is false when the strategy is Replacement (or unset) or no
// persistent volume changed: the generic RestartRequired applies then.
func volumeUpdateCondition(vm *virtkit.VirtualMachine, vmi *virtkit.VirtualMachineInstance) (virtkit.Condition, bool) {
	s := vm.Spec.UpdateVolumesStrategy
	if s == nil || *s == virtkit.UpdateVolumesStrategyReplacement || vm.Spec.Template == nil {
		return virtkit.Condition{}, false
	}
	cond := virtkit.Condition{Type: virtkit.VirtualMachineRestartRequired, Status: virtkit.ConditionTrue,
		Reason: VolumeMigrationNotSupportedReason}
	if *s != virtkit.UpdateVolumesStrategyMigration {
		cond.Message = fmt.Sprintf("spec.updateVolumesStrategy: updateVolumes strategy not recognized: %s", *s)
		return cond, true
	}
	running := map[string]string{}
	for _, v := range vmi.Spec.Volumes {
		if src := persistentSource(&v.VolumeSource); src != "" {
			running[v.Name] = src
		}
	}
	var changed []string
	for i, v := range vm.Spec.Template.Spec.Volumes {
		src := persistentSource(&v.VolumeSource)
		if old, ok := running[v.Name]; ok && src != "" && src != old {
			changed = append(changed, fmt.Sprintf("spec.template.spec.volumes[%d]", i))
		}
	}
	if len(changed) == 0 {
		return virtkit.Condition{}, false
	}
	cond.Message = strings.Join(changed, ", ") + ": updateVolumesStrategy Migration is not supported by virtkit " +
		"(its live migration does not copy volumes to new claims); the changed volumes are used after a restart"
	return cond, true
}

// persistentSource names a volume's claim or DataVolume ("pvc/NAME",
// "dv/NAME"); other volume kinds give "".
func persistentSource(s *virtkit.VolumeSource) string {
	switch {
	case s.PersistentVolumeClaim != nil:
		return "pvc/" + s.PersistentVolumeClaim.ClaimName
	case s.DataVolume != nil:
		return "dv/" + s.DataVolume.Name
	}
	return ""
}
