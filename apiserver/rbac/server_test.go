package rbac_test

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/user"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	basecompatibility "k8s.io/component-base/compatibility"

	"github.com/virtkit/virtkit/apiserver/rbac"
)

// tokens of the test server's users.
var testUsers = map[string]*user.DefaultInfo{
	"alice-token": {Name: "alice", UID: "u-alice", Groups: []string{"team"}},
	"admin-token": {Name: "root", Groups: []string{rbac.AdminGroup}},
	"node-token":  {Name: "system:node:n1", Groups: []string{rbac.NodesGroup}},
}

// startServer runs a k8s.io/apiserver generic server with the review APIs
// installed, authenticating bearer tokens of testUsers and authorizing
// with the bootstrap policy plus alice as kubevirt.io:edit in team-a.
func startServer(t *testing.T) *httptest.Server {
	t.Helper()
	p, err := rbac.ParsePolicy(strings.NewReader(`
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-edit, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "kubevirt.io:edit"}
subjects: [{kind: User, name: alice}]
`))
	require.NoError(t, err)
	authz, err := rbac.New(rbac.Bootstrap(), p)
	require.NoError(t, err)

	scheme, err := rbac.NewScheme()
	require.NoError(t, err)
	codecs := serializer.NewCodecFactory(scheme)
	cfg := genericapiserver.NewConfig(codecs)
	cfg.ExternalAddress = "127.0.0.1:443"
	cfg.LoopbackClientConfig = &restclient.Config{}
	cfg.EffectiveVersion = basecompatibility.NewEffectiveVersionFromString("1.32.0", "", "")
	cfg.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(rbac.OpenAPIDefinitions, openapinamer.NewDefinitionNamer(scheme))
	tokens := authenticator.TokenFunc(func(_ context.Context, tok string) (*authenticator.Response, bool, error) {
		u, ok := testUsers[tok]
		if !ok {
			return nil, false, nil
		}
		cp := *u
		cp.Groups = append([]string(nil), u.Groups...)
		return &authenticator.Response{User: &cp}, true, nil
	})
	cfg.Authentication.Authenticator = group.NewAuthenticatedGroupAdder(bearertoken.New(tokens))
	cfg.Authorization.Authorizer = authz

	s, err := cfg.Complete(nil).New("rbac-test", genericapiserver.NewEmptyDelegate())
	require.NoError(t, err)
	require.NoError(t, rbac.Install(s, authz, authz))
	ts := httptest.NewTLSServer(s.Handler)
	t.Cleanup(ts.Close)
	return ts
}

func clientFor(t *testing.T, ts *httptest.Server, token string) *kubernetes.Clientset {
	t.Helper()
	c, err := kubernetes.NewForConfig(&restclient.Config{Host: ts.URL, BearerToken: token,
		TLSClientConfig: restclient.TLSClientConfig{Insecure: true}})
	require.NoError(t, err)
	return c
}

