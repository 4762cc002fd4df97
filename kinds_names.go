package virtkit

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// KindNames are the names a kind is served and typed under, as its CRD (or
// Kubernetes' built-in resource) declares them: the resource's plural and
// singular, its short names (kubectl get vm, vmsnapshot, kv ...) and its
// categories (kubectl get all).
//
// +kubebuilder:object:generate=false
// +k8s:openapi-gen=false
type KindNames struct {
	Kind       string
	Plural     string
	Singular   string
	ShortNames []string
	Categories []string
}

// NamesOf returns the names of a kind: the lower-cased kind as singular,
// its English plural, and the short names and categories KubeVirt's and
// CDI's CRDs declare. The API server's discovery serves them and the CLI
// resolves what a user types with them.
func NamesOf(kind string) KindNames {
	singular := strings.ToLower(kind)
	return KindNames{
		Kind:       kind,
		Plural:     pluralOf(singular),
		Singular:   singular,
		ShortNames: ShortNames(kind),
		Categories: categoriesOf(kind),
	}
}

// Names lists every name a user may type for the kind: plural, singular,
// short names and the kind itself, all lower-case, plural first.
func (n KindNames) Names() []string {
	out := []string{n.Plural, n.Singular}
	out = append(out, n.ShortNames...)
	if k := strings.ToLower(n.Kind); k != n.Singular {
		out = append(out, k)
	}
	return out
}

// KindForName returns the known kind a user typed (kubectl's resource
// argument): its plural, singular, a short name or the kind, in any case.
func KindForName(name string) (schema.GroupVersionKind, bool) {
	name = strings.ToLower(name)
	for _, gvk := range KnownKinds() {
		for _, n := range NamesOf(gvk.Kind).Names() {
			if n == name {
				return gvk, true
			}
		}
	}
	return schema.GroupVersionKind{}, false
}

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

// pluralOf adds the English plural ending to a lower-cased kind.
func pluralOf(l string) string {
	switch {
	case strings.HasSuffix(l, "y") && !strings.HasSuffix(l, "ey"):
		return l[:len(l)-1] + "ies"
	case strings.HasSuffix(l, "s"):
		return l + "es"
	}
	return l + "s"
}

// categoriesOf returns the categories of a kind: KubeVirt's and CDI's
// kinds are in "all" (kubectl get all lists them); events, nodes and the
// core kinds are not.
func categoriesOf(kind string) []string {
	switch kind {
	case KindEvent, KindNode, KindConfigMap, KindSecret, KindServiceAccount, KindNamespace:
		return nil
	}
	return []string{"all"}
}
