package virtkit

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	_ Object     = (*VirtualMachine)(nil)
	_ Object     = (*VirtualMachineInstance)(nil)
	_ Object     = (*VirtualMachineInstanceMigration)(nil)
	_ Object     = (*VirtualMachineInstanceReplicaSet)(nil)
	_ Object     = (*MigrationPolicy)(nil)
	_ Object     = (*Node)(nil)
	_ Object     = (*Event)(nil)
	_ ObjectList = (*VirtualMachineList)(nil)
	_ ObjectList = (*VirtualMachineInstanceList)(nil)
	_ ObjectList = (*VirtualMachineInstanceMigrationList)(nil)
	_ ObjectList = (*VirtualMachineInstanceReplicaSetList)(nil)
	_ ObjectList = (*MigrationPolicyList)(nil)
	_ ObjectList = (*NodeList)(nil)
	_ ObjectList = (*EventList)(nil)
)

// Group versions of the kinds in this package.
var (
	SchemeGroupVersion           = schema.GroupVersion{Group: GroupName, Version: "v1"}
	MigrationsSchemeGroupVersion = schema.GroupVersion{Group: MigrationsGroupName, Version: "v1alpha1"}
	VirtkitSchemeGroupVersion    = schema.GroupVersion{Group: VirtkitGroupName, Version: "v1alpha1"}
)

// kindInfo describes one kind virtkit knows.
//
// +kubebuilder:object:generate=false
// +k8s:openapi-gen=false
type kindInfo struct {
	gvk        schema.GroupVersionKind
	namespaced bool
	newObject  func() Object
	newList    func() ObjectList
}

