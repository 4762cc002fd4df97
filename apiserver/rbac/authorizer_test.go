package rbac_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/virtkit/virtkit/apiserver/rbac"
)

// testPolicy binds the built-in roles and a few of its own to users of
// the table below.
const testPolicy = `
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-edit, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "kubevirt.io:edit"}
subjects: [{kind: User, name: alice}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bob-view, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "kubevirt.io:view"}
subjects: [{kind: User, name: bob}, {kind: ServiceAccount, name: builder}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: ops-admin}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "kubevirt.io:admin"}
subjects: [{kind: Group, name: ops}]
---
apiVersion: v1
kind: List
items:
- apiVersion: rbac.authorization.k8s.io/v1
  kind: RoleBinding
  metadata: {name: carol-admin, namespace: team-a}
  roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}
  subjects: [{kind: User, name: carol}]
- apiVersion: rbac.authorization.k8s.io/v1
  kind: RoleBinding
  metadata: {name: ed-edit, namespace: team-a}
  roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
  subjects: [{kind: User, name: ed}]
- apiVersion: rbac.authorization.k8s.io/v1
  kind: RoleBinding
  metadata: {name: hank-view, namespace: team-a}
  roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
  subjects: [{kind: User, name: hank}]
- apiVersion: rbac.authorization.k8s.io/v1
  kind: ClusterRole
  metadata:
    name: widgets-view
    labels: {rbac.authorization.k8s.io/aggregate-to-view: "true"}
  rules: [{apiGroups: [example.com], resources: [widgets], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: one-vm, namespace: team-a}
rules:
- {apiGroups: [kubevirt.io], resources: [virtualmachines, virtualmachines/status], resourceNames: [vm1], verbs: [get, update]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: dave-one-vm, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: one-vm}
subjects: [{kind: User, name: dave}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: metrics}
rules: [{nonResourceURLs: [/metrics, /debug/*], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: erin-metrics}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: metrics}
subjects: [{kind: User, name: erin}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: status-writer}
rules: [{apiGroups: ["*"], resources: ["*/status"], verbs: [update, patch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: frank-status, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: status-writer}
subjects: [{kind: User, name: frank}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: reader}
rules: [{apiGroups: ["*"], resources: ["*"], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: gina-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: reader}
subjects: [{kind: User, name: gina}]
`

func newTestAuthorizer(t *testing.T) *rbac.Authorizer {
	t.Helper()
	p, err := rbac.ParsePolicy(strings.NewReader(testPolicy))
	require.NoError(t, err)
	a, err := rbac.New(rbac.Bootstrap(), p)
	require.NoError(t, err)
	return a
}

func u(name string, groups ...string) user.Info {
	return &user.DefaultInfo{Name: name, Groups: append(groups, rbac.AuthenticatedGroup)}
}

// res is a resource request: verb group resource[/subresource] in ns, of name.
func res(usr user.Info, verb, ns, group, resource, name string) authorizer.AttributesRecord {
	r, sub, _ := strings.Cut(resource, "/")
	return authorizer.AttributesRecord{User: usr, Verb: verb, Namespace: ns, APIGroup: group,
		Resource: r, Subresource: sub, Name: name, ResourceRequest: true}
}

func path(usr user.Info, verb, p string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: usr, Verb: verb, Path: p}
}

