package virtkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// NetworkAttachmentDefinition is the Multus CRD (k8s.cni.cncf.io/v1) a
// multus network of a VMI names: spec.config holds a CNI network
// configuration as a JSON string. virtkit reads it the way a CNI plugin
// would (see ParseCNIConfig) and honours the bridge plugin with host-local
// IPAM; other plugin types are refused with a reason naming the type.

// CNIGroupName is the API group of NetworkAttachmentDefinition.
const CNIGroupName = "k8s.cni.cncf.io"

// CNISchemeGroupVersion is the group version of NetworkAttachmentDefinition.
var CNISchemeGroupVersion = schema.GroupVersion{Group: CNIGroupName, Version: "v1"}

// Kind names of the network kinds.
const (
	KindNetworkAttachmentDefinition = "NetworkAttachmentDefinition"
	// KindIPLease is virtkit's record of one address handed out by its
	// IPAM (virtkit.io/v1alpha1, cluster-scoped).
	KindIPLease = "IPLease"
)

// MaxCNIConfigBytes bounds spec.config of a NetworkAttachmentDefinition.
const MaxCNIConfigBytes = 64 << 10

// NetworkAttachmentDefinition describes a secondary network (namespaced).
//
// +kubebuilder:object:generate=false
type NetworkAttachmentDefinition struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the object's name, namespace, labels, annotations and
	// the other fields every object has.
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec holds the network's CNI configuration.
	Spec NetworkAttachmentDefinitionSpec `json:"spec"`
}

// NetworkAttachmentDefinitionSpec holds the CNI configuration.
type NetworkAttachmentDefinitionSpec struct {
	// Config is a CNI network configuration, as a JSON string.
	Config string `json:"config,omitempty"`
}

// NetworkAttachmentDefinitionList is a list of NetworkAttachmentDefinitions.
//
// +kubebuilder:object:generate=false
type NetworkAttachmentDefinitionList struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the list's resource version and continuation token.
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the network attachment definitions.
	Items []NetworkAttachmentDefinition `json:"items"`
}

// IPLease records one address (or, for a node's share of the pod range, one
// subnet) taken from a pool by virtkit's IPAM. Its name is derived from
// the address, so a store's create-if-absent makes two holders of one
// address impossible.
//
// +kubebuilder:object:generate=false
type IPLease struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the object's name, namespace, labels, annotations and
	// the other fields every object has.
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec is the address's owner.
	Spec IPLeaseSpec `json:"spec"`
}

// IPLeaseSpec says what is leased to whom.
type IPLeaseSpec struct {
	// Pool names the range the address comes from ("pod", or a
	// NetworkAttachmentDefinition's namespace/name).
	Pool string `json:"pool"`
	// Address is the leased address in CIDR form (10.244.1.7/24), or the
	// leased subnet (10.244.1.0/24) for a node's share.
	Address string `json:"address"`
	// Node is the node holding the lease: the VMI's node, or the node
	// owning a subnet.
	Node string `json:"node,omitempty"`
	// OwnerNamespace is the namespace of the VMI that holds the address.
	OwnerNamespace string `json:"ownerNamespace,omitempty"`
	// OwnerName is the name of the VMI that holds the address.
	OwnerName string `json:"ownerName,omitempty"`
	// OwnerUID is the UID of the VMI that holds the address.
	OwnerUID string `json:"ownerUID,omitempty"`
	// Interface is the VMI interface the address is for.
	Interface string `json:"interface,omitempty"`
	// MAC is the interface's MAC address.
	MAC string `json:"mac,omitempty"`
}

// IPLeaseList is a list of IPLeases.
//
// +kubebuilder:object:generate=false
type IPLeaseList struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the list's resource version and continuation token.
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the leases.
	Items []IPLease `json:"items"`
}

// CNIConfig is the part of a CNI network configuration virtkit reads.
//
// +k8s:openapi-gen=false
type CNIConfig struct {
	CNIVersion string `json:"cniVersion,omitempty"`
	Name       string `json:"name,omitempty"`
	Type       string `json:"type"`
	// Bridge plugin fields.
	Bridge      string   `json:"bridge,omitempty"`
	IsGateway   bool     `json:"isGateway,omitempty"`
	IsDefaultGW bool     `json:"isDefaultGateway,omitempty"`
	IPMasq      bool     `json:"ipMasq,omitempty"`
	HairpinMode bool     `json:"hairpinMode,omitempty"`
	MTU         int      `json:"mtu,omitempty"`
	VLAN        int      `json:"vlan,omitempty"`
	IPAM        *CNIIPAM `json:"ipam,omitempty"`
}

// CNIIPAM is a host-local IPAM configuration.
//
// +k8s:openapi-gen=false
type CNIIPAM struct {
	Type       string         `json:"type"`
	Subnet     string         `json:"subnet,omitempty"`
	RangeStart string         `json:"rangeStart,omitempty"`
	RangeEnd   string         `json:"rangeEnd,omitempty"`
	Gateway    string         `json:"gateway,omitempty"`
	Ranges     [][]CNIIPRange `json:"ranges,omitempty"`
	Routes     []CNIRoute     `json:"routes,omitempty"`
	DataDir    string         `json:"dataDir,omitempty"`
}

