package apiserver_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/store"
)

const vmiManifest = `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: vmi1, namespace: default}
spec:
  domain:
    devices: {}
    memory: {guest: 128Mi}
`

// The status subresource writes the status only; a VMI is placed by the
// control plane alone, and a node agent writes the status of the VMIs on
// its node only.
func TestGenericStatusSubresource(t *testing.T) {
	ts := startGeneric(t, apiserver.GenericOptions{})
	ctx := t.Context()
	client := func(user string, groups ...string) dynamic.NamespaceableResourceInterface {
		c, err := dynamic.NewForConfig(ts.cert(t, user, groups...))
		require.NoError(t, err)
		return c.Resource(vmiGVR)
	}
	admin := client("admin", apiserver.AdminGroup)
	scheduler := client("scheduler", apiserver.ControlPlaneGroup)
	node1 := client(apiserver.NodeUser("n1"), apiserver.NodesGroup)
	node2 := client(apiserver.NodeUser("n2"), apiserver.NodesGroup)

	vmi, err := admin.Namespace("default").Create(ctx, unstructuredOf(t, vmiManifest), metav1.CreateOptions{})
	require.NoError(t, err)
	uuid, _, _ := unstructured.NestedString(vmi.Object, "spec", "domain", "firmware", "uuid")
	assert.NotEmpty(t, uuid, "the admission chain defaulted the firmware UUID")

	place := func(c dynamic.NamespaceableResourceInterface, node string, mutate func(*unstructured.Unstructured)) error {
		cur, err := admin.Namespace("default").Get(ctx, "vmi1", metav1.GetOptions{})
		require.NoError(t, err)
		require.NoError(t, unstructured.SetNestedField(cur.Object, node, "status", "nodeName"))
		if mutate != nil {
			mutate(cur)
		}
		_, err = c.Namespace("default").UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	}
	err = place(node1, "n1", nil)
	require.Error(t, err, "a node agent does not place a VMI")
	assert.True(t, apierrors.IsForbidden(err) || apierrors.IsInvalid(err), "%v", err)

	require.NoError(t, place(scheduler, "n1", func(u *unstructured.Unstructured) {
		require.NoError(t, unstructured.SetNestedField(u.Object, "999Mi", "spec", "domain", "memory", "guest"))
		require.NoError(t, unstructured.SetNestedField(u.Object, int64(107), "status", "runtimeUser"))
	}))
	stored := &virtkit.VirtualMachineInstance{}
	require.NoError(t, ts.Store.Get(ctx, store.Key{Namespace: "default", Name: "vmi1"}, stored))
	assert.Equal(t, "n1", stored.Status.NodeName)
	assert.Equal(t, uint64(107), stored.Status.RuntimeUser)
	assert.Equal(t, "128Mi", stored.Spec.Domain.Memory.Guest.String(), "a status write leaves the spec")

	err = place(node2, "n1", func(u *unstructured.Unstructured) {
		require.NoError(t, unstructured.SetNestedField(u.Object, "Running", "status", "phase"))
	})
	require.True(t, apierrors.IsForbidden(err), "node n2 writes a VMI of n1: %v", err)
	require.NoError(t, place(node1, "n1", func(u *unstructured.Unstructured) {
		require.NoError(t, unstructured.SetNestedField(u.Object, "Running", "status", "phase"))
	}))
	err = place(node1, "n2", nil)
	require.Error(t, err, "a node agent does not move a VMI")

	// An update of the main resource keeps the status.
	cur, err := admin.Namespace("default").Get(ctx, "vmi1", metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(cur.Object, "Failed", "status", "phase"))
	cur.SetLabels(map[string]string{"x": "y"})
	out, err := admin.Namespace("default").Update(ctx, cur, metav1.UpdateOptions{})
	require.NoError(t, err)
	phase, _, _ := unstructured.NestedString(out.Object, "status", "phase")
	assert.Equal(t, "Running", phase)
	assert.Equal(t, int64(1), out.GetGeneration(), "labels do not move the generation")
}

