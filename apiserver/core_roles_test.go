package apiserver_test

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/virtkit/virtkit/apiserver"
	apicorev1 "github.com/virtkit/virtkit/apiserver/corev1"
	"github.com/virtkit/virtkit/apiserver/rbac"
)

// coreRolesPolicy binds one user per role in team-a.
const coreRolesPolicy = `
apiVersion: v1
kind: List
items:
- {apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: r-admin, namespace: team-a},
   roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}, subjects: [{kind: User, name: u-admin}]}
- {apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: r-edit, namespace: team-a},
   roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}, subjects: [{kind: User, name: u-edit}]}
- {apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: r-view, namespace: team-a},
   roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}, subjects: [{kind: User, name: u-view}]}
- {apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: r-kv-edit, namespace: team-a},
   roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "kubevirt.io:edit"}, subjects: [{kind: User, name: u-kv-edit}]}
`

// coreResource is a core v1 resource a namespace role grants rights on,
// and how a client creates and reads one.
type coreResource struct {
	resource string
	create   func(ctx context.Context, c kubernetes.Interface, name string) error
	get      func(ctx context.Context, c kubernetes.Interface, name string) error
}

func coreResources() []coreResource {
	const ns = "team-a"
	return []coreResource{
		{"configmaps",
			func(ctx context.Context, c kubernetes.Interface, name string) error {
				_, err := c.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name},
					Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
				return err
			},
			func(ctx context.Context, c kubernetes.Interface, name string) error {
				_, err := c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
				return err
			}},
		{"secrets",
			func(ctx context.Context, c kubernetes.Interface, name string) error {
				_, err := c.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name},
					StringData: map[string]string{"password": "p"}}, metav1.CreateOptions{})
				return err
			},
			func(ctx context.Context, c kubernetes.Interface, name string) error {
				_, err := c.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
				return err
			}},
		{"serviceaccounts",
			func(ctx context.Context, c kubernetes.Interface, name string) error {
				_, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
				return err
			},
			func(ctx context.Context, c kubernetes.Interface, name string) error {
				_, err := c.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
				return err
			}},
		// Claims are created as virtctl image-upload creates them; others
		// are refused whoever asks.
		{"persistentvolumeclaims",
			func(ctx context.Context, c kubernetes.Interface, name string) error {
				_, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
					ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{apicorev1.AnnUploadTarget: ""}},
					Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
						Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
				}, metav1.CreateOptions{})
				return err
			},
			func(ctx context.Context, c kubernetes.Interface, name string) error {
				_, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
				return err
			}},
	}
}

var (
	readVerbs  = []string{"get", "list", "watch"}
	writeVerbs = []string{"create", "delete", "deletecollection", "patch", "update"}
)

// Kubernetes' aggregated admin and edit read and write the ConfigMaps,
// Secrets, ServiceAccounts and PersistentVolumeClaims of their namespace,
// view reads them but Secrets, and KubeVirt's roles alone grant none of
// them. The real kubectl's auth can-i (--list and single questions), a
// SelfSubjectAccessReview per verb and client-go's create and get as each
// user agree.
func TestCoreResourcesByNamespaceRole(t *testing.T) {
	requireKubectlBinary(t)
	st := newStore(t)
	ctx := t.Context()
	p, err := rbac.ParsePolicy(strings.NewReader(coreRolesPolicy))
	require.NoError(t, err)
	authz, err := rbac.New(rbac.Bootstrap(), p)
	require.NoError(t, err)
	tokens, err := apiserver.ParseTokenFile(strings.NewReader("t-admin,u-admin,1\nt-edit,u-edit,2\nt-view,u-view,3\nt-kv-edit,u-kv-edit,4\n"))
	require.NoError(t, err)
	ts := startServer(t, st, apiserver.GenericOptions{Authorizer: authz,
		Authenticator: apiserver.Authenticators{apiserver.ClientCertAuthenticator{}, tokens}})
	admin, err := kubernetes.NewForConfig(ts.admin())
	require.NoError(t, err)
	for _, r := range coreResources() {
		require.NoError(t, r.create(ctx, admin, "existing"), r.resource)
	}

	tests := []struct {
		token        string
		read, write  bool
		readsSecrets bool
	}{
		{token: "t-admin", read: true, write: true, readsSecrets: true},
		{token: "t-edit", read: true, write: true, readsSecrets: true},
		{token: "t-view", read: true},
		{token: "t-kv-edit"},
	}
	for _, tt := range tests {
		t.Run(tt.token, func(t *testing.T) {
			want := func(res string) []string {
				var verbs []string
				if tt.read && (res != "secrets" || tt.readsSecrets) {
					verbs = append(verbs, readVerbs...)
				}
				if tt.write {
					verbs = append(verbs, writeVerbs...)
				}
				sort.Strings(verbs)
				return verbs
			}
			k := kubectlRunner{t: t, kubeconfig: ts.kubeconfig(t, tt.token)}
			granted := canIList(k.ok("", "auth", "can-i", "--list", "-n", "team-a"))
			yes := map[bool]string{true: "yes", false: "no"}
			out, _ := k.run("", "auth", "can-i", "get", "secrets", "-n", "team-a")
			assert.Equal(t, yes[len(want("secrets")) > 0], lastLine(out), "kubectl auth can-i get secrets: %s", out)
			out, _ = k.run("", "auth", "can-i", "create", "configmaps", "-n", "team-b")
			assert.Equal(t, "no", lastLine(out), "not in another namespace: %s", out)

			c, err := kubernetes.NewForConfig(ts.token(tt.token))
			require.NoError(t, err)
			for _, r := range coreResources() {
				assert.Equal(t, want(r.resource), granted[r.resource], "kubectl auth can-i --list: %s", r.resource)
				for _, verb := range append(slices.Clone(readVerbs), writeVerbs...) {
					review, err := c.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
						Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
							Namespace: "team-a", Verb: verb, Resource: r.resource}}}, metav1.CreateOptions{})
					require.NoError(t, err)
					assert.Equal(t, slices.Contains(want(r.resource), verb), review.Status.Allowed, "%s %s: %s", verb, r.resource, review.Status.Reason)
				}

				err = r.get(ctx, c, "existing")
				if slices.Contains(want(r.resource), "get") {
					assert.NoError(t, err, "get %s", r.resource)
				} else {
					assert.True(t, apierrors.IsForbidden(err), "get %s refused: %v", r.resource, err)
				}
				name := "by-" + strings.TrimPrefix(tt.token, "t-")
				err = r.create(ctx, c, name)
				if tt.write {
					require.NoError(t, err, "create %s", r.resource)
					assert.NoError(t, r.get(ctx, admin, name), "%s created", r.resource)
				} else {
					assert.True(t, apierrors.IsForbidden(err), "create %s refused: %v", r.resource, err)
					assert.True(t, apierrors.IsNotFound(r.get(ctx, admin, name)), "%s not created", r.resource)
				}
			}
		})
	}
}

// canIList reads kubectl auth can-i --list's table into the verbs each
// core resource is granted, the union of its rows (rows naming resource
// names are left out: they grant on those names only).
func canIList(out string) map[string][]string {
	granted := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[0] == "Resources" || strings.Contains(f[0], ".") || !strings.HasPrefix(f[2], "[") || f[2] != "[]" {
			continue
		}
		verbs := strings.Fields(strings.Trim(strings.Join(f[3:], " "), "[]"))
		for _, v := range verbs {
			if !slices.Contains(granted[f[0]], v) {
				granted[f[0]] = append(granted[f[0]], v)
			}
		}
	}
	for _, v := range granted {
		sort.Strings(v)
	}
	return granted
}
