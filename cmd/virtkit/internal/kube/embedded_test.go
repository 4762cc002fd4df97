package kube_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube"
	"github.com/virtkit/virtkit/store"
)

// The embedded API server serves the store it is given: an object written
// to the store is listed through the API, under the CLI's old aliases too.
func TestStartEmbedded(t *testing.T) {
	st := store.NewMemory()
	require.NoError(t, st.Create(t.Context(), &virtkit.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}))
	e, err := kube.StartEmbedded(t.Context(), kube.EmbeddedOptions{Store: st})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	assert.Equal(t, "default", e.Namespace)
	for _, typed := range []string{"nodes", "no"} {
		m, err := e.Mapping(typed)
		require.NoError(t, err, typed)
		l, err := e.ResourceFor(m, "").List(t.Context(), metav1.ListOptions{})
		require.NoError(t, err)
		require.Len(t, l.Items, 1)
		assert.Equal(t, "n1", l.Items[0].GetName())
	}
	_, err = kube.StartEmbedded(t.Context(), kube.EmbeddedOptions{})
	require.ErrorContains(t, err, "Store")
}
