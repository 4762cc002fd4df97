package node

import (
	"context"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// dataVolumesMigratable refuses live migration for a VMI whose disk is a
// DataVolume kept on this node's local storage (KubeVirt: a PVC that is not
// ReadWriteMany is not shared). A DataVolume on a shared class carries no
// volume-node annotation and migrates. ok is returned when nothing objects
// or the store cannot answer now (the next status refresh asks again).
// A volume a volume migration copies (listed in status.migratedVolumes)
// does not object: its disk crosses with the guest, as KubeVirt's block
// migration of the migrated volumes.
func (a *Agent) dataVolumesMigratable(ctx context.Context, vmi *virtkit.VirtualMachineInstance, ok virtkit.Condition) virtkit.Condition {
	for _, v := range vmi.Spec.Volumes {
		if virtkit.VolumeIsMigrated(vmi, v.Name) {
			continue
		}
		name := ""
		switch {
		case v.DataVolume != nil:
			name = v.DataVolume.Name
		case v.PersistentVolumeClaim != nil:
			name = v.PersistentVolumeClaim.ClaimName
		default:
			continue
		}
		dv := &virtkit.DataVolume{}
		if err := a.opts.Store.Get(ctx, store.Key{Namespace: vmi.Namespace, Name: name}, dv); err != nil {
			continue
		}
		if dv.Annotations[virtkit.DataVolumeVolumeNodeAnnotation] != "" {
			return virtkit.Condition{Type: virtkit.VirtualMachineInstanceIsMigratable, Status: virtkit.ConditionFalse,
				Reason:  virtkit.DisksNotLiveMigratableReason,
				Message: "DataVolume " + name + " lives on node-local storage; live migration needs every claim on a shared (ReadWriteMany) class"}
		}
	}
	return ok
}