// CNIIPRange is one host-local range.
//
// +k8s:openapi-gen=false
type CNIIPRange struct {
	Subnet     string `json:"subnet"`
	RangeStart string `json:"rangeStart,omitempty"`
	RangeEnd   string `json:"rangeEnd,omitempty"`
	Gateway    string `json:"gateway,omitempty"`
}

// CNIRoute is a route the IPAM hands out.
//
// +k8s:openapi-gen=false
type CNIRoute struct {
	Dst string `json:"dst"`
	GW  string `json:"gw,omitempty"`
}

// ParseCNIConfig reads a NetworkAttachmentDefinition's spec.config. A
// config of type "bridge" is decoded strictly (an unknown field is an
// error naming it); any other type only needs a type, and whether it can
// be honoured is the network resolver's decision. Errors carry field paths
// under path.
func ParseCNIConfig(config string, path *field.Path) (*CNIConfig, field.ErrorList) {
	if config == "" {
		return nil, field.ErrorList{field.Required(path, "a CNI configuration is required")}
	}
	if len(config) > MaxCNIConfigBytes {
		return nil, field.ErrorList{field.TooLong(path, "", MaxCNIConfigBytes)}
	}
	var head struct {
		Type    string            `json:"type"`
		Plugins []json.RawMessage `json:"plugins"`
	}
	if err := json.Unmarshal([]byte(config), &head); err != nil {
		return nil, field.ErrorList{field.Invalid(path, "", "not a JSON CNI configuration: "+err.Error())}
	}
	if head.Plugins != nil {
		return nil, field.ErrorList{field.NotSupported(path.Child("plugins"), "a plugin list", []string{"a single plugin configuration"})}
	}
	if head.Type == "" {
		return nil, field.ErrorList{field.Required(path.Child("type"), "the CNI plugin type is required")}
	}
	cfg := &CNIConfig{}
	if head.Type != "bridge" {
		cfg.Type = head.Type
		_ = json.Unmarshal([]byte(config), cfg) // best effort: only the type matters
		return cfg, nil
	}
	body, errs := bridgeVLANOptions(config, path)
	if len(errs) > 0 {
		return nil, errs
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(cfg); err != nil {
		msg := err.Error()
		if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
			name := strings.Trim(f, `"`)
			return nil, field.ErrorList{field.NotSupported[string](path.Child(name), name, nil)}
		}
		return nil, field.ErrorList{field.Invalid(path, "", msg)}
	}
	return cfg, validateBridgeCNI(cfg, path)
}

