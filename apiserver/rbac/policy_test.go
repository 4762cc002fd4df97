package rbac_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/virtkit/virtkit/apiserver/rbac"
)

func TestParsePolicy(t *testing.T) {
	const binding = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: b}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: r}
subjects: [{kind: User, name: u}]
`
	const role = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: r}
rules: [{apiGroups: [""], resources: [secrets], verbs: [get]}]
`
	tests := []struct {
		name    string
		in      string
		wantErr string // "" for success
		roles   int
		binds   int
	}{
		{"multi-document YAML", "# policy\n---\n" + role + "---\n" + binding + "---\n", "", 1, 1},
		{"JSON", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"r"},` +
			`"rules":[{"apiGroups":[""],"resources":["secrets"],"verbs":["get"]}]}`, "", 1, 0},
		{"List", "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(role, "\n", "\n  ") + "\n", "", 1, 0},
		{"empty", "", "", 0, 0},
		{"unknown field with its path", strings.Replace(role, "verbs:", "verbz:", 1), `unknown field "rules[0].verbz"`, 0, 0},
		{"unknown top-level field", role + "extra: 1\n", `unknown field "extra"`, 0, 0},
		{"duplicate field", role + "rules: []\n", `line 5: key "rules" already set`, 0, 0},
		{"unsupported kind", "apiVersion: rbac.authorization.k8s.io/v1\nkind: Pod\nmetadata: {name: p}\n", `kind: Unsupported value: "Pod"`, 0, 0},
		{"unsupported apiVersion", "apiVersion: rbac.authorization.k8s.io/v1beta1\nkind: Role\n", `apiVersion: Unsupported value`, 0, 0},
		{"document number in decoding errors", role + "---\n" + strings.Replace(binding, "subjects:", "subjectz:", 1),
			`document 1 (ClusterRoleBinding): unknown field "subjectz"`, 0, 0},
		{"verbs required", strings.Replace(role, "verbs: [get]", "verbs: []", 1), `rules[0].verbs: Required value`, 0, 0},
		{"resource rule needs apiGroups", strings.Replace(role, `apiGroups: [""], `, "", 1), `rules[0].apiGroups: Required value`, 0, 0},
		{"no URLs in a Role", "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: r, namespace: ns1}\n" +
			"rules: [{nonResourceURLs: [/x], verbs: [get]}]\n", `namespaced rules cannot apply to non-resource URLs`, 0, 0},
		{"URLs and resources apart", "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r}\n" +
			"rules: [{nonResourceURLs: [/x], resources: [a], verbs: [get]}]\n", `both regular resources and non-resource URLs`, 0, 0},
		{"Role needs a namespace", "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: r}\n", `metadata.namespace: Required value`, 0, 0},
		{"ClusterRoleBinding refers to ClusterRoles", strings.Replace(binding, "kind: ClusterRole,", "kind: Role,", 1),
			`roleRef.kind: Unsupported value: "Role"`, 0, 0},
		{"subject kind", strings.Replace(binding, "kind: User", "kind: Robot", 1), `subjects[0].kind: Unsupported value: "Robot"`, 0, 0},
		{"service account namespace in a ClusterRoleBinding", strings.Replace(binding, "kind: User", "kind: ServiceAccount", 1),
			`subjects[0].namespace: Required value`, 0, 0},
		{"bad aggregation selector", "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: a}\n" +
			"aggregationRule: {clusterRoleSelectors: [{matchExpressions: [{key: k, operator: Bad}]}]}\n",
			`aggregationRule.clusterRoleSelectors[0]`, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := rbac.ParsePolicy(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				require.ErrorIs(t, err, rbac.ErrPolicy)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Len(t, p.ClusterRoles, tt.roles)
			assert.Len(t, p.ClusterRoleBindings, tt.binds)
		})
	}
}

func TestParsePolicyTooLarge(t *testing.T) {
	big := strings.Repeat("#", rbac.MaxPolicyBytes+1)
	_, err := rbac.ParsePolicy(strings.NewReader(big))
	require.ErrorIs(t, err, rbac.ErrPolicy)
	assert.Contains(t, err.Error(), "larger than")
}

func TestLoadPolicyFile(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "policy.yaml")
	require.NoError(t, os.WriteFile(f, []byte("apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: r}\n"), 0o600))
	_, err := rbac.LoadPolicyFile(f)
	require.ErrorIs(t, err, rbac.ErrPolicy)
	assert.Contains(t, err.Error(), f)
	_, err = rbac.LoadPolicyFile(filepath.Join(dir, "missing"))
	require.ErrorIs(t, err, rbac.ErrPolicy)
}

func TestNewRefusesInconsistentPolicies(t *testing.T) {
	tests := []struct {
		name, in, wantErr string
	}{
		{"binding to a missing cluster role", `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: b, namespace: ns1}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "kubevirt.io:edti"}
subjects: [{kind: User, name: u}]
`, `RoleBinding "ns1/b": roleRef.name: Not found: clusterrole.rbac.authorization.k8s.io "kubevirt.io:edti" not found`},
		{"binding to a Role of another namespace", `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: r, namespace: other}
rules: [{apiGroups: [""], resources: [secrets], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: b, namespace: ns1}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: r}
subjects: [{kind: User, name: u}]
`, `role.rbac.authorization.k8s.io "r" not found`},
		{"redefined built-in role", `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "kubevirt.io:edit"}
rules: [{apiGroups: ["*"], resources: ["*"], verbs: ["*"]}]
`, `ClusterRole "kubevirt.io:edit": metadata.name: Duplicate value`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := rbac.ParsePolicy(strings.NewReader(tt.in))
			require.NoError(t, err)
			_, err = rbac.New(rbac.Bootstrap(), p)
			require.ErrorIs(t, err, rbac.ErrPolicy)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestNewCopiesPolicies(t *testing.T) {
	p := rbac.Bootstrap()
	a, err := rbac.New(p)
	require.NoError(t, err)
	p.ClusterRoleBindings[0].Subjects[0].Name = "everyone"
	d, _, err := a.Authorize(context.Background(), path(u("x", "everyone"), "get", "/anything"))
	require.NoError(t, err)
	assert.Equal(t, authorizer.DecisionNoOpinion, d)
}

func TestAggregateChainsAndCycles(t *testing.T) {
	p, err := rbac.ParsePolicy(strings.NewReader(`
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: a, labels: {x: "1"}}
aggregationRule: {clusterRoleSelectors: [{matchLabels: {y: "1"}}]}
rules: [{apiGroups: [""], resources: [ignored], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: b, labels: {y: "1"}}
aggregationRule: {clusterRoleSelectors: [{matchLabels: {x: "1"}}, {matchLabels: {z: "1"}}]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: c, labels: {z: "1"}}
rules: [{apiGroups: [""], resources: [pods], verbs: [get]}, {apiGroups: [""], resources: [pods], verbs: [get]}]
`))
	require.NoError(t, err)
	require.NoError(t, rbac.Aggregate(p))
	byName := map[string]int{}
	for _, r := range p.ClusterRoles {
		byName[r.Name] = len(r.Rules)
	}
	// b gathers c (once: equal rules count once); a gathers b; the
	// rules a lists itself are replaced.
	assert.Equal(t, map[string]int{"a": 1, "b": 1, "c": 2}, byName)
	assert.Equal(t, []string{"pods"}, p.ClusterRoles[0].Rules[0].Resources)
}
