package corev1_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"

	"github.com/virtkit/virtkit"
	apicorev1 "github.com/virtkit/virtkit/apiserver/corev1"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

func TestServerNamespacesConfigMapsSecrets(t *testing.T) {
	ts := newTestServer(t)
	ctx := t.Context()
	core := ts.client.CoreV1()

	ns, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.NamespaceActive, ns.Status.Phase)
	assert.Equal(t, []corev1.FinalizerName{corev1.FinalizerKubernetes}, ns.Spec.Finalizers)
	assert.Equal(t, "team", ns.Labels["kubernetes.io/metadata.name"])
	nsList, err := core.Namespaces().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, nsList.Items, 4)

	_, err = core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "Not_A_Label"}}, metav1.CreateOptions{})
	require.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.Contains(t, err.Error(), "metadata.name")

	w, err := core.ConfigMaps("team").Watch(ctx, metav1.ListOptions{ResourceVersion: ns.ResourceVersion})
	require.NoError(t, err)
	defer w.Stop()

	cm, err := core.ConfigMaps("team").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"a.txt": "x"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	e := <-w.ResultChan()
	assert.Equal(t, watch.Added, e.Type)
	assert.Equal(t, "cfg", e.Object.(*corev1.ConfigMap).Name)
	got, err := core.ConfigMaps("team").Get(ctx, "cfg", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, cm.UID, got.UID)
	// The store sees what the API wrote.
	stored := &corev1.ConfigMap{}
	require.NoError(t, ts.store.Get(ctx, store.Key{Namespace: "team", Name: "cfg"}, stored))
	assert.Equal(t, "x", stored.Data["a.txt"])

	_, err = core.ConfigMaps("team").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Data: map[string]string{"bad key": "x"}}, metav1.CreateOptions{})
	require.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.Contains(t, err.Error(), "data[bad key]")

	_, err = core.ConfigMaps("nowhere").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}}, metav1.CreateOptions{})
	require.True(t, apierrors.IsNotFound(err), "a write into a missing namespace: %v", err)

	sec, err := core.Secrets("team").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, StringData: map[string]string{"user": "me"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.SecretTypeOpaque, sec.Type)
	assert.Equal(t, []byte("me"), sec.Data["user"])
	secs, err := core.Secrets("team").List(ctx, metav1.ListOptions{FieldSelector: "type=Opaque"})
	require.NoError(t, err)
	assert.Len(t, secs.Items, 1)
	_, err = core.Secrets("team").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "big"}, Data: map[string][]byte{"k": make([]byte, 1<<20+1)}}, metav1.CreateOptions{})
	require.True(t, apierrors.IsInvalid(err) || apierrors.IsRequestEntityTooLargeError(err), "%v", err)

	_, err = core.ServiceAccounts("team").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	// Deleting the namespace leaves it Terminating until the namespace
	// controller has deleted its content.
	require.NoError(t, core.Namespaces().Delete(ctx, "team", metav1.DeleteOptions{}))
	ns, err = core.Namespaces().Get(ctx, "team", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, ns.DeletionTimestamp)
	err = core.Namespaces().Delete(ctx, "team", metav1.DeleteOptions{})
	require.True(t, apierrors.IsConflict(err), "a second delete of a terminating namespace: %v", err)
	_, err = core.ConfigMaps("team").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{})
	require.True(t, apierrors.IsForbidden(err), "a write into a terminating namespace: %v", err)
	_, err = ts.ns.Reconcile(ctx, reconcile.Request{Name: "team"})
	require.NoError(t, err)
	_, err = core.Namespaces().Get(ctx, "team", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "%v", err)
	_, err = core.ConfigMaps("team").Get(ctx, "cfg", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "%v", err)
	_, err = core.Secrets("team").Get(ctx, "s", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "%v", err)
}

