package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube"
	"github.com/virtkit/virtkit/store"
)

// storeCLI serves st through an API server in the test's process, as a
// verb given --store does, and returns the CLI against it.
func storeCLI(t *testing.T, st store.Store) cli {
	t.Helper()
	e, err := kube.StartEmbedded(t.Context(), kube.EmbeddedOptions{Store: st})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	return cli{t: t, kubeconfig: e.Kubeconfig}
}

// apiMemory is a memory store an API server may serve (its first
// resourceVersion is 1: Kubernetes reads 0 as "any").
func apiMemory(t *testing.T) store.Store {
	t.Helper()
	st, err := store.NewMemoryWithOptions(store.Options{StartResourceVersion: 1})
	require.NoError(t, err)
	return st
}
