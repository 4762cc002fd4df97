package virtkit

// InterfacePasstBinding connects an interface to the pod network through
// passt, user-mode networking that gives the guest the node's address.
type InterfacePasstBinding struct{}

// PluginBinding names a network binding plugin.
type PluginBinding struct {
	// Name is the plugin's name, a key of the KubeVirt configuration's
	// network.binding.
	Name string `json:"name"`
}

// NetworkConfiguration is the network part of the KubeVirt
// configuration that virtkit reads: the registered binding plugins.
type NetworkConfiguration struct {
	// Binding maps a plugin's name to how it attaches interfaces.
	Binding map[string]InterfaceBindingPlugin `json:"binding,omitempty"`
}

// InterfaceBindingPlugin is a registered network binding plugin.
type InterfaceBindingPlugin struct {
	// SidecarImage is the container image that configures the domain's
	// interface in KubeVirt's launcher pod. A virtkit node runs no
	// sidecars.
	SidecarImage string `json:"sidecarImage,omitempty"`
	// NetworkAttachmentDefinition names the network attachment the plugin
	// needs, as name or namespace/name.
	NetworkAttachmentDefinition string `json:"networkAttachmentDefinition,omitempty"`
	// DomainAttachmentType is the standard attachment the domain gets:
	// tap or managedTap.
	DomainAttachmentType DomainAttachmentType `json:"domainAttachmentType,omitempty"`
	// Migration says VMIs using the plugin may migrate, and how.
	Migration *InterfaceBindingMigration `json:"migration,omitempty"`
	// DownwardAPI is the data given to the plugin's sidecar: device-info.
	DownwardAPI NetworkBindingDownwardAPIType `json:"downwardAPI,omitempty"`
	// ComputeResourceOverhead is added to the VMI's resource requests.
	ComputeResourceOverhead *ResourceRequirementsWithoutClaims `json:"computeResourceOverhead,omitempty"`
}

// ResourceRequirementsWithoutClaims is requests and limits.
type ResourceRequirementsWithoutClaims struct {
	// Limits are the maximum amounts.
	Limits ResourceList `json:"limits,omitempty"`
	// Requests are the minimum amounts.
	Requests ResourceList `json:"requests,omitempty"`
}

// DomainAttachmentType is how a binding plugin's interface is attached
// to the domain.
type DomainAttachmentType string

// Domain attachment types.
const (
	// DomainAttachmentTap is a tap device the plugin prepares.
	DomainAttachmentTap DomainAttachmentType = "tap"
	// DomainAttachmentManagedTap is a tap device KubeVirt creates on a
	// bridge with the pod's interface.
	DomainAttachmentManagedTap DomainAttachmentType = "managedTap"
)

// NetworkBindingDownwardAPIType is data exposed to a plugin's sidecar.
type NetworkBindingDownwardAPIType string

// DeviceInfoDownwardAPI exposes the network's device information.
const DeviceInfoDownwardAPI NetworkBindingDownwardAPIType = "device-info"

// InterfaceBindingMigration says how an interface of a plugin migrates.
type InterfaceBindingMigration struct {
	// Method is link-refresh: the link goes down and up after the
	// migration so the guest asks DHCP again.
	Method string `json:"method,omitempty"`
}