// kinds returns the table of known kinds. It is a function, not a package
// variable, so nothing can mutate it.
func kinds() []kindInfo {
	return []kindInfo{
		{SchemeGroupVersion.WithKind(KindVirtualMachine), true,
			func() Object { return &VirtualMachine{} }, func() ObjectList { return &VirtualMachineList{} }},
		{SchemeGroupVersion.WithKind(KindVirtualMachineInstance), true,
			func() Object { return &VirtualMachineInstance{} }, func() ObjectList { return &VirtualMachineInstanceList{} }},
		{SchemeGroupVersion.WithKind(KindVirtualMachineInstanceMigration), true,
			func() Object { return &VirtualMachineInstanceMigration{} }, func() ObjectList { return &VirtualMachineInstanceMigrationList{} }},
		{SchemeGroupVersion.WithKind(KindVirtualMachineInstanceReplicaSet), true,
			func() Object { return &VirtualMachineInstanceReplicaSet{} }, func() ObjectList { return &VirtualMachineInstanceReplicaSetList{} }},
		{MigrationsSchemeGroupVersion.WithKind(KindMigrationPolicy), false,
			func() Object { return &MigrationPolicy{} }, func() ObjectList { return &MigrationPolicyList{} }},
		{VirtkitSchemeGroupVersion.WithKind(KindNode), false,
			func() Object { return &Node{} }, func() ObjectList { return &NodeList{} }},
		{CDISchemeGroupVersion.WithKind(KindDataVolume), true,
			func() Object { return &DataVolume{} }, func() ObjectList { return &DataVolumeList{} }},
		{InstancetypeSchemeGroupVersion.WithKind(KindVirtualMachineInstancetype), true,
			func() Object { return &VirtualMachineInstancetype{} }, func() ObjectList { return &VirtualMachineInstancetypeList{} }},
		{InstancetypeSchemeGroupVersion.WithKind(KindVirtualMachineClusterInstancetype), false,
			func() Object { return &VirtualMachineClusterInstancetype{} }, func() ObjectList { return &VirtualMachineClusterInstancetypeList{} }},
		{InstancetypeSchemeGroupVersion.WithKind(KindVirtualMachinePreference), true,
			func() Object { return &VirtualMachinePreference{} }, func() ObjectList { return &VirtualMachinePreferenceList{} }},
		{InstancetypeSchemeGroupVersion.WithKind(KindVirtualMachineClusterPreference), false,
			func() Object { return &VirtualMachineClusterPreference{} }, func() ObjectList { return &VirtualMachineClusterPreferenceList{} }},
		{AppsSchemeGroupVersion.WithKind(KindControllerRevision), true,
			func() Object { return &ControllerRevision{} }, func() ObjectList { return &ControllerRevisionList{} }},
		{EventsSchemeGroupVersion.WithKind(KindEvent), true,
			func() Object { return &Event{} }, func() ObjectList { return &EventList{} }},
		{CNISchemeGroupVersion.WithKind(KindNetworkAttachmentDefinition), true,
			func() Object { return &NetworkAttachmentDefinition{} }, func() ObjectList { return &NetworkAttachmentDefinitionList{} }},
		{VirtkitSchemeGroupVersion.WithKind(KindIPLease), false,
			func() Object { return &IPLease{} }, func() ObjectList { return &IPLeaseList{} }},
		{SchemeGroupVersion.WithKind(KindKubeVirt), true,
			func() Object { return &KubeVirt{} }, func() ObjectList { return &KubeVirtList{} }},
		{CoreSchemeGroupVersion.WithKind(KindConfigMap), true,
			func() Object { return &corev1.ConfigMap{} }, func() ObjectList { return &corev1.ConfigMapList{} }},
		{CoreSchemeGroupVersion.WithKind(KindSecret), true,
			func() Object { return &corev1.Secret{} }, func() ObjectList { return &corev1.SecretList{} }},
		{CoreSchemeGroupVersion.WithKind(KindServiceAccount), true,
			func() Object { return &corev1.ServiceAccount{} }, func() ObjectList { return &corev1.ServiceAccountList{} }},
		{CoreSchemeGroupVersion.WithKind(KindNamespace), false,
			func() Object { return &corev1.Namespace{} }, func() ObjectList { return &corev1.NamespaceList{} }},
		{SnapshotSchemeGroupVersion.WithKind(KindVirtualMachineSnapshot), true,
			func() Object { return &VirtualMachineSnapshot{} }, func() ObjectList { return &VirtualMachineSnapshotList{} }},
		{SnapshotSchemeGroupVersion.WithKind(KindVirtualMachineSnapshotContent), true,
			func() Object { return &VirtualMachineSnapshotContent{} }, func() ObjectList { return &VirtualMachineSnapshotContentList{} }},
		{SnapshotSchemeGroupVersion.WithKind(KindVirtualMachineRestore), true,
			func() Object { return &VirtualMachineRestore{} }, func() ObjectList { return &VirtualMachineRestoreList{} }},
		{CloneSchemeGroupVersion.WithKind(KindVirtualMachineClone), true,
			func() Object { return &VirtualMachineClone{} }, func() ObjectList { return &VirtualMachineCloneList{} }},
		{ExportSchemeGroupVersion.WithKind(KindVirtualMachineExport), true,
			func() Object { return &VirtualMachineExport{} }, func() ObjectList { return &VirtualMachineExportList{} }},
	}
}

func lookupKind(gvk schema.GroupVersionKind) (kindInfo, bool) {
	for _, k := range kinds() {
		if k.gvk == gvk {
			return k, true
		}
	}
	return kindInfo{}, false
}

// servedVersion maps an older API version that Decode accepts, as KubeVirt
// still serves it, to the version its objects decode as: kubevirt.io/v1alpha3
// has kubevirt.io/v1's schema, and export.kubevirt.io/v1beta1
// export.kubevirt.io/v1's, so their objects are decoded, stored and encoded
// as v1. Any other version is returned unchanged.
func servedVersion(gv schema.GroupVersion) schema.GroupVersion {
	switch {
	case gv.Group == GroupName && gv.Version == "v1alpha3":
		return SchemeGroupVersion
	case gv.Group == ExportGroupName && gv.Version == "v1beta1":
		return ExportSchemeGroupVersion
	}
	return gv
}

// KnownKinds lists the GroupVersionKinds Decode accepts.
func KnownKinds() []schema.GroupVersionKind {
	ks := kinds()
	out := make([]schema.GroupVersionKind, len(ks))
	for i, k := range ks {
		out[i] = k.gvk
	}
	return out
}

// NewObject returns an empty object of a known kind with its TypeMeta set,
// or an error wrapping ErrUnknownKind.
func NewObject(gvk schema.GroupVersionKind) (Object, error) {
	k, ok := lookupKind(gvk)
	if !ok {
		return nil, unknownKindError(gvk)
	}
	obj := k.newObject()
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, nil
}