func TestServerNodes(t *testing.T) {
	ts := newTestServer(t)
	ctx := t.Context()
	core := ts.client.CoreV1()
	node := &virtkit.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
	require.NoError(t, ts.store.Create(ctx, node))
	node.Status.Conditions = []virtkit.Condition{{Type: virtkit.NodeReady, Status: virtkit.ConditionTrue, Reason: virtkit.NodeReasonAgentReady}}
	node.Status.HostUUID = "uuid-1"
	require.NoError(t, ts.store.UpdateStatus(ctx, node))

	nodes, err := core.Nodes().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, nodes.Items, 1)
	n := nodes.Items[0]
	assert.Equal(t, "node-1", n.Name)
	assert.Equal(t, "uuid-1", n.Status.NodeInfo.SystemUUID)
	require.Len(t, n.Status.Conditions, 1)
	assert.Equal(t, corev1.NodeReady, n.Status.Conditions[0].Type)
	assert.Equal(t, corev1.ConditionTrue, n.Status.Conditions[0].Status)

	w, err := core.Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: nodes.ResourceVersion})
	require.NoError(t, err)
	defer w.Stop()
	factory := informers.NewSharedInformerFactory(ts.client, 0)
	lister := factory.Core().V1().Nodes().Lister()
	stop := make(chan struct{})
	factory.Start(stop)
	defer func() { close(stop); factory.Shutdown() }()
	for _, ok := range factory.WaitForCacheSync(stop) {
		require.True(t, ok)
	}
	cached, err := lister.Get("node-1")
	require.NoError(t, err)
	assert.Equal(t, "uuid-1", cached.Status.NodeInfo.SystemUUID)

	// kubectl cordon's patch reaches virtkit's Node.
	_, err = core.Nodes().Patch(ctx, "node-1", types.StrategicMergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	require.NoError(t, ts.store.Get(ctx, store.Key{Name: "node-1"}, node))
	assert.True(t, node.Spec.Unschedulable)
	e := <-w.ResultChan()
	assert.Equal(t, watch.Modified, e.Type)
	assert.True(t, e.Object.(*corev1.Node).Spec.Unschedulable)
	cordoned, err := core.Nodes().List(ctx, metav1.ListOptions{FieldSelector: "spec.unschedulable=true"})
	require.NoError(t, err)
	assert.Len(t, cordoned.Items, 1)

	// An update with a stale resourceVersion conflicts.
	n.Spec.Unschedulable = false
	_, err = core.Nodes().Update(ctx, &n, metav1.UpdateOptions{})
	require.True(t, apierrors.IsConflict(err), "%v", err)
	cur, err := core.Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	require.NoError(t, err)
	cur.Spec.Unschedulable = false
	_, err = core.Nodes().Update(ctx, cur, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, ts.store.Get(ctx, store.Key{Name: "node-1"}, node))
	assert.False(t, node.Spec.Unschedulable)

	cur, err = core.Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	require.NoError(t, err)
	cur.Spec.PodCIDR = "10.0.0.0/24"
	_, err = core.Nodes().Update(ctx, cur, metav1.UpdateOptions{})
	require.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.Contains(t, err.Error(), "spec")

	// Pods: none, and drain's pod list finds none on the node.
	pods, err := core.Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node-1"})
	require.NoError(t, err)
	assert.Empty(t, pods.Items)
	err = core.Pods("default").Delete(ctx, "p", metav1.DeleteOptions{})
	require.True(t, apierrors.IsMethodNotSupported(err), "%v", err)
}

func TestServerClaimsAndEvents(t *testing.T) {
	ts := newTestServer(t)
	ctx := t.Context()
	core := ts.client.CoreV1()
	dv := &virtkit.DataVolume{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "disk"}}
	dv.Spec.Storage = &virtkit.PersistentVolumeClaimSpec{AccessModes: []virtkit.PersistentVolumeAccessMode{"ReadWriteOnce"}}
	require.NoError(t, ts.store.Create(ctx, dv))
	dv.Status.Conditions = []virtkit.DataVolumeCondition{{Type: virtkit.DataVolumeBound, Status: virtkit.ConditionTrue}}
	require.NoError(t, ts.store.UpdateStatus(ctx, dv))

	pvc, err := core.PersistentVolumeClaims("default").Get(ctx, "disk", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.ClaimBound, pvc.Status.Phase)
	assert.Equal(t, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, pvc.Spec.AccessModes)
	_, err = core.PersistentVolumeClaims("default").Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	require.True(t, apierrors.IsInvalid(err), "only upload claims are created: %v", err)
	assert.Contains(t, err.Error(), apicorev1.AnnUploadTarget)

	// An upload claim (virtctl image-upload pvc) becomes an upload DataVolume.
	up := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "up", Labels: map[string]string{"a": "b"},
		Annotations: map[string]string{apicorev1.AnnUploadTarget: "", apicorev1.AnnContentType: "kubevirt"}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	created, err := core.PersistentVolumeClaims("default").Create(ctx, up, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.ClaimPending, created.Status.Phase)
	assert.Contains(t, created.Annotations, apicorev1.AnnUploadTarget)
	udv := &virtkit.DataVolume{}
	require.NoError(t, ts.store.Get(ctx, store.Key{Namespace: "default", Name: "up"}, udv))
	require.NotNil(t, udv.Spec.Source.Upload)
	assert.Equal(t, "b", udv.Labels["a"])
	size, _ := virtkit.DataVolumeSize(&udv.Spec)
	assert.Equal(t, int64(1<<30), size)
	_, err = core.PersistentVolumeClaims("default").Create(ctx, up, metav1.CreateOptions{})
	require.True(t, apierrors.IsAlreadyExists(err), "%v", err)
	up.Name, up.Spec.Resources = "nosize", corev1.VolumeResourceRequirements{}
	_, err = core.PersistentVolumeClaims("default").Create(ctx, up, metav1.CreateOptions{})
	require.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.Contains(t, err.Error(), "spec.resources.requests.storage")

	for _, name := range []string{"a", "b"} {
		ev := &virtkit.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Reason: "Started", Type: "Normal",
			Regarding: virtkit.ObjectReference{Kind: "VirtualMachine", Namespace: "default", Name: "vm-" + name}}
		require.NoError(t, ts.store.Create(ctx, ev))
	}
	events, err := core.Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=vm-a,involvedObject.kind=VirtualMachine"})
	require.NoError(t, err)
	require.Len(t, events.Items, 1)
	assert.Equal(t, "a", events.Items[0].Name)
	assert.Equal(t, "Started", events.Items[0].Reason)
	_, err = core.Events("default").List(ctx, metav1.ListOptions{FieldSelector: "spec.foo=bar"})
	require.True(t, apierrors.IsBadRequest(err), "%v", err)
}
