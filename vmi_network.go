package virtkit

// Interface connects the guest to a network (networks[] by name).
type Interface struct {
	// Name is the interface's name; the network of the same name is what it
	// attaches to.
	Name string `json:"name"`
	// Model is the emulated NIC model, such as virtio or e1000.
	Model                  string `json:"model,omitempty"`
	InterfaceBindingMethod `json:",inline"`
	// Ports are the ports forwarded to the guest; empty forwards all
	// (masquerade binding only).
	Ports []Port `json:"ports,omitempty"`
	// MacAddress is the interface's MAC address.
	MacAddress string `json:"macAddress,omitempty"`
	// BootOrder is the interface's place in the boot order, for network boot.
	BootOrder *uint `json:"bootOrder,omitempty"`
	// PciAddress places the interface at this PCI address.
	PciAddress string `json:"pciAddress,omitempty"`
	// Tag is a device role tag passed to the guest in the metadata.
	Tag string `json:"tag,omitempty"`
	// ACPIIndex is the interface's ACPI index, which names it in the guest.
	ACPIIndex int `json:"acpiIndex,omitempty"`
	// State is the interface's link state: up, down or absent.
	State InterfaceState `json:"state,omitempty"`
	// Binding names a network binding plugin registered in the KubeVirt
	// configuration (spec.configuration.network.binding); it takes the
	// place of a binding method.
	Binding *PluginBinding `json:"binding,omitempty"`
}

// Interface models.
const (
	InterfaceModelVirtio  = "virtio"
	InterfaceModelE1000   = "e1000"
	InterfaceModelE1000E  = "e1000e"
	InterfaceModelIGB     = "igb"
	InterfaceModelNe2kPCI = "ne2k_pci"
	InterfaceModelPCNet   = "pcnet"
	InterfaceModelRTL8139 = "rtl8139"
)

// InterfaceState is the link state.
type InterfaceState string

// Interface states.
const (
	InterfaceStateLinkUp   InterfaceState = "up"
	InterfaceStateLinkDown InterfaceState = "down"
	InterfaceStateAbsent   InterfaceState = "absent"
)

// InterfaceBindingMethod is how the interface is wired; exactly one. Slirp,
// Macvtap and Passt are discontinued in KubeVirt and decode only so that
// validation can reject them with KubeVirt's reason.
type InterfaceBindingMethod struct {
	// Bridge connects the interface to the network through a bridge.
	Bridge *InterfaceBridge `json:"bridge,omitempty"`
	// Masquerade puts the guest behind NAT on the network.
	Masquerade *InterfaceMasquerade `json:"masquerade,omitempty"`
	// SRIOV passes an SR-IOV virtual function through to the guest.
	SRIOV *InterfaceSRIOV `json:"sriov,omitempty"`
	// Slirp connects the interface through user-mode networking.
	Slirp *DeprecatedBinding `json:"slirp,omitempty"`
	// Macvtap connects the interface through a macvtap device.
	Macvtap *DeprecatedBinding `json:"macvtap,omitempty"`
	// Passt connects the interface through passt, a user-mode network
	// translator.
	Passt *DeprecatedBinding `json:"passt,omitempty"`
	// PasstBinding connects the interface to the pod network through
	// passt, a user-mode network translator (PasstBinding feature gate).
	PasstBinding *InterfacePasstBinding `json:"passtBinding,omitempty"`
}

// InterfaceBridge connects the guest to the network with a bridge.
type InterfaceBridge struct{}

// InterfaceMasquerade NATs the guest behind the node's address.
type InterfaceMasquerade struct{}

// InterfaceSRIOV passes through an SR-IOV virtual function.
type InterfaceSRIOV struct{}

// DeprecatedBinding is a binding KubeVirt removed (slirp, macvtap, passt).
type DeprecatedBinding struct{}

// Port is a port exposed by a masquerade interface.
type Port struct {
	// Name is the port's name.
	Name string `json:"name,omitempty"`
	// Protocol is TCP or UDP; TCP by default.
	Protocol string `json:"protocol,omitempty"`
	// Port is the port number.
	Port int32 `json:"port"`
}

// Network is a network the guest can connect to.
type Network struct {
	// Name is the network's name; the interface of the same name attaches to
	// it.
	Name          string `json:"name"`
	NetworkSource `json:",inline"`
}

// NetworkSource is pod or multus; exactly one.
type NetworkSource struct {
	// Pod is the default network of the VMI's node.
	Pod *PodNetwork `json:"pod,omitempty"`
	// Multus is a secondary network, defined by a NetworkAttachmentDefinition.
	Multus *MultusNetwork `json:"multus,omitempty"`
}

// PodNetwork is the node's primary network.
type PodNetwork struct {
	// VMNetworkCIDR is the IPv4 network the guest's address is taken from
	// (masquerade binding).
	VMNetworkCIDR string `json:"vmNetworkCIDR,omitempty"`
	// VMIPv6NetworkCIDR is the IPv6 network the guest's address is taken from
	// (masquerade binding).
	VMIPv6NetworkCIDR string `json:"vmIPv6NetworkCIDR,omitempty"`
}

// MultusNetwork is a secondary network by name.
type MultusNetwork struct {
	// NetworkName names the NetworkAttachmentDefinition, as name or
	// namespace/name.
	NetworkName string `json:"networkName"`
	// Default makes this network the default one, in place of the pod network.
	Default bool `json:"default,omitempty"`
}
