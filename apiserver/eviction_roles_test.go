package apiserver_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/apiserver/corev1"
	"github.com/virtkit/virtkit/apiserver/rbac"
)

// evictionRolesPolicy binds one user per role in team-a.
const evictionRolesPolicy = `
apiVersion: v1
kind: List
items:
- {apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: r-admin, namespace: team-a},
   roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}, subjects: [{kind: User, name: u-admin}]}
- {apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: r-edit, namespace: team-a},
   roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}, subjects: [{kind: User, name: u-edit}]}
- {apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: r-view, namespace: team-a},
   roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}, subjects: [{kind: User, name: u-view}]}
- {apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: r-kv-admin, namespace: team-a},
   roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "kubevirt.io:admin"}, subjects: [{kind: User, name: u-kv-admin}]}
- {apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: r-kv-edit, namespace: team-a},
   roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "kubevirt.io:edit"}, subjects: [{kind: User, name: u-kv-edit}]}
`

// Users bound to Kubernetes' aggregated admin or edit in a namespace may
// evict its launcher pods, as on Kubernetes, and the real kubectl's
// auth can-i, a SelfSubjectAccessReview and the eviction itself agree for
// every role; view and KubeVirt's roles alone may not.
func TestEvictionByNamespaceRole(t *testing.T) {
	requireKubectlBinary(t)
	st := newStore(t)
	ctx := t.Context()
	vmi := &virtkit.VirtualMachineInstance{}
	vmi.Name, vmi.Namespace = "vm-0", "team-a"
	live := virtkit.EvictionStrategyLiveMigrate
	vmi.Spec.EvictionStrategy = &live // and not migratable: refused with 429, nothing written
	require.NoError(t, st.Create(ctx, vmi))
	vmi.Status.Phase, vmi.Status.NodeName = virtkit.Running, "node-1"
	require.NoError(t, st.UpdateStatus(ctx, vmi))
	pod := corev1.LauncherPods(vmi)[0].Name

	p, err := rbac.ParsePolicy(strings.NewReader(evictionRolesPolicy))
	require.NoError(t, err)
	authz, err := rbac.New(rbac.Bootstrap(), p)
	require.NoError(t, err)
	tokens, err := apiserver.ParseTokenFile(strings.NewReader(`t-admin,u-admin,1
t-edit,u-edit,2
t-view,u-view,3
t-kv-admin,u-kv-admin,4
t-kv-edit,u-kv-edit,5
`))
	require.NoError(t, err)
	ts := startServer(t, st, apiserver.GenericOptions{Authorizer: authz,
		Authenticator: apiserver.Authenticators{apiserver.ClientCertAuthenticator{}, tokens}})

	tests := []struct {
		token string
		evict bool
	}{
		{"t-admin", true},
		{"t-edit", true},
		{"t-view", false},
		{"t-kv-admin", false},
		{"t-kv-edit", false},
	}
	for _, tt := range tests {
		t.Run(tt.token, func(t *testing.T) {
			want := map[bool]string{true: "yes", false: "no"}[tt.evict]
			k := kubectlRunner{t: t, kubeconfig: ts.kubeconfig(t, tt.token)}
			// kubectl reads pods/eviction as the pod named eviction, as
			// against Kubernetes: edit and admin may create pods there too.
			for _, args := range [][]string{{"pods/eviction"}, {"pods", "--subresource", "eviction"}, {"pods/" + pod, "--subresource", "eviction"}} {
				out, _ := k.run("", append([]string{"auth", "can-i", "create", "-n", "team-a"}, args...)...)
				assert.Equal(t, want, lastLine(out), "kubectl auth can-i create %v: %s", args, out)
			}
			out, _ := k.run("", "auth", "can-i", "create", "pods/eviction", "-n", "team-b")
			assert.Equal(t, "no", lastLine(out), "not in another namespace: %s", out)

			c, err := kubernetes.NewForConfig(ts.token(tt.token))
			require.NoError(t, err)
			review, err := c.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: "team-a", Verb: "create", Resource: "pods", Subresource: "eviction", Name: pod}}}, metav1.CreateOptions{})
			require.NoError(t, err)
			assert.Equal(t, tt.evict, review.Status.Allowed, review.Status.Reason)

			err = c.PolicyV1().Evictions("team-a").Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: "team-a"}})
			if tt.evict {
				assert.True(t, apierrors.IsTooManyRequests(err), "the eviction reaches the VMI's strategy: %v", err)
			} else {
				assert.True(t, apierrors.IsForbidden(err), "refused: %v", err)
			}
		})
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
