package virtkit

// ShortNames returns the short names KubeVirt's and CDI's CRDs declare for
// a kind (kubectl get vm, vmsnapshot, kv ...); nil for a kind without any.
// The API server's discovery serves them.
func ShortNames(kind string) []string {
	switch kind {
	case KindVirtualMachine:
		return []string{"vm", "vms"}
	case KindVirtualMachineInstance:
		return []string{"vmi", "vmis"}
	case KindVirtualMachineInstanceMigration:
		return []string{"vmim", "vmims"}
	case KindVirtualMachineInstanceReplicaSet:
		return []string{"vmirs", "vmirss"}
	case KindKubeVirt:
		return []string{"kv", "kvs"}
	case KindVirtualMachineSnapshot:
		return []string{"vmsnapshot", "vmsnapshots"}
	case KindVirtualMachineSnapshotContent:
		return []string{"vmsnapshotcontent", "vmsnapshotcontents"}
	case KindVirtualMachineRestore:
		return []string{"vmrestore", "vmrestores"}
	case KindVirtualMachineClone:
		return []string{"vmclone", "vmclones"}
	case KindVirtualMachineExport:
		return []string{"vmexport", "vmexports"}
	case KindVirtualMachineInstancetype:
		return []string{"vminstancetype", "vminstancetypes", "vmf", "vmfs"}
	case KindVirtualMachineClusterInstancetype:
		return []string{"vmclusterinstancetype", "vmclusterinstancetypes", "vmcf", "vmcfs"}
	case KindVirtualMachinePreference:
		return []string{"vmpref", "vmprefs", "vmp", "vmps"}
	case KindVirtualMachineClusterPreference:
		return []string{"vmcp", "vmcps"}
	case KindDataVolume:
		return []string{"dv", "dvs"}
	case KindEvent:
		return []string{"ev"}
	}
	return nil
}