// client-go's typed and dynamic informers list and watch through the
// generic server, and see what the store writes.
func TestGenericInformers(t *testing.T) {
	ts := startGeneric(t, apiserver.GenericOptions{})
	ctx := t.Context()
	typed, err := kubernetes.NewForConfig(ts.admin())
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(ts.admin())
	require.NoError(t, err)

	tf := informers.NewSharedInformerFactory(typed, 0)
	nsLister := tf.Core().V1().Namespaces().Lister()
	df := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	vmInformer := df.ForResource(vmGVR)
	added := make(chan string, 16)
	_, err = vmInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		added <- obj.(*unstructured.Unstructured).GetName()
	}})
	require.NoError(t, err)
	stop := make(chan struct{})
	tf.Start(stop)
	df.Start(stop)
	t.Cleanup(func() { close(stop); tf.Shutdown(); df.Shutdown() })
	for typ, ok := range tf.WaitForCacheSync(stop) {
		require.True(t, ok, "%v", typ)
	}
	for typ, ok := range df.WaitForCacheSync(stop) {
		require.True(t, ok, "%v", typ)
	}
	_, err = nsLister.Get("default")
	require.NoError(t, err)

	_, err = typed.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, err := nsLister.Get("team-b"); return err == nil }, 30*time.Second, 20*time.Millisecond)

	objs, err := virtkit.DecodeBytes([]byte(vmManifest("team-b", "from-store", "Halted")))
	require.NoError(t, err)
	require.NoError(t, ts.Store.Create(ctx, objs[0]))
	_, err = dyn.Resource(vmGVR).Namespace("team-b").Create(ctx, unstructuredOf(t, vmManifest("team-b", "from-api", "Halted")), metav1.CreateOptions{})
	require.NoError(t, err)
	got := map[string]bool{}
	timeout := time.After(30 * time.Second)
	for len(got) < 2 {
		select {
		case name := <-added:
			got[name] = true
		case <-timeout:
			t.Fatalf("the informer saw %v", got)
		}
	}

	// A raw watch from a list's resourceVersion sees a deletion.
	list, err := dyn.Resource(vmGVR).Namespace("team-b").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	w, err := dyn.Resource(vmGVR).Namespace("team-b").Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	require.NoError(t, err)
	defer w.Stop()
	require.NoError(t, dyn.Resource(vmGVR).Namespace("team-b").Delete(ctx, "from-store", metav1.DeleteOptions{}))
	select {
	case e := <-w.ResultChan():
		assert.Equal(t, watch.Deleted, e.Type)
	case <-time.After(30 * time.Second):
		t.Fatal("no DELETED event")
	}
}

// With the watch cache, a watch that asks for bookmarks gets them: one
// whose selector matches none of the changes learns how far the store has
// moved, here before its timeout ends it, as the library schedules them.
func TestGenericWatchBookmarks(t *testing.T) {
	ts := startGeneric(t, apiserver.GenericOptions{WatchCache: true})
	ctx := t.Context()
	dyn, err := dynamic.NewForConfig(ts.admin())
	require.NoError(t, err)
	vms := dyn.Resource(vmGVR).Namespace("default")
	list, err := vms.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	timeout := int64(10)
	w, err := vms.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion(), LabelSelector: "app=none",
		AllowWatchBookmarks: true, TimeoutSeconds: &timeout})
	require.NoError(t, err)
	defer w.Stop()
	objs, err := virtkit.DecodeBytes([]byte(vmManifest("default", "unseen", "Halted")))
	require.NoError(t, err)
	require.NoError(t, ts.Store.Create(ctx, objs[0]))
	created, err := strconv.ParseUint(objs[0].GetResourceVersion(), 10, 64)
	require.NoError(t, err)
	deadline := time.After(60 * time.Second)
	for {
		select {
		case e, ok := <-w.ResultChan():
			require.True(t, ok, "the watch ended without a bookmark")
			require.Equal(t, watch.Bookmark, e.Type, "the selector matches nothing")
			rv, err := strconv.ParseUint(e.Object.(*unstructured.Unstructured).GetResourceVersion(), 10, 64)
			require.NoError(t, err)
			assert.GreaterOrEqual(t, rv, created)
			return
		case <-deadline:
			t.Fatal("no bookmark")
		}
	}
}

// The library's limits: an unsupported media type is 415.
func TestGenericUnsupportedMediaType(t *testing.T) {
	ts := startGeneric(t, apiserver.GenericOptions{})
	c := ts.anonymousAdmin(t)
	req, err := http.NewRequest(http.MethodPost, ts.URL+"/apis/kubevirt.io/v1/namespaces/default/virtualmachines", strings.NewReader("x"))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "text/plain")
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode)
}
