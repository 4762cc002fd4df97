package virtkit

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks obj against KubeVirt's admission rules for the kinds and
// fields virtkit supports (each rule numbered in the
// comments below) and returns every problem with its full path from the
// object root. It does not default; call SetDefaults first, as KubeVirt's
// webhooks do. Objects of foreign types give one error.
func Validate(obj Object) field.ErrorList {
	switch t := obj.(type) {
	case *VirtualMachineInstance:
		errs := validateObjectMeta(&t.ObjectMeta, true, field.NewPath("metadata"))
		errs = append(errs, validateVMISpecOf(&t.Spec, field.NewPath("spec"), true)...)
		return append(errs, memoryRequired(&t.Spec, field.NewPath("spec"))...)
	case *VirtualMachine:
		return validateVM(t)
	case *VirtualMachineInstanceReplicaSet:
		return validateReplicaSet(t)
	case *VirtualMachineInstanceMigration:
		return validateMigration(t)
	case *MigrationPolicy:
		return validateMigrationPolicy(t)
	case *Node:
		return validateNode(t)
	case *DataVolume:
		return validateDataVolume(t)
	case *Event:
		return validateEvent(t)
	case *NetworkAttachmentDefinition:
		return validateNetworkAttachmentDefinition(t)
	case *IPLease:
		return validateIPLease(t)
	case *corev1.ConfigMap:
		return validateConfigMap(t)
	case *corev1.Secret:
		return validateSecret(t)
	case *corev1.ServiceAccount:
		return validateServiceAccount(t)
	case *VirtualMachineInstancetype:
		return validateInstancetype(&t.ObjectMeta, true, &t.Spec)
	case *VirtualMachineClusterInstancetype:
		return validateInstancetype(&t.ObjectMeta, false, &t.Spec)
	case *VirtualMachinePreference:
		return validatePreference(&t.ObjectMeta, true, &t.Spec)
	case *VirtualMachineClusterPreference:
		return validatePreference(&t.ObjectMeta, false, &t.Spec)
	case *ControllerRevision:
		return validateControllerRevision(t)
	case *VirtualMachineSnapshot:
		return validateSnapshot(t)
	case *VirtualMachineSnapshotContent:
		return validateSnapshotContent(t)
	case *VirtualMachineRestore:
		return validateRestore(t)
	case *VirtualMachineClone:
		return validateClone(t)
	case *VirtualMachineExport:
		return validateExport(t)
	case *KubeVirt:
		return validateKubeVirt(t)
	case nil:
		return field.ErrorList{field.Required(nil, "no object")}
	}
	return field.ErrorList{field.NotSupported(field.NewPath("kind"), fmt.Sprintf("%T", obj), knownKindNames())}
}

func knownKindNames() []string {
	var out []string
	for _, k := range kinds() {
		out = append(out, k.gvk.Kind)
	}
	return out
}

func validateObjectMeta(meta *metav1.ObjectMeta, namespaced bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case meta.Name == "" && meta.GenerateName == "":
		errs = append(errs, field.Required(p.Child("name"), "name or generateName is required"))
	case meta.Name != "":
		for _, msg := range validation.IsDNS1123Subdomain(meta.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), meta.Name, msg))
		}
	}
	if meta.Namespace != "" {
		if !namespaced {
			errs = append(errs, field.Forbidden(p.Child("namespace"), "not allowed on this cluster-scoped kind"))
		} else {
			for _, msg := range validation.IsDNS1123Label(meta.Namespace) {
				errs = append(errs, field.Invalid(p.Child("namespace"), meta.Namespace, msg))
			}
		}
	}
	errs = append(errs, metav1validation.ValidateLabels(meta.Labels, p.Child("labels"))...)
	errs = append(errs, apivalidation.ValidateAnnotations(meta.Annotations, p.Child("annotations"))...)
	errs = append(errs, apivalidation.ValidateFinalizers(meta.Finalizers, p.Child("finalizers"))...)
	return errs
}

func validateLabelPair(k, v string, p *field.Path) field.ErrorList {
	return metav1validation.ValidateLabels(map[string]string{k: v}, p)
}

func validateResourceList(list ResourceList, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedResourceNames(list) {
		q := list[name]
		if name != ResourceCPU && name != ResourceMemory {
			errs = append(errs, field.NotSupported(p.Child(string(name)), name, []ResourceName{ResourceCPU, ResourceMemory}))
			continue
		}
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(p.Child(string(name)), q.String(), "must be greater than or equal to 0"))
		}
		errs = append(errs, validateQuantityRange(name, q, p.Child(string(name)))...)
	}
	return errs
}

func sortedResourceNames(list ResourceList) []ResourceName {
	names := make([]ResourceName, 0, len(list))
	for n := range list {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func countSet(b ...bool) int {
	n := 0
	for _, v := range b {
		if v {
			n++
		}
	}
	return n
}