func TestAuthorize(t *testing.T) {
	a := newTestAuthorizer(t)
	const kv, sub, vk = "kubevirt.io", "subresources.kubevirt.io", "virtkit.io"
	var (
		alice, bob, ops   = u("alice"), u("bob"), u("ops-1", "ops")
		carol, hank, dave = u("carol"), u("hank"), u("dave")
		erin, frank, gina = u("erin"), u("frank"), u("gina")
		ed                = u("ed")
		node              = u("system:node:n1", rbac.NodesGroup)
		root              = u("root", rbac.AdminGroup)
		cp                = u("controller", rbac.ControlPlaneGroup)
		anon              = &user.DefaultInfo{Name: "system:anonymous", Groups: []string{rbac.UnauthenticatedGroup}}
		saBuilder         = u("system:serviceaccount:team-a:builder")
		saElsewhere       = u("system:serviceaccount:team-b:builder")
	)
	tests := []struct {
		name  string
		attrs authorizer.AttributesRecord
		allow bool
	}{
		// kubevirt.io:edit through a RoleBinding: its namespace only.
		{"edit creates VMs", res(alice, "create", "team-a", kv, "virtualmachines", ""), true},
		{"edit deletes VMIs", res(alice, "delete", "team-a", kv, "virtualmachineinstances", "x"), true},
		{"edit not in another namespace", res(alice, "get", "team-b", kv, "virtualmachines", ""), false},
		{"edit not all namespaces", res(alice, "list", "", kv, "virtualmachines", ""), false},
		{"edit not deletecollection", res(alice, "deletecollection", "team-a", kv, "virtualmachines", ""), false},
		{"edit opens the console", res(alice, "get", "team-a", sub, "virtualmachineinstances/console", "x"), true},
		{"edit opens vnc", res(alice, "get", "team-a", sub, "virtualmachineinstances/vnc", "x"), true},
		{"edit pauses", res(alice, "update", "team-a", sub, "virtualmachineinstances/pause", "x"), true},
		{"edit starts VMs", res(alice, "update", "team-a", sub, "virtualmachines/start", "x"), true},
		{"edit migrates VMs", res(alice, "update", "team-a", sub, "virtualmachines/migrate", "x"), true},
		{"edit expands VM specs", res(alice, "get", "team-a", sub, "virtualmachines/expand-spec", "x"), true},
		{"edit does not write VMI status", res(alice, "update", "team-a", kv, "virtualmachineinstances/status", "x"), false},
		{"edit does not patch VMI status", res(alice, "patch", "team-a", kv, "virtualmachineinstances/status", "x"), false},
		{"console is in the subresources group only", res(alice, "get", "team-a", kv, "virtualmachineinstances/console", "x"), false},
		{"edit not nodes", res(alice, "get", "", vk, "nodes", "n1"), false},
		// kubevirt.io:view.
		{"view reads VMs", res(bob, "get", "team-a", kv, "virtualmachines", "x"), true},
		{"view watches VMIs", res(bob, "watch", "team-a", kv, "virtualmachineinstances", ""), true},
		{"view does not create", res(bob, "create", "team-a", kv, "virtualmachines", ""), false},
		{"view has no console", res(bob, "get", "team-a", sub, "virtualmachineinstances/console", "x"), false},
		{"view reads guest OS info", res(bob, "get", "team-a", sub, "virtualmachineinstances/guestosinfo", "x"), true},
		{"view does not start VMs", res(bob, "update", "team-a", sub, "virtualmachines/start", "x"), false},
		// kubevirt.io:admin through a ClusterRoleBinding: everywhere.
		{"admin deletecollection anywhere", res(ops, "deletecollection", "team-z", kv, "virtualmachines", ""), true},
		{"admin lists all namespaces", res(ops, "list", "", kv, "virtualmachineinstances", ""), true},
		{"admin does not write VMI status", res(ops, "update", "team-z", kv, "virtualmachineinstances/status", "x"), false},
		// Aggregation: admin gathers kubevirt.io:admin and edit, which gathers view.
		{"aggregated admin has kubevirt admin", res(carol, "deletecollection", "team-a", kv, "virtualmachines", ""), true},
		{"aggregated admin has the console", res(carol, "get", "team-a", sub, "virtualmachineinstances/console", "x"), true},
		{"aggregated admin has view's extras (view, edit, admin chain)", res(carol, "get", "team-a", "example.com", "widgets", "w"), true},
		{"aggregated admin not outside its namespace", res(carol, "get", "team-b", kv, "virtualmachines", ""), false},
		{"aggregated view has widgets", res(hank, "get", "team-a", "example.com", "widgets", "w"), true},
		{"aggregated view has kubevirt view", res(hank, "list", "team-a", kv, "virtualmachines", ""), true},
		{"aggregated view has no console", res(hank, "get", "team-a", sub, "virtualmachineinstances/console", "x"), false},
		{"aggregated view does not write widgets", res(hank, "update", "team-a", "example.com", "widgets", "w"), false},
		// CDI's roles, aggregated like KubeVirt's.
		{"aggregated admin creates DataVolumes", res(carol, "create", "team-a", "cdi.kubevirt.io", "datavolumes", ""), true},
		{"aggregated admin asks for upload tokens", res(carol, "create", "team-a", "upload.cdi.kubevirt.io", "uploadtokenrequests", ""), true},
		{"aggregated view reads DataVolumes", res(hank, "list", "team-a", "cdi.kubevirt.io", "datavolumes", ""), true},
		{"aggregated view asks for no upload tokens", res(hank, "create", "team-a", "upload.cdi.kubevirt.io", "uploadtokenrequests", ""), false},
		{"kubevirt.io:edit alone creates no DataVolumes", res(alice, "create", "team-a", "cdi.kubevirt.io", "datavolumes", ""), false},
		{"every user reads CDIConfig", res(alice, "get", "", "cdi.kubevirt.io", "cdiconfigs", "config"), true},
		{"anonymous reads no CDIConfig", res(anon, "get", "", "cdi.kubevirt.io", "cdiconfigs", "config"), false},
		// Core v1 pods and their eviction, as Kubernetes' aggregated roles
		// grant them: edit and admin evict, view reads, KubeVirt's roles
		// alone neither.
		{"aggregated admin evicts pods", res(carol, "create", "team-a", "", "pods/eviction", "p"), true},
		{"aggregated edit evicts pods", res(ed, "create", "team-a", "", "pods/eviction", "p"), true},
		{"aggregated edit not in another namespace", res(ed, "create", "team-b", "", "pods/eviction", "p"), false},
		{"aggregated edit only creates evictions", res(ed, "update", "team-a", "", "pods/eviction", "p"), false},
		{"aggregated edit reads pods", res(ed, "list", "team-a", "", "pods", ""), true},
		{"aggregated edit writes pods, as on Kubernetes", res(ed, "delete", "team-a", "", "pods", "p"), true},
		{"aggregated view does not write pods", res(hank, "delete", "team-a", "", "pods", "p"), false},
		{"aggregated view reads pods", res(hank, "get", "team-a", "", "pods", "p"), true},
		{"aggregated view does not evict", res(hank, "create", "team-a", "", "pods/eviction", "p"), false},
		{"eviction is in the core group only", res(ed, "create", "team-a", "policy", "pods/eviction", "p"), false},
		{"kubevirt.io:edit alone does not evict", res(alice, "create", "team-a", "", "pods/eviction", "p"), false},
		{"kubevirt.io:admin alone does not evict", res(ops, "create", "team-a", "", "pods/eviction", "p"), false},
		{"kubevirt.io:view alone reads no pods", res(bob, "get", "team-a", "", "pods", "p"), false},
		// The rest of core v1 that Kubernetes' aggregated roles grant:
		// view reads its namespace, its events and claims; edit writes
		// events (a view: the server refuses them) and reads secrets.
		{"aggregated view reads its namespace", res(hank, "get", "team-a", "", "namespaces", "team-a"), true},
		{"aggregated view reads its namespace's status", res(hank, "get", "team-a", "", "namespaces/status", "team-a"), true},
		{"aggregated view does not delete its namespace", res(hank, "delete", "team-a", "", "namespaces", "team-a"), false},
		{"aggregated edit does not delete its namespace", res(ed, "delete", "team-a", "", "namespaces", "team-a"), false},
		{"aggregated view lists events", res(hank, "list", "team-a", "", "events", ""), true},
		{"aggregated view reads no secrets", res(hank, "get", "team-a", "", "secrets", "s"), false},
		{"aggregated edit reads secrets", res(ed, "watch", "team-a", "", "secrets", ""), true},
		{"aggregated edit writes events", res(ed, "create", "team-a", "", "events", ""), true},
		{"aggregated edit writes no nodes", res(ed, "update", "", "", "nodes", "n1"), false},
		{"kubevirt.io:edit alone reads no configmaps", res(alice, "get", "team-a", "", "configmaps", "c"), false},
		// resourceNames.
		{"resourceNames grant the name", res(dave, "get", "team-a", kv, "virtualmachines", "vm1"), true},
		{"resourceNames not another name", res(dave, "get", "team-a", kv, "virtualmachines", "vm2"), false},
		{"resourceNames not a list", res(dave, "list", "team-a", kv, "virtualmachines", ""), false},
		{"resourceNames with a subresource", res(dave, "update", "team-a", kv, "virtualmachines/status", "vm1"), true},
		{"a Role in its namespace only", res(dave, "get", "team-b", kv, "virtualmachines", "vm1"), false},
		// Non-resource URLs.
		{"nonResourceURL exact", path(erin, "get", "/metrics"), true},
		{"nonResourceURL prefix", path(erin, "get", "/debug/pprof/heap"), true},
		{"nonResourceURL prefix needs the slash", path(erin, "get", "/debugger"), false},
		{"nonResourceURL verb", path(erin, "post", "/metrics"), false},
		{"nonResourceURL rules do not grant resources", res(erin, "get", "", "", "metrics", ""), false},
		{"resource rules do not grant paths", path(gina, "get", "/metrics"), false},
		// Wildcards.
		{"*/status in its namespace", res(frank, "update", "team-a", kv, "virtualmachineinstances/status", "x"), true},
		{"*/status is not the resource", res(frank, "update", "team-a", kv, "virtualmachineinstances", "x"), false},
		{"*/status is not another subresource", res(frank, "update", "team-a", sub, "virtualmachines/start", "x"), false},
		{"* resources include subresources", res(gina, "get", "team-q", sub, "virtualmachineinstances/guestosinfo", "x"), true},
		{"* resources and groups, cluster scope", res(gina, "get", "", vk, "nodes", "n1"), true},
		{"* resources, other verbs", res(gina, "update", "", vk, "nodes", "n1"), false},
		// Service accounts: the binding's namespace by default.
		{"service account of the binding's namespace", res(saBuilder, "get", "team-a", kv, "virtualmachines", "x"), true},
		{"service account of another namespace", res(saElsewhere, "get", "team-a", kv, "virtualmachines", "x"), false},
		// Node agents.
		{"node writes VMI status", res(node, "update", "team-a", kv, "virtualmachineinstances/status", "x"), true},
		{"node patches VMI status", res(node, "patch", "team-a", kv, "virtualmachineinstances/status", "x"), true},
		{"node updates VMIs (finalizers)", res(node, "update", "team-a", kv, "virtualmachineinstances", "x"), true},
		{"node watches VMIs everywhere", res(node, "watch", "", kv, "virtualmachineinstances", ""), true},
		{"node writes Node status", res(node, "update", "", vk, "nodes/status", "n1"), true},
		{"node registers its Node", res(node, "create", "", vk, "nodes", ""), true},
		{"node reads secrets", res(node, "get", "team-a", "", "secrets", "s"), true},
		{"node does not create VMs", res(node, "create", "team-a", kv, "virtualmachines", ""), false},
		{"node does not write VM status", res(node, "update", "team-a", kv, "virtualmachines/status", "x"), false},
		{"node does not delete Nodes", res(node, "delete", "", vk, "nodes", "n2"), false},
		{"node does not write secrets", res(node, "update", "team-a", "", "secrets", "s"), false},
		{"node has no console", res(node, "get", "team-a", sub, "virtualmachineinstances/console", "x"), false},
		// Bootstrap bindings.
		{"masters do everything", res(root, "update", "team-a", kv, "virtualmachineinstances/status", "x"), true},
		{"masters any path", path(root, "delete", "/anything"), true},
		{"control plane does everything", res(cp, "patch", "", vk, "nodes/status", "n1"), true},
		{"discovery /apis", path(alice, "get", "/apis"), true},
		{"discovery /apis/group", path(alice, "get", "/apis/kubevirt.io/v1"), true},
		{"discovery /openapi/v3", path(alice, "get", "/openapi/v3"), true},
		{"discovery /version", path(alice, "get", "/version"), true},
		{"discovery not /metrics", path(alice, "get", "/metrics"), false},
		{"self access review", res(alice, "create", "", "authorization.k8s.io", "selfsubjectaccessreviews", ""), true},
		{"self rules review", res(alice, "create", "", "authorization.k8s.io", "selfsubjectrulesreviews", ""), true},
		{"self review", res(alice, "create", "", "authentication.k8s.io", "selfsubjectreviews", ""), true},
		{"not others' access reviews", res(alice, "create", "", "authorization.k8s.io", "subjectaccessreviews", ""), false},
		{"kubevirt default for everyone", res(alice, "get", "", sub, "version", ""), true},
		{"anonymous healthz", path(anon, "get", "/healthz"), true},
		{"anonymous no discovery", path(anon, "get", "/apis"), false},
		{"anonymous no self review", res(anon, "create", "", "authentication.k8s.io", "selfsubjectreviews", ""), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, reason, err := a.Authorize(context.Background(), tt.attrs)
			require.NoError(t, err)
			if tt.allow {
				assert.Equal(t, authorizer.DecisionAllow, d)
				assert.Contains(t, reason, "RBAC: allowed by ")
			} else {
				assert.Equal(t, authorizer.DecisionNoOpinion, d, reason)
			}
		})
	}
}

