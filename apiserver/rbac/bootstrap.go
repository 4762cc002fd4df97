package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Well-known groups.
const (
	// AdminGroup may do everything (Kubernetes' system:masters), through
	// the cluster-admin binding of [Bootstrap].
	AdminGroup = "system:masters"
	// ControlPlaneGroup is virtkit's controllers and scheduler when they
	// use the API; it may do everything, as AdminGroup.
	ControlPlaneGroup = "system:virtkit:control-plane"
	// NodesGroup is the node agents' group: user system:node:NAME in
	// system:nodes, as Kubernetes names its kubelets.
	NodesGroup = "system:nodes"
	// AuthenticatedGroup is every authenticated user's group; the server's
	// authenticator must add it (k8s.io/apiserver's
	// group.NewAuthenticatedGroupAdder does).
	AuthenticatedGroup = "system:authenticated"
	// UnauthenticatedGroup is the anonymous user's group.
	UnauthenticatedGroup = "system:unauthenticated"
)

// Names of the built-in cluster roles and bindings.
const (
	ClusterAdmin     = "cluster-admin"
	Discovery        = "system:discovery"
	BasicUser        = "system:basic-user"
	PublicInfoViewer = "system:public-info-viewer"
	KubeVirtDefault  = "kubevirt.io:default"
	KubeVirtAdmin    = "kubevirt.io:admin"
	KubeVirtEdit     = "kubevirt.io:edit"
	KubeVirtView     = "kubevirt.io:view"
	InstancetypeView = "instancetype.kubevirt.io:view"
	NodeRole         = "virtkit.io:node"
	ControlPlane     = "virtkit.io:control-plane"
	Admin            = "admin"
	Edit             = "edit"
	View             = "view"
)

// Labels by which the admin, edit and view cluster roles aggregate
// others, as in Kubernetes.
const (
	AggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	AggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	AggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
)

func rule(groups, resources []string, verbs ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: groups, Resources: resources, Verbs: verbs}
}

func urls(paths []string, verbs ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{NonResourceURLs: paths, Verbs: verbs}
}

func clusterRole(name string, labels map[string]string, rules ...rbacv1.PolicyRule) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Rules:      rules,
	}
}

func aggregatedRole(name string, labels map[string]string, selectLabel string) rbacv1.ClusterRole {
	r := clusterRole(name, labels)
	r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
		{MatchLabels: map[string]string{selectLabel: "true"}},
	}}
	return r
}

// ClusterRoleBinding returns a binding of the cluster role to groups.
func ClusterRoleBinding(name, role string, groups ...string) rbacv1.ClusterRoleBinding {
	b := rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
	}
	for _, g := range groups {
		b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: g})
	}
	return b
}

