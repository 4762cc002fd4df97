package virtkit

import (
	"slices"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Rule 41: a VM sets exactly one of running / runStrategy, to a valid value.
func validateVM(vm *VirtualMachine) field.ErrorList {
	errs := validateObjectMeta(&vm.ObjectMeta, true, field.NewPath("metadata"))
	sp := field.NewPath("spec")
	switch {
	case vm.Spec.Running != nil && vm.Spec.RunStrategy != nil:
		errs = append(errs, field.Invalid(sp.Child("running"), *vm.Spec.Running,
			"running and runStrategy are mutually exclusive; use runStrategy"))
	case vm.Spec.Running == nil && vm.Spec.RunStrategy == nil:
		// KubeVirt reports the missing choice at spec.running.
		errs = append(errs, field.Required(sp.Child("running"), "runStrategy must be specified"))
	case vm.Spec.RunStrategy != nil:
		rs := *vm.Spec.RunStrategy
		valid := []VirtualMachineRunStrategy{RunStrategyHalted, RunStrategyManual, RunStrategyAlways, RunStrategyRerunOnFailure, RunStrategyOnce}
		if rs == RunStrategyWaitAsReceiver {
			e := field.NotSupported(sp.Child("runStrategy"), rs, valid)
			e.Detail = "WaitAsReceiver needs decentralized live migration, which virtkit does not implement; " + e.Detail
			errs = append(errs, e)
		} else if !slices.Contains(valid, rs) {
			errs = append(errs, field.NotSupported(sp.Child("runStrategy"), rs, valid))
		}
	}
	if vm.Spec.Template == nil {
		errs = append(errs, field.Required(sp.Child("template"), "a VM needs a template"))
	} else {
		tp := sp.Child("template")
		errs = append(errs, metav1validation.ValidateLabels(vm.Spec.Template.ObjectMeta.Labels, tp.Child("metadata", "labels"))...)
		errs = append(errs, apivalidation.ValidateAnnotations(vm.Spec.Template.ObjectMeta.Annotations, tp.Child("metadata", "annotations"))...)
		// As KubeVirt's admission does, check the template as the VMIs
		// made from it will be: defaulted (on a copy; SetDefaults sets
		// only what KubeVirt's VM mutator sets).
		tmpl := vm.Spec.Template.Spec.DeepCopy()
		DefaultOptions{}.setVMISpecDefaults(tmpl, nil)
		errs = append(errs, validateVMISpec(tmpl, tp.Child("spec"))...)
	}
	errs = append(errs, validateVMMatchers(vm)...)
	seen := map[string]bool{}
	for i, dv := range vm.Spec.DataVolumeTemplates {
		p := sp.Child("dataVolumeTemplates").Index(i)
		name := dv.ObjectMeta.Name
		if name == "" {
			errs = append(errs, field.Required(p.Child("metadata", "name"), "a DataVolume template needs a name"))
		} else if seen[name] {
			errs = append(errs, field.Duplicate(p.Child("metadata", "name"), name))
		}
		seen[name] = true
		errs = append(errs, validateDataVolumeSpec(&dv.Spec, p.Child("spec"))...)
	}
	return errs
}

// Rule 41 (VMIRS): selector required and matching the template's labels.
func validateReplicaSet(rs *VirtualMachineInstanceReplicaSet) field.ErrorList {
	errs := validateObjectMeta(&rs.ObjectMeta, true, field.NewPath("metadata"))
	sp := field.NewPath("spec")
	if rs.Spec.Replicas != nil && *rs.Spec.Replicas < 0 {
		errs = append(errs, field.Invalid(sp.Child("replicas"), *rs.Spec.Replicas, "must be greater than or equal to 0"))
	}
	var selector labels.Selector
	if rs.Spec.Selector == nil {
		errs = append(errs, field.Required(sp.Child("selector"), "a replica set needs a selector"))
	} else {
		serrs := metav1validation.ValidateLabelSelector(rs.Spec.Selector, metav1validation.LabelSelectorValidationOptions{}, sp.Child("selector"))
		errs = append(errs, serrs...)
		if len(serrs) == 0 {
			s, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
			switch {
			case err != nil:
				errs = append(errs, field.Invalid(sp.Child("selector"), rs.Spec.Selector, err.Error()))
			case s.Empty():
				errs = append(errs, field.Invalid(sp.Child("selector"), rs.Spec.Selector, "an empty selector would select every VMI"))
			default:
				selector = s
			}
		}
	}
	if rs.Spec.Template == nil {
		return append(errs, field.Required(sp.Child("template"), "a replica set needs a template"))
	}
	tp := sp.Child("template")
	tl := rs.Spec.Template.ObjectMeta.Labels
	if len(tl) == 0 {
		errs = append(errs, field.Required(tp.Child("metadata", "labels"), "the template needs labels for the selector to match"))
	} else {
		errs = append(errs, metav1validation.ValidateLabels(tl, tp.Child("metadata", "labels"))...)
		if selector != nil && !selector.Matches(labels.Set(tl)) {
			errs = append(errs, field.Invalid(sp.Child("selector"), rs.Spec.Selector, "selector does not match labels."))
		}
	}
	return append(errs, validateVMISpec(&rs.Spec.Template.Spec, tp.Child("spec"))...)
}

func validateMigration(m *VirtualMachineInstanceMigration) field.ErrorList {
	errs := validateObjectMeta(&m.ObjectMeta, true, field.NewPath("metadata"))
	sp := field.NewPath("spec")
	if m.Spec.VMIName == "" {
		errs = append(errs, field.Required(sp.Child("vmiName"), "the VMI to migrate"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(m.Spec.VMIName) {
			errs = append(errs, field.Invalid(sp.Child("vmiName"), m.Spec.VMIName, msg))
		}
	}
	if p := m.Spec.Priority; p != nil {
		valid := []MigrationPriority{PrioritySystemCritical, PriorityUserTriggered, PrioritySystemMaintenance}
		if !slices.Contains(valid, *p) {
			errs = append(errs, field.NotSupported(sp.Child("priority"), *p, valid))
		}
	}
	for k, v := range m.Spec.AddedNodeSelector {
		errs = append(errs, validateLabelPair(k, v, sp.Child("addedNodeSelector").Key(k))...)
	}
	return errs
}

func validateMigrationPolicy(mp *MigrationPolicy) field.ErrorList {
	errs := validateObjectMeta(&mp.ObjectMeta, false, field.NewPath("metadata"))
	sp := field.NewPath("spec")
	// KubeVirt's CRD schema requires spec.selectors (the API server checks
	// it before KubeVirt's webhook, which does not).
	if mp.Spec.Selectors == nil {
		errs = append(errs, field.Required(sp.Child("selectors"), "a migration policy needs selectors"))
	} else {
		for k, v := range mp.Spec.Selectors.NamespaceSelector {
			errs = append(errs, validateLabelPair(k, v, sp.Child("selectors", "namespaceSelector").Key(k))...)
		}
		for k, v := range mp.Spec.Selectors.VirtualMachineInstanceSelector {
			errs = append(errs, validateLabelPair(k, v, sp.Child("selectors", "virtualMachineInstanceSelector").Key(k))...)
		}
	}
	if q := mp.Spec.BandwidthPerMigration; q != nil && q.Sign() < 0 {
		errs = append(errs, field.Invalid(sp.Child("bandwidthPerMigration"), q.String(), "must not be negative"))
	}
	if c := mp.Spec.CompletionTimeoutPerGiB; c != nil && *c < 0 {
		errs = append(errs, field.Invalid(sp.Child("completionTimeoutPerGiB"), *c, "must not be negative"))
	}
	if d := mp.Spec.MaxDowntimeMs; d != nil && (*d < 1 || *d > 2000000) {
		errs = append(errs, field.Invalid(sp.Child("maxDowntimeMs"), *d, "must be between 1 and 2000000"))
	}
	return errs
}

func validateNode(n *Node) field.ErrorList {
	errs := validateObjectMeta(&n.ObjectMeta, false, field.NewPath("metadata"))
	// A node's name is a DNS-1123 label: it becomes a label value
	// (kubevirt.io/nodeName), a host name and a column in printed tables.
	if n.Name != "" && len(validation.IsDNS1123Subdomain(n.Name)) == 0 {
		for _, msg := range validation.IsDNS1123Label(n.Name) {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), n.Name, msg))
		}
	}
	sp := field.NewPath("spec")
	effects := []TaintEffect{TaintEffectNoSchedule, TaintEffectPreferNoSchedule, TaintEffectNoExecute}
	for i, t := range n.Spec.Taints {
		p := sp.Child("taints").Index(i)
		if t.Key == "" {
			errs = append(errs, field.Required(p.Child("key"), ""))
		} else {
			errs = append(errs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
		}
		if !slices.Contains(effects, t.Effect) {
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, effects))
		}
	}
	st := field.NewPath("status")
	errs = append(errs, validateResourceList(n.Status.Capacity, st.Child("capacity"))...)
	errs = append(errs, validateResourceList(n.Status.Allocatable, st.Child("allocatable"))...)
	return errs
}
