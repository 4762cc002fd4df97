package store

import "github.com/virtkit/virtkit"

// DefaultKinds returns the kinds of the virtkit object model
// (virtkit.KnownKinds: VirtualMachine, VirtualMachineInstance,
// VirtualMachineInstanceMigration, VirtualMachineInstanceReplicaSet,
// MigrationPolicy, Node, CDI's DataVolume, events.k8s.io's Event, the four instancetype.kubevirt.io
// kinds, apps/v1 ControllerRevision, the three snapshot.kubevirt.io kinds, clone.kubevirt.io VirtualMachineClone and export.kubevirt.io VirtualMachineExport; MigrationPolicy, Node and the cluster instancetypes and preferences are
// cluster-scoped), which every store created with zero Options knows.
func DefaultKinds() []Kind {
	gvks := virtkit.KnownKinds()
	out := make([]Kind, 0, len(gvks))
	for _, gvk := range gvks {
		obj, err := virtkit.NewObject(gvk)
		if err != nil {
			continue // cannot happen: gvk comes from KnownKinds
		}
		list, err := virtkit.NewObjectList(gvk)
		if err != nil {
			continue
		}
		out = append(out, Kind{
			Name:          gvk.Kind,
			APIVersion:    gvk.GroupVersion().String(),
			Object:        obj,
			List:          list,
			ClusterScoped: !virtkit.IsNamespaced(gvk),
		})
	}
	return out
}
