package apiserver_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"

	"github.com/virtkit/virtkit/apiserver"
)

// The CDIConfig, which virtkit synthesizes and never changes, is watched
// as a stored object is: a watch from scratch starts with it, one resumed
// from a listed resourceVersion has nothing to report (nothing changed
// since), and client-go's dynamic informer syncs and holds it.
func TestCDIConfigWatch(t *testing.T) {
	ts := startGeneric(t, apiserver.GenericOptions{UploadProxyURL: "https://127.0.0.1:8443"})
	ctx := t.Context()
	dyn, err := dynamic.NewForConfig(ts.admin())
	require.NoError(t, err)
	gvr := schema.GroupVersionResource{Group: "cdi.kubevirt.io", Version: "v1beta1", Resource: "cdiconfigs"}

	l, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, l.Items, 1)

	w, err := dyn.Resource(gvr).Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	select {
	case e := <-w.ResultChan():
		require.Equal(t, watch.Added, e.Type, "%#v", e.Object)
		u, ok := e.Object.(*unstructured.Unstructured)
		require.True(t, ok, "%#v", e.Object)
		assert.Equal(t, "config", u.GetName())
		proxy, _, _ := unstructured.NestedString(u.Object, "status", "uploadProxyURL")
		assert.Equal(t, "https://127.0.0.1:8443", proxy)
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event")
	}
	w.Stop()

	// Resumed from the list's version: the watch stays open, silent, and
	// ends when its timeout does.
	timeout := int64(1)
	w, err = dyn.Resource(gvr).Watch(ctx, metav1.ListOptions{ResourceVersion: l.GetResourceVersion(), TimeoutSeconds: &timeout})
	require.NoError(t, err)
	select {
	case e, ok := <-w.ResultChan():
		assert.False(t, ok, "nothing changed since the list: %s %#v", e.Type, e.Object)
	case <-time.After(10 * time.Second):
		t.Fatal("the watch outlived its timeout")
	}

	f := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	inf := f.ForResource(gvr)
	stop := make(chan struct{})
	f.Start(stop)
	defer func() { close(stop); f.Shutdown() }()
	for _, ok := range f.WaitForCacheSync(stop) {
		require.True(t, ok)
	}
	_, err = inf.Lister().Get("config")
	require.NoError(t, err)
}