// NewObjectList returns an empty list for a known kind (the item kind), or
// an error wrapping ErrUnknownKind.
func NewObjectList(gvk schema.GroupVersionKind) (ObjectList, error) {
	k, ok := lookupKind(gvk)
	if !ok {
		return nil, unknownKindError(gvk)
	}
	l := k.newList()
	l.GetObjectKind().SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	return l, nil
}

// IsNamespaced reports whether objects of a known kind live in a namespace
// (MigrationPolicy and Node are cluster-scoped).
func IsNamespaced(gvk schema.GroupVersionKind) bool {
	k, ok := lookupKind(gvk)
	return !ok || k.namespaced
}

// GVKOf returns the GroupVersionKind of one of this package's objects from
// its Go type, whatever its TypeMeta says; ok is false for foreign types.
func GVKOf(obj Object) (schema.GroupVersionKind, bool) {
	switch obj.(type) {
	case *VirtualMachine:
		return SchemeGroupVersion.WithKind(KindVirtualMachine), true
	case *VirtualMachineInstance:
		return SchemeGroupVersion.WithKind(KindVirtualMachineInstance), true
	case *VirtualMachineInstanceMigration:
		return SchemeGroupVersion.WithKind(KindVirtualMachineInstanceMigration), true
	case *VirtualMachineInstanceReplicaSet:
		return SchemeGroupVersion.WithKind(KindVirtualMachineInstanceReplicaSet), true
	case *MigrationPolicy:
		return MigrationsSchemeGroupVersion.WithKind(KindMigrationPolicy), true
	case *Node:
		return VirtkitSchemeGroupVersion.WithKind(KindNode), true
	case *DataVolume:
		return CDISchemeGroupVersion.WithKind(KindDataVolume), true
	case *VirtualMachineInstancetype:
		return InstancetypeSchemeGroupVersion.WithKind(KindVirtualMachineInstancetype), true
	case *VirtualMachineClusterInstancetype:
		return InstancetypeSchemeGroupVersion.WithKind(KindVirtualMachineClusterInstancetype), true
	case *VirtualMachinePreference:
		return InstancetypeSchemeGroupVersion.WithKind(KindVirtualMachinePreference), true
	case *VirtualMachineClusterPreference:
		return InstancetypeSchemeGroupVersion.WithKind(KindVirtualMachineClusterPreference), true
	case *ControllerRevision:
		return AppsSchemeGroupVersion.WithKind(KindControllerRevision), true
	case *Event:
		return EventsSchemeGroupVersion.WithKind(KindEvent), true
	case *NetworkAttachmentDefinition:
		return CNISchemeGroupVersion.WithKind(KindNetworkAttachmentDefinition), true
	case *IPLease:
		return VirtkitSchemeGroupVersion.WithKind(KindIPLease), true
	case *KubeVirt:
		return SchemeGroupVersion.WithKind(KindKubeVirt), true
	case *corev1.ConfigMap:
		return CoreSchemeGroupVersion.WithKind(KindConfigMap), true
	case *corev1.Secret:
		return CoreSchemeGroupVersion.WithKind(KindSecret), true
	case *corev1.ServiceAccount:
		return CoreSchemeGroupVersion.WithKind(KindServiceAccount), true
	case *corev1.Namespace:
		return CoreSchemeGroupVersion.WithKind(KindNamespace), true
	case *VirtualMachineSnapshot:
		return SnapshotSchemeGroupVersion.WithKind(KindVirtualMachineSnapshot), true
	case *VirtualMachineSnapshotContent:
		return SnapshotSchemeGroupVersion.WithKind(KindVirtualMachineSnapshotContent), true
	case *VirtualMachineRestore:
		return SnapshotSchemeGroupVersion.WithKind(KindVirtualMachineRestore), true
	case *VirtualMachineClone:
		return CloneSchemeGroupVersion.WithKind(KindVirtualMachineClone), true
	case *VirtualMachineExport:
		return ExportSchemeGroupVersion.WithKind(KindVirtualMachineExport), true
	}
	return schema.GroupVersionKind{}, false
}
