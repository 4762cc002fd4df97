package rbac

import (
	"errors"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks every object of p on its own as Kubernetes' RBAC
// validation does: names and namespaces, rules (verbs required; a rule
// names either resources with API groups or non-resource URLs, and only a
// ClusterRole's rules name non-resource URLs), aggregation selectors, role
// references (apiGroup rbac.authorization.k8s.io; a ClusterRoleBinding
// refers to a ClusterRole) and subjects (User, Group, ServiceAccount).
// The error wraps [ErrPolicy] and names each bad field by path.
func Validate(p *Policy) error {
	var errs []error
	add := func(kind, ns, name string, list field.ErrorList) {
		if len(list) == 0 {
			return
		}
		id := name
		if ns != "" {
			id = ns + "/" + name
		}
		errs = append(errs, fmt.Errorf("%s %q: %w", kind, id, list.ToAggregate()))
	}
	for i := range p.Roles {
		r := &p.Roles[i]
		list := validateMeta(&r.ObjectMeta, true)
		for j := range r.Rules {
			list = append(list, validateRule(&r.Rules[j], true, field.NewPath("rules").Index(j))...)
		}
		add("Role", r.Namespace, r.Name, list)
	}
	for i := range p.ClusterRoles {
		r := &p.ClusterRoles[i]
		list := validateMeta(&r.ObjectMeta, false)
		for j := range r.Rules {
			list = append(list, validateRule(&r.Rules[j], false, field.NewPath("rules").Index(j))...)
		}
		if ar := r.AggregationRule; ar != nil {
			path := field.NewPath("aggregationRule", "clusterRoleSelectors")
			if len(ar.ClusterRoleSelectors) == 0 {
				list = append(list, field.Required(path, "at least one clusterRoleSelector is required if aggregationRule is non-nil"))
			}
			for j := range ar.ClusterRoleSelectors {
				if _, err := metav1.LabelSelectorAsSelector(&ar.ClusterRoleSelectors[j]); err != nil {
					list = append(list, field.Invalid(path.Index(j), ar.ClusterRoleSelectors[j], err.Error()))
				}
			}
		}
		add("ClusterRole", "", r.Name, list)
	}
	for i := range p.RoleBindings {
		b := &p.RoleBindings[i]
		list := validateMeta(&b.ObjectMeta, true)
		list = append(list, validateRoleRef(b.RoleRef, true)...)
		list = append(list, validateSubjects(b.Subjects, true)...)
		add("RoleBinding", b.Namespace, b.Name, list)
	}
	for i := range p.ClusterRoleBindings {
		b := &p.ClusterRoleBindings[i]
		list := validateMeta(&b.ObjectMeta, false)
		list = append(list, validateRoleRef(b.RoleRef, false)...)
		list = append(list, validateSubjects(b.Subjects, false)...)
		add("ClusterRoleBinding", "", b.Name, list)
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrPolicy, errors.Join(errs...))
}

func validateMeta(m *metav1.ObjectMeta, namespaced bool) field.ErrorList {
	var list field.ErrorList
	meta := field.NewPath("metadata")
	if m.Name == "" {
		list = append(list, field.Required(meta.Child("name"), ""))
	}
	switch {
	case namespaced && m.Namespace == "":
		list = append(list, field.Required(meta.Child("namespace"), ""))
	case !namespaced && m.Namespace != "":
		list = append(list, field.Forbidden(meta.Child("namespace"), "not allowed on a cluster-scoped object"))
	}
	return list
}

func validateRule(r *rbacv1.PolicyRule, namespaced bool, path *field.Path) field.ErrorList {
	var list field.ErrorList
	if len(r.Verbs) == 0 {
		list = append(list, field.Required(path.Child("verbs"), "verbs must contain at least one value"))
	}
	if len(r.NonResourceURLs) > 0 {
		if namespaced {
			list = append(list, field.Invalid(path.Child("nonResourceURLs"), r.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
		}
		if len(r.APIGroups) > 0 || len(r.Resources) > 0 || len(r.ResourceNames) > 0 {
			list = append(list, field.Invalid(path.Child("nonResourceURLs"), r.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		return list
	}
	if len(r.APIGroups) == 0 {
		list = append(list, field.Required(path.Child("apiGroups"), "resource rules must supply at least one api group"))
	}
	if len(r.Resources) == 0 {
		list = append(list, field.Required(path.Child("resources"), "resource rules must supply at least one resource"))
	}
	return list
}

func validateRoleRef(ref rbacv1.RoleRef, namespaced bool) field.ErrorList {
	var list field.ErrorList
	path := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		list = append(list, field.NotSupported(path.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	switch {
	case ref.Kind == "ClusterRole":
	case ref.Kind == "Role" && namespaced:
	case namespaced:
		list = append(list, field.NotSupported(path.Child("kind"), ref.Kind, []string{"Role", "ClusterRole"}))
	default:
		list = append(list, field.NotSupported(path.Child("kind"), ref.Kind, []string{"ClusterRole"}))
	}
	if ref.Name == "" {
		list = append(list, field.Required(path.Child("name"), ""))
	}
	return list
}

func validateSubjects(subjects []rbacv1.Subject, namespaced bool) field.ErrorList {
	var list field.ErrorList
	for i, s := range subjects {
		path := field.NewPath("subjects").Index(i)
		if s.Name == "" {
			list = append(list, field.Required(path.Child("name"), ""))
		}
		switch s.Kind {
		case rbacv1.ServiceAccountKind:
			if s.APIGroup != "" {
				list = append(list, field.NotSupported(path.Child("apiGroup"), s.APIGroup, []string{""}))
			}
			if !namespaced && s.Namespace == "" {
				list = append(list, field.Required(path.Child("namespace"), ""))
			}
		case rbacv1.UserKind, rbacv1.GroupKind:
			// An empty apiGroup is what Kubernetes defaults to this one.
			if s.APIGroup != "" && s.APIGroup != rbacv1.GroupName {
				list = append(list, field.NotSupported(path.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
			}
		default:
			list = append(list, field.NotSupported(path.Child("kind"), s.Kind,
				[]string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
		}
	}
	return list
}