// bridgeVLANOptions checks the bridge plugin's VLAN options virtkit does
// not model as fields: vlanTrunk is refused (a guest's port is an access
// port of one VLAN, untagged), and preserveDefaultVlan may only be false
// when vlan is set (virtkit's access ports never carry the default VLAN 1;
// the plugin's default, true, would). It returns config without an
// accepted preserveDefaultVlan, ready for the strict decoder.
func bridgeVLANOptions(config string, path *field.Path) ([]byte, field.ErrorList) {
	var all map[string]json.RawMessage
	if err := json.Unmarshal([]byte(config), &all); err != nil {
		return []byte(config), nil // the strict decoder reports what is wrong
	}
	_, hasTrunk := all["vlanTrunk"]
	preserveRaw, hasPreserve := all["preserveDefaultVlan"]
	if !hasTrunk && !hasPreserve {
		return []byte(config), nil
	}
	var errs field.ErrorList
	if hasTrunk {
		errs = append(errs, field.Forbidden(path.Child("vlanTrunk"),
			"not supported: a guest's port is an access port of the one VLAN named by vlan (untagged); trunk ports are not"))
	}
	if hasPreserve {
		var preserve bool
		var vlan int
		_ = json.Unmarshal(all["vlan"], &vlan) // checked by the strict decoder
		switch err := json.Unmarshal(preserveRaw, &preserve); {
		case err != nil:
			errs = append(errs, field.Invalid(path.Child("preserveDefaultVlan"), string(preserveRaw), "must be true or false"))
		case preserve && vlan > 0:
			errs = append(errs, field.NotSupported(path.Child("preserveDefaultVlan"), true, []string{"false"}))
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	delete(all, "preserveDefaultVlan")
	body, err := json.Marshal(all)
	if err != nil {
		return []byte(config), nil
	}
	return body, nil
}

func validateBridgeCNI(c *CNIConfig, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.VLAN < 0 || c.VLAN > 4094 {
		errs = append(errs, field.Invalid(path.Child("vlan"), c.VLAN, "must be 0 (untagged) to 4094"))
	}
	if c.MTU < 0 || c.MTU > 65535 {
		errs = append(errs, field.Invalid(path.Child("mtu"), c.MTU, "must be 0 to 65535"))
	}
	if c.Bridge != "" && (len(c.Bridge) > 15 || strings.ContainsAny(c.Bridge, "/ \t\n:")) {
		errs = append(errs, field.Invalid(path.Child("bridge"), c.Bridge, "not a Linux interface name (at most 15 characters, no '/', ':' or spaces)"))
	}
	if c.IPAM == nil {
		return errs
	}
	ip := path.Child("ipam")
	switch c.IPAM.Type {
	case "host-local":
	case "":
		return append(errs, field.Required(ip.Child("type"), "the IPAM type is required"))
	default:
		return append(errs, field.NotSupported(ip.Child("type"), c.IPAM.Type, []string{"host-local"}))
	}
	if c.IPAM.Subnet == "" && len(c.IPAM.Ranges) == 0 {
		errs = append(errs, field.Required(ip.Child("subnet"), "host-local needs a subnet or ranges"))
	}
	check := func(p *field.Path, r CNIIPRange) {
		pfx, err := netip.ParsePrefix(r.Subnet)
		if err != nil {
			errs = append(errs, field.Invalid(p.Child("subnet"), r.Subnet, "not a CIDR"))
			return
		}
		for _, a := range []struct{ name, v string }{{"rangeStart", r.RangeStart}, {"rangeEnd", r.RangeEnd}, {"gateway", r.Gateway}} {
			if a.v == "" {
				continue
			}
			addr, err := netip.ParseAddr(a.v)
			if err != nil || !pfx.Contains(addr) {
				errs = append(errs, field.Invalid(p.Child(a.name), a.v, fmt.Sprintf("not an address in %s", pfx)))
			}
		}
	}
	if c.IPAM.Subnet != "" {
		check(ip, CNIIPRange{Subnet: c.IPAM.Subnet, RangeStart: c.IPAM.RangeStart, RangeEnd: c.IPAM.RangeEnd, Gateway: c.IPAM.Gateway})
	}
	for i, set := range c.IPAM.Ranges {
		for j, r := range set {
			check(ip.Child("ranges").Index(i).Index(j), r)
		}
	}
	return errs
}

func validateNetworkAttachmentDefinition(n *NetworkAttachmentDefinition) field.ErrorList {
	errs := validateObjectMeta(&n.ObjectMeta, true, field.NewPath("metadata"))
	_, cerrs := ParseCNIConfig(n.Spec.Config, field.NewPath("spec", "config"))
	return append(errs, cerrs...)
}

func validateIPLease(l *IPLease) field.ErrorList {
	errs := validateObjectMeta(&l.ObjectMeta, false, field.NewPath("metadata"))
	if l.Spec.Pool == "" {
		errs = append(errs, field.Required(field.NewPath("spec", "pool"), ""))
	}
	if _, err := netip.ParsePrefix(l.Spec.Address); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("spec", "address"), l.Spec.Address, "not an address in CIDR form"))
	}
	return errs
}

// deepCopy returns a deep copy of in made by its DeepCopyInto, nil for nil.
func deepCopy[T any, PT interface {
	*T
	DeepCopyInto(*T)
}](in PT) PT {
	if in == nil {
		return nil
	}
	out := PT(new(T))
	in.DeepCopyInto(out)
	return out
}

// deepCopyItems copies a list's items, each by copyInto.
func deepCopyItems[T any](in []T, copyInto func(*T, *T)) []T {
	if in == nil {
		return nil
	}
	out := make([]T, len(in))
	for i := range in {
		copyInto(&in[i], &out[i])
	}
	return out
}

// DeepCopyInto copies the receiver into out.
func (in *NetworkAttachmentDefinition) DeepCopyInto(out *NetworkAttachmentDefinition) {
	*out = *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
}

// DeepCopy returns a deep copy.
func (in *NetworkAttachmentDefinition) DeepCopy() *NetworkAttachmentDefinition { return deepCopy(in) }

// DeepCopyObject implements runtime.Object.
func (in *NetworkAttachmentDefinition) DeepCopyObject() runtime.Object {
	if in == nil {
		return nil
	}
	return deepCopy(in)
}

// DeepCopyInto copies the receiver into out.
func (in *NetworkAttachmentDefinitionList) DeepCopyInto(out *NetworkAttachmentDefinitionList) {
	*out = *in
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = deepCopyItems(in.Items, (*NetworkAttachmentDefinition).DeepCopyInto)
}

// DeepCopyObject implements runtime.Object.
func (in *NetworkAttachmentDefinitionList) DeepCopyObject() runtime.Object {
	if in == nil {
		return nil
	}
	return deepCopy(in)
}

// DeepCopyInto copies the receiver into out.
func (in *IPLease) DeepCopyInto(out *IPLease) {
	*out = *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
}

// DeepCopy returns a deep copy.
func (in *IPLease) DeepCopy() *IPLease { return deepCopy(in) }

// DeepCopyObject implements runtime.Object.
func (in *IPLease) DeepCopyObject() runtime.Object {
	if in == nil {
		return nil
	}
	return deepCopy(in)
}

// DeepCopyInto copies the receiver into out.
func (in *IPLeaseList) DeepCopyInto(out *IPLeaseList) {
	*out = *in
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = deepCopyItems(in.Items, (*IPLease).DeepCopyInto)
}

// DeepCopyObject implements runtime.Object.
func (in *IPLeaseList) DeepCopyObject() runtime.Object {
	if in == nil {
		return nil
	}
	return deepCopy(in)
}