func TestAuthorizeReasonNamesTheBinding(t *testing.T) {
	a := newTestAuthorizer(t)
	_, reason, err := a.Authorize(context.Background(), res(u("bob"), "get", "team-a", "kubevirt.io", "virtualmachines", "x"))
	require.NoError(t, err)
	assert.Equal(t, `RBAC: allowed by RoleBinding "bob-view/team-a" of ClusterRole "kubevirt.io:view" to User "bob"`, reason)
	_, reason, err = a.Authorize(context.Background(), res(u("system:serviceaccount:team-a:builder"), "get", "team-a", "kubevirt.io", "virtualmachines", "x"))
	require.NoError(t, err)
	assert.Contains(t, reason, `to ServiceAccount "builder/team-a"`)
}

func TestRulesFor(t *testing.T) {
	a := newTestAuthorizer(t)
	ctx := context.Background()
	resources := func(rules []authorizer.ResourceRuleInfo) []string {
		var out []string
		for _, r := range rules {
			out = append(out, r.GetResources()...)
		}
		return out
	}
	rr, nr, incomplete, err := a.RulesFor(ctx, u("alice"), "team-a")
	require.NoError(t, err)
	assert.False(t, incomplete)
	assert.Contains(t, resources(rr), "virtualmachineinstances/console")
	assert.NotContains(t, resources(rr), "virtualmachineinstances/status")
	require.NotEmpty(t, nr)
	assert.Contains(t, nr[0].GetNonResourceURLs(), "/apis")

	rr, _, _, err = a.RulesFor(ctx, u("alice"), "team-b")
	require.NoError(t, err)
	assert.NotContains(t, resources(rr), "virtualmachineinstances/console", "a RoleBinding of team-a")

	rr, _, _, err = a.RulesFor(ctx, u("dave"), "team-a")
	require.NoError(t, err)
	var names []string
	for _, r := range rr {
		names = append(names, r.GetResourceNames()...)
	}
	assert.Equal(t, []string{"vm1"}, names)
}
