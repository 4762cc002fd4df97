package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/store"
)

// The cluster starts with kube-apiserver's namespaces, and its namespace
// controller deletes a deleted namespace's content, then the namespace.
func TestClusterNamespaces(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	clk := sim.NewVirtualClock(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))
	c, err := cluster.New(cluster.Options{Clock: clk, Nodes: 1})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	defer func() { cancel(); <-done }()
	require.NoError(t, c.Settle(ctx))

	st := c.Store()
	for _, name := range virtkit.SystemNamespaces() {
		ns := &corev1.Namespace{}
		require.NoError(t, st.Get(ctx, store.Key{Name: name}, ns), name)
		assert.Equal(t, corev1.NamespaceActive, ns.Status.Phase, name)
	}
	require.NoError(t, st.Create(ctx, controller.NewNamespace("team")))
	require.NoError(t, st.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "cfg"}}))
	require.NoError(t, st.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cfg"}}))
	require.NoError(t, c.Settle(ctx))

	require.NoError(t, st.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, store.DeleteOptions{}))
	require.NoError(t, c.Settle(ctx))
	err = st.Get(ctx, store.Key{Namespace: "team", Name: "cfg"}, &corev1.ConfigMap{})
	assert.ErrorIs(t, err, store.ErrNotFound)
	err = st.Get(ctx, store.Key{Name: "team"}, &corev1.Namespace{})
	assert.ErrorIs(t, err, store.ErrNotFound)
	require.NoError(t, st.Get(ctx, store.Key{Namespace: "default", Name: "cfg"}, &corev1.ConfigMap{}))
}
