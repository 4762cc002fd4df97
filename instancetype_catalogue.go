package virtkit

import (
	"embed"
	"fmt"
	"maps"
)

// catalogueFiles holds KubeVirt's common instance types and preferences
// (see catalogue/README.md). It is read-only.
//
//go:embed catalogue/common-clusterinstancetypes.yaml catalogue/common-clusterpreferences.yaml
var catalogueFiles embed.FS

// CommonInstancetypesVersion is the release of KubeVirt's
// common-instancetypes that CommonInstancetypes returns.
const CommonInstancetypesVersion = "v1.6.0-90-g7c1e305b"

// Labels KubeVirt's catalogue objects carry.
const (
	InstancetypeVendorLabel                 = "instancetype.kubevirt.io/vendor"
	CommonInstancetypesVersionLabel         = "instancetype.kubevirt.io/common-instancetypes-version"
	ManagedByLabel                          = "app.kubernetes.io/managed-by"
	ComponentLabel                          = "app.kubernetes.io/component"
	commonInstancetypesManagedBy            = "virtkit"
	commonInstancetypesComponent            = "kubevirt"
	commonClusterInstancetypesCatalogueFile = "catalogue/common-clusterinstancetypes.yaml"
	commonClusterPreferencesCatalogueFile   = "catalogue/common-clusterpreferences.yaml"
)

// CommonInstancetypes returns KubeVirt's common catalogue as the operator
// deploys it: 65 VirtualMachineClusterInstancetypes (the u1, o1, cx1, m1,
// n1, rt1 and d1 series) followed by 57 VirtualMachineClusterPreferences
// (one per guest OS), with KubeVirt's labels (vendor kubevirt.io, the
// catalogue's version) plus app.kubernetes.io/component=kubevirt and
// app.kubernetes.io/managed-by=virtkit. Each call decodes fresh objects
// the caller may change.
func CommonInstancetypes() ([]Object, error) {
	var out []Object
	for _, name := range []string{commonClusterInstancetypesCatalogueFile, commonClusterPreferencesCatalogueFile} {
		data, err := catalogueFiles.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("common instancetypes: %w", err)
		}
		objs, err := DecodeBytes(data)
		if err != nil {
			return nil, fmt.Errorf("common instancetypes: %s: %w", name, err)
		}
		for _, o := range objs {
			labels := maps.Clone(o.GetLabels())
			if labels == nil {
				labels = map[string]string{}
			}
			labels[ManagedByLabel] = commonInstancetypesManagedBy
			labels[ComponentLabel] = commonInstancetypesComponent
			o.SetLabels(labels)
		}
		out = append(out, objs...)
	}
	return out, nil
}
