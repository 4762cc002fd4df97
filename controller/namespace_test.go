package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

func TestNamespaceReconciler(t *testing.T) {
	tests := []struct {
		name string
		// extra spec finalizer besides "kubernetes"
		specFinalizers []corev1.FinalizerName
		// a finalizer on the ConfigMap that holds it
		cmFinalizer string
		delete      bool
		wantNS      bool
		wantContent bool
		wantRequeue bool
	}{
		{name: "alive namespace keeps its content", wantNS: true, wantContent: true},
		{name: "deleted namespace loses its content, then goes", delete: true},
		{name: "content held by a finalizer keeps the namespace", delete: true, cmFinalizer: "example.com/hold",
			wantNS: true, wantContent: true, wantRequeue: true},
		{name: "another spec finalizer keeps the namespace", delete: true,
			specFinalizers: []corev1.FinalizerName{"example.com/other"}, wantNS: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			st := store.NewMemory()
			r, err := NewNamespaceReconciler(ReconcilerOptions{Store: st})
			require.NoError(t, err)
			require.NoError(t, EnsureNamespaces(ctx, st, "default", "team"))
			if len(tt.specFinalizers) > 0 {
				ns := &corev1.Namespace{}
				require.NoError(t, st.Get(ctx, store.Key{Name: "team"}, ns))
				ns.Spec.Finalizers = append(ns.Spec.Finalizers, tt.specFinalizers...)
				require.NoError(t, st.Update(ctx, ns))
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "cm"}}
			if tt.cmFinalizer != "" {
				cm.Finalizers = []string{tt.cmFinalizer}
			}
			require.NoError(t, st.Create(ctx, cm))
			require.NoError(t, st.Create(ctx, &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "vm"}}))
			other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cm"}}
			require.NoError(t, st.Create(ctx, other))

			if tt.delete {
				require.NoError(t, st.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, store.DeleteOptions{}))
			}
			res, err := r.Reconcile(ctx, reconcile.Request{Name: "team"})
			require.NoError(t, err)
			assert.Equal(t, tt.wantRequeue, res.RequeueAfter > 0)

			ns := &corev1.Namespace{}
			err = st.Get(ctx, store.Key{Name: "team"}, ns)
			if tt.wantNS {
				require.NoError(t, err)
				if tt.delete {
					assert.Equal(t, corev1.NamespaceTerminating, ns.Status.Phase)
					want := tt.specFinalizers
					if tt.wantContent {
						want = []corev1.FinalizerName{corev1.FinalizerKubernetes}
					}
					assert.Equal(t, want, ns.Spec.Finalizers)
				}
			} else {
				requireNotFound(t, err)
			}
			err = st.Get(ctx, store.Key{Namespace: "team", Name: "cm"}, &corev1.ConfigMap{})
			if tt.wantContent {
				require.NoError(t, err)
			} else {
				requireNotFound(t, err)
				requireNotFound(t, st.Get(ctx, store.Key{Namespace: "team", Name: "vm"}, &virtkit.VirtualMachine{}))
			}
			require.NoError(t, st.Get(ctx, store.Key{Namespace: "default", Name: "cm"}, &corev1.ConfigMap{}), "another namespace's content stays")
		})
	}
}

func TestEnsureNamespacesKeepsExisting(t *testing.T) {
	ctx := t.Context()
	st := store.NewMemory()
	require.NoError(t, EnsureNamespaces(ctx, st, SystemNamespaces()...))
	ns := &corev1.Namespace{}
	require.NoError(t, st.Get(ctx, store.Key{Name: "default"}, ns))
	ns.Labels = map[string]string{"a": "b"}
	require.NoError(t, st.Update(ctx, ns))
	require.NoError(t, EnsureNamespaces(ctx, st, SystemNamespaces()...))
	got := &corev1.Namespace{}
	require.NoError(t, st.Get(ctx, store.Key{Name: "default"}, got))
	assert.Equal(t, "b", got.Labels["a"])
	assert.Equal(t, corev1.NamespaceActive, got.Status.Phase)
	assert.Equal(t, []string{virtkit.NamespaceFinalizer}, got.Finalizers)
	list := &corev1.NamespaceList{}
	require.NoError(t, st.List(ctx, list, store.ListOptions{}))
	assert.Len(t, list.Items, 3)
}
