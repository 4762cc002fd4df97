package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// Names of the roles that carry the core v1 rules of Kubernetes'
// aggregated admin, edit and view.
const (
	AggregateToEditRole = "system:aggregate-to-edit"
	AggregateToViewRole = "system:aggregate-to-view"
)

// CoreClusterRoles returns the roles by which Kubernetes' aggregated edit
// and view get their rights on the core v1 resources virtkit serves,
// named and labelled as Kubernetes names and labels its own:
//
//   - system:aggregate-to-view reads pods (the VMIs' launcher pods);
//   - system:aggregate-to-edit writes pods and creates pods/eviction, so
//     that a user bound to edit or admin in a namespace may evict the
//     launcher pods there, which applies each VMI's eviction strategy, as
//     on Kubernetes. The pods are read-only views of the VMIs: the server
//     refuses their writes (405) whoever asks, but the rights, and what
//     kubectl auth can-i answers, are Kubernetes' (kubectl reads
//     `can-i create pods/eviction` as the pod named eviction).
//
// KubeVirt's own roles (kubevirt.io:admin, :edit, :view) name no core
// resource, on KubeVirt as here: a user bound to one of them alone evicts
// nothing, and namespace users get both through the aggregated roles.
func CoreClusterRoles() []rbacv1.ClusterRole {
	core := []string{""}
	return []rbacv1.ClusterRole{
		clusterRole(AggregateToViewRole, map[string]string{AggregateToView: "true"},
			rule(core, []string{"pods"}, "get", "list", "watch")),
		clusterRole(AggregateToEditRole, map[string]string{AggregateToEdit: "true"},
			rule(core, []string{"pods"}, "create", "delete", "deletecollection", "patch", "update"),
			rule(core, []string{"pods/eviction"}, "create")),
	}
}
