package virtkit

import (
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Rule E1: an export's source is a VirtualMachine (apiGroup kubevirt.io),
// a VirtualMachineSnapshot (apiGroup snapshot.kubevirt.io) or a
// PersistentVolumeClaim (the core group: apiGroup "" or unset) with a
// name; a token Secret, when named, has a DNS subdomain name; the TTL is
// not negative.
func validateExport(e *VirtualMachineExport) field.ErrorList {
	errs := validateObjectMeta(&e.ObjectMeta, true, field.NewPath("metadata"))
	sp := field.NewPath("spec")
	p := sp.Child("source")
	src := e.Spec.Source
	group, known := "", true
	switch src.Kind {
	case KindVirtualMachine:
		group = GroupName
	case KindVirtualMachineSnapshot:
		group = SnapshotGroupName
	case "PersistentVolumeClaim":
	default:
		known = false
		errs = append(errs, field.NotSupported(p.Child("kind"), src.Kind,
			[]string{KindVirtualMachine, KindVirtualMachineSnapshot, "PersistentVolumeClaim"}))
	}
	if known {
		got := ""
		if src.APIGroup != nil {
			got = *src.APIGroup
		}
		switch {
		case group != "" && src.APIGroup == nil:
			errs = append(errs, field.Required(p.Child("apiGroup"), "missing apiGroup"))
		case got != group:
			errs = append(errs, field.NotSupported(p.Child("apiGroup"), got, []string{group}))
		}
	}
	if src.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "name of the source"))
	}
	if ref := e.Spec.TokenSecretRef; ref != nil {
		for _, msg := range validation.IsDNS1123Subdomain(*ref) {
			errs = append(errs, field.Invalid(sp.Child("tokenSecretRef"), *ref, msg))
		}
	}
	if ttl := e.Spec.TTLDuration; ttl != nil && ttl.Duration < 0 {
		errs = append(errs, field.Invalid(sp.Child("ttlDuration"), ttl.Duration.String(), "must not be negative"))
	}
	return errs
}
