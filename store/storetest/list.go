package storetest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/virtkit/virtkit/store"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func names(list *WidgetList) []string {
	out := []string{}
	for _, w := range list.Items {
		out = append(out, w.Namespace+"/"+w.Name)
	}
	return out
}

func testList(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	for _, w := range []*Widget{
		widget("b", "w2", 1, map[string]string{"app": "web", "tier": "front"}),
		widget("a", "w1", 1, map[string]string{"app": "web"}),
		widget("a", "w3", 1, map[string]string{"app": "db"}),
		widget("b", "w1", 1, nil),
	} {
		create(t, s, w)
	}
	create(t, s, &Gadget{ObjectMeta: metav1.ObjectMeta{Name: "g", Labels: map[string]string{"app": "web"}}})
	sel := func(s string) labels.Selector {
		sel, err := labels.Parse(s)
		require.NoError(t, err)
		return sel
	}
	tests := []struct {
		name string
		opts store.ListOptions
		want []string
	}{
		{"all", store.ListOptions{}, []string{"a/w1", "a/w3", "b/w1", "b/w2"}},
		{"namespace", store.ListOptions{Namespace: "a"}, []string{"a/w1", "a/w3"}},
		{"empty namespace", store.ListOptions{Namespace: "zzz"}, []string{}},
		{"selector", store.ListOptions{LabelSelector: sel("app=web")}, []string{"a/w1", "b/w2"}},
		{"selector set-based", store.ListOptions{LabelSelector: sel("app in (db),!tier")}, []string{"a/w3"}},
		{"selector exists", store.ListOptions{LabelSelector: sel("tier")}, []string{"b/w2"}},
		{"namespace and selector", store.ListOptions{Namespace: "b", LabelSelector: sel("app=web")}, []string{"b/w2"}},
		{"selector everything", store.ListOptions{LabelSelector: labels.Everything()}, []string{"a/w1", "a/w3", "b/w1", "b/w2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			list := &WidgetList{}
			require.NoError(t, s.List(ctx, list, tc.opts))
			assert.Equal(t, tc.want, names(list))
			assert.NotEmpty(t, list.ResourceVersion)
			for _, w := range list.Items {
				assert.LessOrEqual(t, rv(t, &w), rv(t, list))
			}
		})
	}
}

func testClusterScoped(t *testing.T, s store.Store) {
	ctx := ctxT(t)
	g := &Gadget{ObjectMeta: metav1.ObjectMeta{Name: "g1", Labels: map[string]string{"x": "y"}}, Spec: WidgetSpec{Size: 1}}
	create(t, s, g)
	create(t, s, &Gadget{ObjectMeta: metav1.ObjectMeta{Name: "g0"}})
	got := &Gadget{}
	require.NoError(t, s.Get(ctx, store.Key{Name: "g1"}, got))
	assert.Equal(t, g.UID, got.UID)
	got.Spec.Size = 2
	require.NoError(t, s.Update(ctx, got))
	assert.Equal(t, int64(2), got.Generation)
	got.Status.Phase = "Ready"
	require.NoError(t, s.UpdateStatus(ctx, got))

	list := &GadgetList{}
	require.NoError(t, s.List(ctx, list, store.ListOptions{Namespace: "ignored"}))
	require.Len(t, list.Items, 2, "namespace is ignored for cluster-scoped kinds")
	assert.Equal(t, "g0", list.Items[0].Name)
	assert.Equal(t, "Ready", list.Items[1].Status.Phase)

	require.NoError(t, s.Delete(ctx, &Gadget{ObjectMeta: metav1.ObjectMeta{Name: "g1"}}, store.DeleteOptions{}))
	requireWrapped(t, s.Get(ctx, store.Key{Name: "g1"}, &Gadget{}), store.ErrNotFound)
}