func TestReviewAPIs(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()

	t.Run("SelfSubjectAccessReview", func(t *testing.T) {
		tests := []struct {
			name, token string
			attrs       authorizationv1.ResourceAttributes
			allowed     bool
		}{
			{"edit creates VMs in its namespace", "alice-token",
				authorizationv1.ResourceAttributes{Namespace: "team-a", Verb: "create", Group: "kubevirt.io", Resource: "virtualmachines"}, true},
			{"not in another namespace", "alice-token",
				authorizationv1.ResourceAttributes{Namespace: "team-b", Verb: "create", Group: "kubevirt.io", Resource: "virtualmachines"}, false},
			{"edit opens the console", "alice-token",
				authorizationv1.ResourceAttributes{Namespace: "team-a", Verb: "get", Group: "subresources.kubevirt.io", Resource: "virtualmachineinstances", Subresource: "console"}, true},
			{"edit does not write VMI status", "alice-token",
				authorizationv1.ResourceAttributes{Namespace: "team-a", Verb: "update", Group: "kubevirt.io", Resource: "virtualmachineinstances", Subresource: "status"}, false},
			{"node agent writes VMI status", "node-token",
				authorizationv1.ResourceAttributes{Namespace: "team-a", Verb: "patch", Group: "kubevirt.io", Resource: "virtualmachineinstances", Subresource: "status"}, true},
			{"admin group does everything", "admin-token",
				authorizationv1.ResourceAttributes{Verb: "delete", Group: "virtkit.io", Resource: "nodes"}, true},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				attrs := tt.attrs
				got, err := clientFor(t, ts, tt.token).AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
					&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}},
					metav1.CreateOptions{})
				require.NoError(t, err)
				assert.Equal(t, tt.allowed, got.Status.Allowed, got.Status.Reason)
				assert.False(t, got.Status.Denied)
			})
		}
	})

	t.Run("SelfSubjectAccessReview non-resource", func(t *testing.T) {
		got, err := clientFor(t, ts, "alice-token").AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
			&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/apis"}}},
			metav1.CreateOptions{})
		require.NoError(t, err)
		assert.True(t, got.Status.Allowed)
		assert.Contains(t, got.Status.Reason, `ClusterRoleBinding "system:discovery"`)
	})

	t.Run("SelfSubjectAccessReview invalid", func(t *testing.T) {
		_, err := clientFor(t, ts, "alice-token").AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
			&authorizationv1.SelfSubjectAccessReview{}, metav1.CreateOptions{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "spec.resourceAttributes")
	})

	t.Run("SelfSubjectRulesReview", func(t *testing.T) {
		c := clientFor(t, ts, "alice-token").AuthorizationV1().SelfSubjectRulesReviews()
		got, err := c.Create(ctx, &authorizationv1.SelfSubjectRulesReview{
			Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "team-a"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.False(t, got.Status.Incomplete)
		assert.Contains(t, resourcesOf(got.Status.ResourceRules), "virtualmachineinstances/console")
		assert.Contains(t, resourcesOf(got.Status.ResourceRules), "selfsubjectrulesreviews")
		assert.NotEmpty(t, got.Status.NonResourceRules)

		other, err := c.Create(ctx, &authorizationv1.SelfSubjectRulesReview{
			Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "team-b"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.NotContains(t, resourcesOf(other.Status.ResourceRules), "virtualmachineinstances/console")

		_, err = c.Create(ctx, &authorizationv1.SelfSubjectRulesReview{}, metav1.CreateOptions{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "no namespace")
	})

	t.Run("SelfSubjectReview", func(t *testing.T) {
		got, err := clientFor(t, ts, "alice-token").AuthenticationV1().SelfSubjectReviews().Create(ctx,
			&authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Equal(t, "alice", got.Status.UserInfo.Username)
		assert.Equal(t, "u-alice", got.Status.UserInfo.UID)
		assert.ElementsMatch(t, []string{"team", rbac.AuthenticatedGroup}, got.Status.UserInfo.Groups)
	})

	t.Run("unknown token", func(t *testing.T) {
		_, err := clientFor(t, ts, "nope").AuthenticationV1().SelfSubjectReviews().Create(ctx,
			&authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		require.Error(t, err)
	})
}

func resourcesOf(rules []authorizationv1.ResourceRule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, r.Resources...)
	}
	return out
}

// TestKubectlAuth runs the real kubectl auth can-i and auth whoami
// against the server (over TLS: kubectl sends no token over plain HTTP).
func TestKubectlAuth(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not installed")
	}
	ts := startServer(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+ts.URL+`", insecure-skip-tls-verify: true}}]
users: [{name: alice, user: {token: alice-token}}]
contexts: [{name: c, context: {cluster: c, user: alice, namespace: team-a}}]
current-context: c
`), 0o600))
	run := func(args ...string) (string, error) {
		cmd := exec.CommandContext(context.Background(), kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := run("auth", "whoami")
	require.NoError(t, err, out)
	assert.Contains(t, out, "alice")
	assert.Contains(t, out, rbac.AuthenticatedGroup)

	out, err = run("auth", "can-i", "--list")
	require.NoError(t, err, out)
	assert.Contains(t, out, "virtualmachineinstances.subresources.kubevirt.io/console")
	assert.Contains(t, out, "selfsubjectaccessreviews.authorization.k8s.io")

	out, err = run("auth", "can-i", "get", "/apis")
	require.NoError(t, err, out)
	assert.Equal(t, "yes", strings.TrimSpace(out))

	out, err = run("auth", "can-i", "--namespace", "team-b", "get", "/version")
	require.NoError(t, err, out)
	assert.Equal(t, "yes", strings.TrimSpace(out))
}
