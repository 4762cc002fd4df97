package virtkit

// errNotModelled is what Decode reports for a field of KubeVirt's API that
// virtkit does not model: a feature it refuses rather than drops. It
// matches ErrNotSupported, and ErrUnknownField for callers that match on
// that.
var errNotModelled error = notModelledError{}

// +kubebuilder:object:generate=false
// +k8s:openapi-gen=false
type notModelledError struct{}

func (notModelledError) Error() string { return "not supported" }

func (notModelledError) Is(target error) bool {
	return target == ErrNotSupported || target == ErrUnknownField
}

// notModelled says whether key is a field KubeVirt's kubevirt.io/v1 API
// has on the object of Go type typeName that virtkit does not model, what
// it is and why virtkit refuses it.
func notModelled(typeName, key string) (string, bool) {
	if typeName == "Volume" {
		typeName = "VolumeSource" // inlined in Volume
	}
	what, why := notModelledFields[typeName+"."+key][0], notModelledFields[typeName+"."+key][1]
	if what == "" {
		return "", false
	}
	return "a KubeVirt field for " + what + ", which virtkit does not model: " + why, true
}

// notModelledFields maps "GoType.jsonKey" to what the field is and why
// virtkit refuses it.
var notModelledFields = map[string][2]string{
	"VirtualMachineInstanceSpec.accessCredentials":           {"access credentials", "they are injected by KubeVirt's guest-agent propagation, which virtkit does not do"},
	"VirtualMachineInstanceSpec.topologySpreadConstraints":   {"topology spread constraints", "virtkit's scheduler places by CPU, memory, affinity and taints only"},
	"VirtualMachineInstanceSpec.resourceClaims":              {"dynamic resource allocation", "there are no resource drivers on a virtkit node"},
	"DomainSpec.chassis":                                     {"SMBIOS chassis information", "the domain builder writes no chassis table"},
	"Watchdog.diag288":                                       {"the s390x watchdog", "virtkit's watchdog is the i6300esb model"},
	"Devices.autoattachVSOCK":                                {"VSOCK", "it needs vhost-vsock on the host and a CID allocator across nodes, which virtkit does not have"},
	"Devices.clientPassthrough":                              {"USB client passthrough", "it needs a USB redirection endpoint that virtkit's API does not serve"},
	"VolumeSource.memoryDump":                                {"memory dumps", "virtkit has no memory dump subresource"},
	"NetworkConfiguration.defaultNetworkInterface":           {"the default pod interface binding", "virtkit's default binding is a defaulting option (virtkit.DefaultOptions.PodNetworkBinding)"},
	"NetworkConfiguration.permitBridgeInterfaceOnPodNetwork": {"bridge binding on the pod network", "virtkit always permits it"},
	"Interface.dhcpOptions":                                  {"DHCP options", "the pod network's DHCP server serves fixed options"},
}