// Bootstrap returns the built-in policy, which [New] is usually given
// together with a deployment's own:
//
//   - cluster-admin (everything, every non-resource URL) bound to
//     [AdminGroup] and, as virtkit.io:control-plane, to [ControlPlaneGroup];
//   - system:discovery (GET /api, /apis, /version, /openapi/*, /healthz,
//     /livez, /readyz) and system:basic-user (create
//     SelfSubjectAccessReview, SelfSubjectRulesReview, SelfSubjectReview)
//     bound to [AuthenticatedGroup]; system:public-info-viewer (GET
//     /healthz, /livez, /readyz, /version) bound to it and to
//     [UnauthenticatedGroup];
//   - KubeVirt's cluster roles kubevirt.io:admin, kubevirt.io:edit,
//     kubevirt.io:view, instancetype.kubevirt.io:view and kubevirt.io:default
//     (bound to everyone, as KubeVirt binds it), see [KubeVirtClusterRoles];
//   - CDI's cluster roles cdi.kubevirt.io:admin, :edit, :view and
//     :config-reader (bound to [AuthenticatedGroup]), see [CDIClusterRoles];
//   - Kubernetes' aggregated admin, edit and view, which gather the
//     kubevirt.io and cdi.kubevirt.io roles by their aggregate-to-* labels (view into edit into
//     admin), for RoleBindings in a namespace, and the core v1 rules of
//     system:aggregate-to-view (read pods, configmaps, serviceaccounts,
//     claims, events, the namespace) and system:aggregate-to-edit (write
//     those and secrets, create pods/eviction), see [CoreClusterRoles];
//   - virtkit.io:node, what node agents read and write, bound to
//     [NodesGroup], see [NodeClusterRole].
func Bootstrap() *Policy {
	p := &Policy{}
	p.ClusterRoles = append(p.ClusterRoles,
		clusterRole(ClusterAdmin, nil,
			rule([]string{"*"}, []string{"*"}, "*"),
			urls([]string{"*"}, "*")),
		clusterRole(Discovery, nil,
			urls([]string{"/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*",
				"/readyz", "/version", "/version/"}, "get")),
		clusterRole(PublicInfoViewer, nil,
			urls([]string{"/healthz", "/livez", "/readyz", "/version", "/version/"}, "get")),
		clusterRole(BasicUser, nil,
			rule([]string{"authorization.k8s.io"}, []string{"selfsubjectaccessreviews", "selfsubjectrulesreviews"}, "create"),
			rule([]string{"authentication.k8s.io"}, []string{"selfsubjectreviews"}, "create")),
		aggregatedRole(Admin, nil, AggregateToAdmin),
		aggregatedRole(Edit, map[string]string{AggregateToAdmin: "true"}, AggregateToEdit),
		aggregatedRole(View, map[string]string{AggregateToEdit: "true"}, AggregateToView),
		NodeClusterRole(),
	)
	p.ClusterRoles = append(p.ClusterRoles, KubeVirtClusterRoles()...)
	p.ClusterRoles = append(p.ClusterRoles, CDIClusterRoles()...)
	p.ClusterRoles = append(p.ClusterRoles, CoreClusterRoles()...)
	p.ClusterRoleBindings = append(p.ClusterRoleBindings,
		ClusterRoleBinding(ClusterAdmin, ClusterAdmin, AdminGroup),
		ClusterRoleBinding(ControlPlane, ClusterAdmin, ControlPlaneGroup),
		ClusterRoleBinding(Discovery, Discovery, AuthenticatedGroup),
		ClusterRoleBinding(BasicUser, BasicUser, AuthenticatedGroup),
		ClusterRoleBinding(PublicInfoViewer, PublicInfoViewer, AuthenticatedGroup, UnauthenticatedGroup),
		ClusterRoleBinding(KubeVirtDefault, KubeVirtDefault, AuthenticatedGroup, UnauthenticatedGroup),
		ClusterRoleBinding(NodeRole, NodeRole, NodesGroup),
		ClusterRoleBinding(CDIConfigReader, CDIConfigReader, AuthenticatedGroup),
	)
	return p
}

// NodeClusterRole returns virtkit.io:node, the rights of node agents:
// read the VMs, VMIs, migrations and migration policies, the config
// maps, secrets, service accounts and data volumes a VMI's disks come
// from; update VMIs (finalizers, the placement label in a migration's
// handover) and write their status; register their Node, update it and
// write its status; manage IP leases; record events. Which VMIs and which
// Node an agent may write is narrowed further by the server's admission,
// not here: RBAC cannot name "the VMIs on my node".
func NodeClusterRole() rbacv1.ClusterRole {
	read := []string{"get", "list", "watch"}
	return clusterRole(NodeRole, nil,
		rule([]string{"kubevirt.io"}, []string{"virtualmachineinstances"}, "get", "list", "watch", "update", "patch"),
		rule([]string{"kubevirt.io"}, []string{"virtualmachineinstances/status"}, "get", "update", "patch"),
		rule([]string{"kubevirt.io"}, []string{"virtualmachines", "virtualmachineinstancemigrations"}, read...),
		rule([]string{"migrations.kubevirt.io"}, []string{"migrationpolicies"}, read...),
		rule([]string{"virtkit.io"}, []string{"nodes"}, "get", "list", "watch", "create", "update", "patch"),
		rule([]string{"virtkit.io"}, []string{"nodes/status"}, "get", "update", "patch"),
		rule([]string{"virtkit.io"}, []string{"ipleases"}, "get", "list", "watch", "create", "update", "patch", "delete"),
		rule([]string{""}, []string{"configmaps", "secrets", "serviceaccounts"}, read...),
		rule([]string{"cdi.kubevirt.io"}, []string{"datavolumes"}, read...),
		rule([]string{"", "events.k8s.io"}, []string{"events"}, "create", "update", "patch"),
	)
}
