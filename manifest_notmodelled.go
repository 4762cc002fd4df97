package virtkit

// errNotModelled is what Decode reports for a field of KubeVirt's API that
// virtkit does not model: a feature it refuses rather than drops. It
// matches ErrNotSupported, and ErrUnknownField for callers that match on
// that.
var errNotModelled error = notModelledError{}

// +kubebuilder:object:generate=false
type notModelledError struct{}

func (notModelledError) Error() string { return "not supported" }

func (notModelledError) Is(target error) bool {
	return target == ErrNotSupported || target == ErrUnknownField
}

// notModelled says whether key is a field KubeVirt's kubevirt.io/v1 API
// has on the object of Go type typeName that virtkit does not model, and
// what it is.
func notModelled(typeName, key string) (string, bool) {
	if typeName == "Volume" {
		typeName = "VolumeSource" // inlined in Volume
	}
	var what string
	switch typeName + "." + key {
	case "InstancetypeMatcher.inferFromVolume", "InstancetypeMatcher.inferFromVolumeFailurePolicy",
		"PreferenceMatcher.inferFromVolume", "PreferenceMatcher.inferFromVolumeFailurePolicy":
		what = "inferring instancetypes and preferences from volumes"
	case "VirtualMachineInstancetypeSpec.gpus", "VirtualMachineInstancetypeSpec.hostDevices":
		what = "device passthrough"
	case "VirtualMachineInstancetypeSpec.launchSecurity":
		what = "confidential computing (SEV, SNP, TDX, Secure Execution)"
	case "VirtualMachineInstancetypeSpec.ioThreads", "VirtualMachineInstancetypeSpec.ioThreadsPolicy":
		what = "IO thread policies"
	case "CPUInstancetype.numa", "CPUInstancetype.realtime":
		what = "guest NUMA and realtime vCPUs"
	case "VirtualMachineSpec.updateVolumesStrategy":
		what = "volume migration"
	case "VirtualMachineInstanceSpec.accessCredentials":
		what = "access credentials"
	case "VirtualMachineInstanceSpec.topologySpreadConstraints":
		what = "topology spread constraints"
	case "VirtualMachineInstanceSpec.resourceClaims":
		what = "dynamic resource allocation"
	case "DomainSpec.launchSecurity":
		what = "confidential computing (SEV, SNP, TDX, Secure Execution)"
	case "DomainSpec.ioThreadsPolicy", "DomainSpec.ioThreads":
		what = "IO thread policies"
	case "DomainSpec.chassis":
		what = "SMBIOS chassis information"
	case "CPU.numa", "CPU.realtime":
		what = "guest NUMA and realtime vCPUs"
	case "Devices.gpus", "Devices.hostDevices":
		what = "device passthrough"
	case "Devices.video":
		what = "video device models"
	case "Devices.sound":
		what = "sound devices"
	case "Devices.watchdog":
		what = "watchdog devices"
	case "Devices.autoattachVSOCK":
		what = "VSOCK"
	case "Devices.downwardMetrics":
		what = "downward metrics"
	case "Devices.panicDevices":
		what = "panic devices"
	case "Devices.clientPassthrough":
		what = "USB client passthrough"
	case "VolumeSource.downwardMetrics":
		what = "downward metrics"
	case "VolumeSource.containerPath":
		what = "container path volumes"
	case "VolumeSource.memoryDump":
		what = "memory dumps"
	case "Interface.binding":
		what = "network binding plugins"
	case "Interface.dhcpOptions":
		what = "DHCP options"
	case "Disk.blockSize":
		what = "custom block sizes"
	default:
		return "", false
	}
	return "a KubeVirt field for " + what + ", which virtkit does not model", true
}
