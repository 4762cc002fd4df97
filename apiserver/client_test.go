package apiserver_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/virtkit/virtkit/apiserver"
)

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }

func vmObject(t testing.TB, name, runStrategy string) *unstructured.Unstructured {
	t.Helper()
	doc := fmt.Sprintf(`apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: %s
  labels: {app: demo}
spec:
  runStrategy: %s
  template:
    spec:
      domain:
        devices: {}
        memory: {guest: 64Mi}
`, name, runStrategy)
	m := map[string]any{}
	require.NoError(t, yaml.Unmarshal([]byte(doc), &m))
	return &unstructured.Unstructured{Object: m}
}

// client-go's dynamic client does CRUD, paging, the status subresource,
// patches and gets Kubernetes' error reasons.
func TestDynamicClient(t *testing.T) {
	ts := startServer(t, newStore(t), apiserver.GenericOptions{})
	dc, err := dynamic.NewForConfig(ts.admin())
	require.NoError(t, err)
	ctx := t.Context()
	vms := dc.Resource(vmGVR).Namespace("default")

	created, err := vms.Create(ctx, vmObject(t, "vm-0", "Halted"), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.NotEmpty(t, created.GetUID())
	assert.NotEmpty(t, created.GetResourceVersion())
	// Defaulting ran: the template got a machine type.
	mt, found, _ := unstructured.NestedString(created.Object, "spec", "template", "spec", "domain", "machine", "type")
	assert.True(t, found, "defaulted machine type")
	assert.NotEmpty(t, mt)

	_, err = vms.Create(ctx, vmObject(t, "vm-0", "Halted"), metav1.CreateOptions{})
	assert.True(t, apierrors.IsAlreadyExists(err), "AlreadyExists: %v", err)
	_, err = vms.Get(ctx, "nope", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "NotFound: %v", err)

	// Invalid, with the field path in the causes.
	_, err = vms.Create(ctx, vmObject(t, "vm-bad", "Sometimes"), metav1.CreateOptions{})
	require.True(t, apierrors.IsInvalid(err), "Invalid: %v", err)
	var st apierrors.APIStatus
	require.ErrorAs(t, err, &st)
	require.NotNil(t, st.Status().Details)
	require.NotEmpty(t, st.Status().Details.Causes)
	assert.Equal(t, "spec.runStrategy", st.Status().Details.Causes[0].Field)
	// An unknown field is refused with its path under strict field
	// validation (kubectl's default).
	bad := vmObject(t, "vm-bad", "Halted")
	require.NoError(t, unstructured.SetNestedField(bad.Object, "x", "spec", "template", "spec", "domain", "devices", "nope"))
	_, err = vms.Create(ctx, bad, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict})
	require.True(t, apierrors.IsBadRequest(err), "BadRequest: %v", err)
	assert.ErrorContains(t, err, `unknown field "spec.template.spec.domain.devices.nope"`)

	// Update with a stale resourceVersion: Conflict.
	stale := created.DeepCopy()
	cur := created.DeepCopy()
	cur.SetLabels(map[string]string{"app": "demo", "v": "2"})
	cur, err = vms.Update(ctx, cur, metav1.UpdateOptions{})
	require.NoError(t, err)
	stale.SetLabels(map[string]string{"app": "stale"})
	_, err = vms.Update(ctx, stale, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsConflict(err), "Conflict: %v", err)

	// The status subresource: an update writes status only; a spec update
	// keeps the stored status.
	require.NoError(t, unstructured.SetNestedField(cur.Object, "Stopped", "status", "printableStatus"))
	withStatus, err := vms.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
	require.NoError(t, err)
	ps, _, _ := unstructured.NestedString(withStatus.Object, "status", "printableStatus")
	assert.Equal(t, "Stopped", ps)
	require.NoError(t, unstructured.SetNestedField(withStatus.Object, "Running", "status", "printableStatus"))
	withStatus.SetLabels(map[string]string{"app": "demo", "v": "3"})
	upd, err := vms.Update(ctx, withStatus, metav1.UpdateOptions{})
	require.NoError(t, err)
	ps, _, _ = unstructured.NestedString(upd.Object, "status", "printableStatus")
	assert.Equal(t, "Stopped", ps, "a spec update does not write status")

	// Patches: merge, JSON, strategic merge and server-side apply.
	p, err := vms.Patch(ctx, "vm-0", types.MergePatchType, []byte(`{"spec":{"runStrategy":"Always"}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	rs, _, _ := unstructured.NestedString(p.Object, "spec", "runStrategy")
	assert.Equal(t, "Always", rs)
	p, err = vms.Patch(ctx, "vm-0", types.JSONPatchType, []byte(`[{"op":"replace","path":"/spec/runStrategy","value":"Manual"}]`), metav1.PatchOptions{})
	require.NoError(t, err)
	rs, _, _ = unstructured.NestedString(p.Object, "spec", "runStrategy")
	assert.Equal(t, "Manual", rs)
	p, err = vms.Patch(ctx, "vm-0", types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"s":"m"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	assert.Equal(t, "m", p.GetLabels()["s"])
	_, err = vms.Patch(ctx, "vm-0", types.MergePatchType, []byte(`{"spec":{"runStrategy":"Sometimes"}}`), metav1.PatchOptions{})
	assert.True(t, apierrors.IsInvalid(err), "Invalid: %v", err)
	_, err = vms.Patch(ctx, "vm-0", types.MergePatchType, []byte(`{"metadata":{"resourceVersion":"1"},"spec":{"runStrategy":"Halted"}}`), metav1.PatchOptions{})
	assert.True(t, apierrors.IsConflict(err), "a patch naming a stale resourceVersion conflicts: %v", err)
	p, err = vms.Patch(ctx, "vm-0", types.ApplyPatchType,
		[]byte(`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":{"name":"vm-0","labels":{"a":"p"}}}`),
		metav1.PatchOptions{FieldManager: "x"})
	require.NoError(t, err)
	assert.Equal(t, "p", p.GetLabels()["a"])
	assert.Equal(t, "m", p.GetLabels()["s"], "apply keeps the fields other managers own")
	p, err = vms.Patch(ctx, "vm-0", types.MergePatchType, []byte(`{"status":{"printableStatus":"Paused"}}`), metav1.PatchOptions{}, "status")
	require.NoError(t, err)
	ps, _, _ = unstructured.NestedString(p.Object, "status", "printableStatus")
	assert.Equal(t, "Paused", ps)

	// Paging: limit/continue across 5 objects, label selector.
	for i := 1; i < 5; i++ {
		_, err := vms.Create(ctx, vmObject(t, fmt.Sprintf("vm-%d", i), "Halted"), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	var names []string
	opts := metav1.ListOptions{Limit: 2}
	pages := 0
	for {
		l, err := vms.List(ctx, opts)
		require.NoError(t, err)
		pages++
		for _, it := range l.Items {
			names = append(names, it.GetName())
		}
		if l.GetContinue() == "" {
			break
		}
		opts.Continue = l.GetContinue()
	}
	assert.Equal(t, 3, pages)
	assert.Equal(t, []string{"vm-0", "vm-1", "vm-2", "vm-3", "vm-4"}, names)
	l, err := vms.List(ctx, metav1.ListOptions{LabelSelector: "s=m"})
	require.NoError(t, err)
	require.Len(t, l.Items, 1)
	assert.Equal(t, "vm-0", l.Items[0].GetName())
	l, err = vms.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=vm-3"})
	require.NoError(t, err)
	require.Len(t, l.Items, 1)

	// Delete with preconditions.
	wrong := types.UID("not-the-uid")
	err = vms.Delete(ctx, "vm-1", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrong}})
	assert.True(t, apierrors.IsConflict(err), "Conflict: %v", err)
	got, err := vms.Get(ctx, "vm-1", metav1.GetOptions{})
	require.NoError(t, err)
	uid := got.GetUID()
	require.NoError(t, vms.Delete(ctx, "vm-1", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}))
	_, err = vms.Get(ctx, "vm-1", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err))
	err = vms.Delete(ctx, "vm-1", metav1.DeleteOptions{})
	assert.True(t, apierrors.IsNotFound(err))

	// A finalizer keeps a deleted object until it is removed.
	fin := vmObject(t, "vm-fin", "Halted")
	fin.SetFinalizers([]string{"example.com/hold"})
	_, err = vms.Create(ctx, fin, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, vms.Delete(ctx, "vm-fin", metav1.DeleteOptions{}))
	held, err := vms.Get(ctx, "vm-fin", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotNil(t, held.GetDeletionTimestamp())
	_, err = vms.Patch(ctx, "vm-fin", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	_, err = vms.Get(ctx, "vm-fin", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "gone once the finalizer is removed: %v", err)
}

// A user limited to one namespace gets Forbidden everywhere else, for every
// verb, and nothing changes.
func TestForbidden(t *testing.T) {
	ts := startServer(t, newStore(t), apiserver.GenericOptions{})
	ctx := t.Context()
	admin, err := dynamic.NewForConfig(ts.admin())
	require.NoError(t, err)
	_, err = admin.Resource(vmGVR).Namespace("default").Create(ctx, vmObject(t, "vm-a", "Halted"), metav1.CreateOptions{})
	require.NoError(t, err)
	alice, err := dynamic.NewForConfig(ts.token("alice-token"))
	require.NoError(t, err)
	other := alice.Resource(vmGVR).Namespace("default")
	forbidden := func(name string, err error) {
		t.Helper()
		assert.True(t, apierrors.IsForbidden(err), "%s: Forbidden, got %v", name, err)
	}
	_, err = other.Get(ctx, "vm-a", metav1.GetOptions{})
	forbidden("get", err)
	_, err = other.List(ctx, metav1.ListOptions{})
	forbidden("list", err)
	_, err = alice.Resource(vmGVR).List(ctx, metav1.ListOptions{})
	forbidden("list all namespaces", err)
	_, err = other.Watch(ctx, metav1.ListOptions{})
	forbidden("watch", err)
	_, err = other.Create(ctx, vmObject(t, "vm-b", "Halted"), metav1.CreateOptions{})
	forbidden("create", err)
	_, err = other.Patch(ctx, "vm-a", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
	forbidden("patch", err)
	_, err = other.Patch(ctx, "vm-a", types.MergePatchType, []byte(`{"status":{"printableStatus":"Running"}}`), metav1.PatchOptions{}, "status")
	forbidden("patch status", err)
	cur, err := admin.Resource(vmGVR).Namespace("default").Get(ctx, "vm-a", metav1.GetOptions{})
	require.NoError(t, err)
	_, err = other.Update(ctx, cur, metav1.UpdateOptions{})
	forbidden("update", err)
	forbidden("delete", other.Delete(ctx, "vm-a", metav1.DeleteOptions{}))
	_, err = alice.Resource(vmGVR.GroupVersion().WithResource("virtualmachineinstancemigrations")).Namespace("default").
		List(ctx, metav1.ListOptions{})
	forbidden("list migrations", err)
	_, err = alice.Resource(schemaGVR("migrations.kubevirt.io", "v1alpha1", "migrationpolicies")).List(ctx, metav1.ListOptions{})
	forbidden("cluster-scoped list", err)

	after, err := admin.Resource(vmGVR).Namespace("default").Get(ctx, "vm-a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, cur.GetResourceVersion(), after.GetResourceVersion(), "nothing changed")
	l, err := admin.Resource(vmGVR).Namespace("default").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, l.Items, 1)

	mine := alice.Resource(vmGVR).Namespace("team-a")
	_, err = mine.Create(ctx, vmObject(t, "vm-b", "Halted"), metav1.CreateOptions{})
	require.NoError(t, err)
	l, err = mine.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, l.Items, 1)
	require.NoError(t, mine.Delete(ctx, "vm-b", metav1.DeleteOptions{}))
}
