package kubetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube"
	"github.com/virtkit/virtkit/store"
)

// NewMemory is a memory store the API can serve (its first
// resourceVersion is 1, as Kubernetes reads 0 as "any").
func NewMemory(t testing.TB) *store.Memory {
	t.Helper()
	m, err := store.NewMemoryWithOptions(store.Options{StartResourceVersion: 1})
	require.NoError(t, err)
	return m
}

// Serve serves the API over st in this process until the test ends and
// returns a client of it in namespace "default".
func Serve(t testing.TB, st store.Store) *kube.Client {
	t.Helper()
	return ServeWith(t, cluster.InProcessAPIOptions{Store: st})
}

// ServeWith is Serve with the server's options (a fake clock for the
// tables' ages).
func ServeWith(t testing.TB, opts cluster.InProcessAPIOptions) *kube.Client {
	t.Helper()
	api, err := cluster.StartInProcessAPI(t.Context(), opts)
	require.NoError(t, err)
	t.Cleanup(api.Stop)
	c, err := kube.NewClient(api.Config, "default")
	require.NoError(t, err)
	return c
}
