package cluster_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

// The in-process API serves the store to its own client as the admin, and
// to no one holding another token.
func TestStartInProcessAPIServesTheStoreToTheAdmin(t *testing.T) {
	mem, err := store.NewMemoryWithOptions(store.Options{StartResourceVersion: 1})
	require.NoError(t, err)
	require.NoError(t, mem.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}))
	api, err := cluster.StartInProcessAPI(t.Context(), cluster.InProcessAPIOptions{Store: mem})
	require.NoError(t, err)
	t.Cleanup(api.Stop)

	kc, err := kubernetes.NewForConfig(api.Config)
	require.NoError(t, err)
	_, err = kc.CoreV1().Namespaces().Get(t.Context(), "team-a", metav1.GetOptions{})
	require.NoError(t, err)
	review, err := kc.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authv1.SelfSubjectReview{}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, apiserver.AdminUser, review.Status.UserInfo.Username)
	assert.Contains(t, review.Status.UserInfo.Groups, apiserver.AdminGroup)

	other := rest.CopyConfig(api.Config)
	other.BearerToken = "not-the-token"
	oc, err := kubernetes.NewForConfig(other)
	require.NoError(t, err)
	_, err = oc.CoreV1().Namespaces().Get(t.Context(), "team-a", metav1.GetOptions{})
	require.Error(t, err)

	_, err = cluster.StartInProcessAPI(t.Context(), cluster.InProcessAPIOptions{Store: notABackend{mem}})
	assert.True(t, errors.Is(err, virtkit.ErrInvalidOptions), "%v", err)
}
