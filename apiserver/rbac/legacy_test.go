package rbac_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/virtkit/virtkit/apiserver/rbac"
)

func TestFromLegacy(t *testing.T) {
	legacy := []rbac.LegacyRule{
		{Group: "team", Namespaces: []string{"team-a", "team-c"}},
		{User: "ops", Namespaces: []string{"*"}, Verbs: []string{"update", "patch"}, Resources: []string{"*/status"}},
		{User: "reader", Namespaces: []string{"*"}, Verbs: []string{"get", "list"}, Resources: []string{"virtualmachines"}},
		{User: "wild", Namespaces: []string{"team-w"}, Verbs: []string{"*"}, Resources: []string{"*", "virtualmachineinstances/status"}},
	}
	p, err := rbac.FromLegacy(legacy, nil)
	require.NoError(t, err)
	a, err := rbac.New(rbac.Bootstrap(), p)
	require.NoError(t, err)

	const kv, sub, vk = "kubevirt.io", "subresources.kubevirt.io", "virtkit.io"
	team, ops, reader, wild := u("t1", "team"), u("ops"), u("reader"), u("wild")
	tests := []struct {
		name  string
		attrs authorizer.AttributesRecord
		allow bool
	}{
		{"empty resources: read", res(team, "get", "team-a", kv, "virtualmachines", "x"), true},
		{"empty resources: second namespace", res(team, "list", "team-c", kv, "virtualmachineinstances", ""), true},
		{"empty resources: write", res(team, "update", "team-a", kv, "virtualmachines", "x"), true},
		{"empty resources: patch", res(team, "patch", "team-a", kv, "virtualmachineinstances", "x"), true},
		{"empty resources: subresource action", res(team, "update", "team-a", sub, "virtualmachines/start", "x"), true},
		{"empty resources: stream", res(team, "get", "team-a", sub, "virtualmachineinstances/console", "x"), true},
		{"empty resources: read status", res(team, "get", "team-a", kv, "virtualmachineinstances/status", "x"), true},
		{"empty resources: no status write", res(team, "update", "team-a", kv, "virtualmachineinstances/status", "x"), false},
		{"empty resources: no status patch", res(team, "patch", "team-a", kv, "virtualmachines/status", "x"), false},
		{"namespace list: not another namespace", res(team, "get", "team-b", kv, "virtualmachines", "x"), false},
		{"namespace list: not all namespaces", res(team, "list", "", kv, "virtualmachines", ""), false},
		{"namespace list: not cluster-scoped", res(team, "get", "", vk, "nodes", "n1"), false},
		{"*/status anywhere", res(ops, "update", "team-z", kv, "virtualmachineinstances/status", "x"), true},
		{"*/status cluster-scoped", res(ops, "patch", "", vk, "nodes/status", "n1"), true},
		{"*/status only", res(ops, "update", "team-z", kv, "virtualmachineinstances", "x"), false},
		{"named resource", res(reader, "list", "", kv, "virtualmachines", ""), true},
		{"named resource: not its subresources", res(reader, "get", "team-a", sub, "virtualmachines/expand-spec", "x"), false},
		{"named resource: verbs", res(reader, "delete", "team-a", kv, "virtualmachines", "x"), false},
		{"* with a named status", res(wild, "update", "team-w", kv, "virtualmachineinstances/status", "x"), true},
		{"* with a named status: only that one", res(wild, "update", "team-w", kv, "virtualmachines/status", "x"), false},
		{"* verbs", res(wild, "deletecollection", "team-w", kv, "virtualmachines", ""), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, reason, err := a.Authorize(context.Background(), tt.attrs)
			require.NoError(t, err)
			want := authorizer.DecisionNoOpinion
			if tt.allow {
				want = authorizer.DecisionAllow
			}
			assert.Equal(t, want, d, reason)
		})
	}
}

func TestFromLegacyInvalid(t *testing.T) {
	tests := []struct {
		name    string
		rule    rbac.LegacyRule
		wantErr string
	}{
		{"no subject", rbac.LegacyRule{Namespaces: []string{"*"}}, "rules[0]: Invalid value"},
		{"both subjects", rbac.LegacyRule{User: "u", Group: "g", Namespaces: []string{"*"}}, "set exactly one of user and group"},
		{"no namespaces", rbac.LegacyRule{User: "u"}, "rules[0].namespaces: Required value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := rbac.FromLegacy([]rbac.LegacyRule{tt.rule}, nil)
			require.ErrorIs(t, err, rbac.ErrPolicy)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestLoadAnyPolicyFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		f := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(f, []byte(body), 0o600))
		return f
	}
	legacy := write("legacy.yaml", "rules:\n- {group: team, namespaces: [team-a]}\n")
	p, err := rbac.LoadAnyPolicyFile(legacy)
	require.NoError(t, err)
	a, err := rbac.New(rbac.Bootstrap(), p)
	require.NoError(t, err)
	d, _, err := a.Authorize(context.Background(), res(u("t", "team"), "create", "team-a", "kubevirt.io", "virtualmachines", ""))
	require.NoError(t, err)
	assert.Equal(t, authorizer.DecisionAllow, d)

	objects := write("rbac.yaml", "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r}\n"+
		"rules: [{apiGroups: [\"\"], resources: [secrets], verbs: [get]}]\n")
	p, err = rbac.LoadAnyPolicyFile(objects)
	require.NoError(t, err)
	assert.Len(t, p.ClusterRoles, 1)

	bad := write("bad.yaml", "rules:\n- {group: team, namespaces: [team-a], verb: [get]}\n")
	_, err = rbac.LoadAnyPolicyFile(bad)
	require.ErrorIs(t, err, rbac.ErrPolicy)
	assert.Contains(t, err.Error(), `unknown field "rules[0].verb"`)
}
