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
// named and labelled as Kubernetes names and labels its own, with the
// rules Kubernetes gives them on those resources:
//
//   - system:aggregate-to-view reads (get, list, watch) pods (the VMIs'
//     launcher pods), configmaps, serviceaccounts, persistentvolumeclaims,
//     events, the namespace and its status; not secrets;
//   - system:aggregate-to-edit reads secrets, writes (create, update,
//     patch, delete, deletecollection) pods, configmaps, secrets,
//     serviceaccounts, persistentvolumeclaims and events, and creates
//     pods/eviction, so that a user bound to edit or admin in a namespace
//     may evict the launcher pods there, which applies each VMI's eviction
//     strategy, as on Kubernetes.
//
// Edit gathers view and admin gathers edit, so admin and edit read and
// write all of these, view reads all but secrets. Some of the resources
// are read-only views (pods, events; claims but upload claims): the
// server refuses their writes (405 or 422) whoever asks, but the rights,
// and what kubectl auth can-i answers, are Kubernetes' (kubectl reads
// `can-i create pods/eviction` as the pod named eviction). Rules Kubernetes
// gives on what virtkit does not serve (services, replication
// controllers, serviceaccounts/token, impersonation) are left out.
//
// KubeVirt's own roles (kubevirt.io:admin, :edit, :view) name no core
// resource, on KubeVirt as here: a user bound to one of them alone reads
// no ConfigMap and evicts nothing; namespace users get both through the
// aggregated roles.
func CoreClusterRoles() []rbacv1.ClusterRole {
	core := []string{""}
	read := []string{"get", "list", "watch"}
	write := []string{"create", "delete", "deletecollection", "patch", "update"}
	return []rbacv1.ClusterRole{
		clusterRole(AggregateToViewRole, map[string]string{AggregateToView: "true"},
			rule(core, []string{"configmaps", "persistentvolumeclaims", "pods", "serviceaccounts"}, read...),
			rule(core, []string{"events", "namespaces/status"}, read...),
			rule(core, []string{"namespaces"}, read...)),
		clusterRole(AggregateToEditRole, map[string]string{AggregateToEdit: "true"},
			rule(core, []string{"secrets"}, read...),
			rule(core, []string{"pods"}, write...),
			rule(core, []string{"pods/eviction"}, "create"),
			rule(core, []string{"configmaps", "events", "persistentvolumeclaims", "secrets", "serviceaccounts"}, write...)),
	}
}
