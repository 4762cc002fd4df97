package apiserver_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/virtkit/virtkit"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/virtkit/virtkit/apiserver"
)

func storedEvent(name, regarding, reason string, count int32) *virtkit.Event {
	e := &virtkit.Event{
		TypeMeta:            metav1.TypeMeta{APIVersion: "events.k8s.io/v1", Kind: "Event"},
		EventTime:           metav1.NewMicroTime(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)),
		ReportingController: "virtkit.io/virt-controller",
		ReportingInstance:   "host-1",
		Action:              "Create",
		Reason:              reason,
		Regarding:           virtkit.ObjectReference{Kind: "VirtualMachine", Namespace: "default", Name: regarding, UID: types.UID("uid-" + regarding), APIVersion: "kubevirt.io/v1"},
		Note:                "note of " + name,
		Type:                virtkit.EventTypeNormal,
	}
	if count > 1 {
		e.Series = &virtkit.EventSeries{Count: count, LastObservedTime: metav1.NewMicroTime(time.Date(2026, 12, 3, 10, 5, 0, 0, time.UTC))}
	}
	e.Name, e.Namespace = name, "default"
	return e
}

// client-go's typed core/v1 client reads the events.k8s.io events as
// core/v1 Events (kubectl describe's query: involvedObject field
// selectors), watches them, and may not write them.
func TestCoreV1EventsView(t *testing.T) {
	st := newStore(t)
	ctx := t.Context()
	require.NoError(t, st.Create(ctx, storedEvent("vm-a.1", "vm-a", "SuccessfulCreate", 1)))
	require.NoError(t, st.Create(ctx, storedEvent("vm-b.1", "vm-b", "SuccessfulCreate", 3)))
	ts := startServer(t, st, apiserver.GenericOptions{Clock: clocktesting.NewFakePassiveClock(time.Date(2026, 12, 3, 10, 10, 0, 0, time.UTC))})
	cs, err := kubernetes.NewForConfig(ts.admin())
	require.NoError(t, err)

	groups, err := cs.Discovery().ServerGroups()
	require.NoError(t, err)
	require.NotEmpty(t, groups.Groups)
	assert.Equal(t, "", groups.Groups[0].Name, "the core group is listed first, as kube-apiserver lists it")
	core, err := cs.Discovery().ServerResourcesForGroupVersion("v1")
	require.NoError(t, err)
	i := slices.IndexFunc(core.APIResources, func(r metav1.APIResource) bool { return r.Name == "events" })
	require.GreaterOrEqual(t, i, 0, "v1 serves events")
	assert.Equal(t, metav1.Verbs{"get", "list", "watch"}, core.APIResources[i].Verbs)
	_, err = cs.Discovery().ServerPreferredResources()
	require.NoError(t, err, "kubectl api-resources works")

	sel := fields.Set{"involvedObject.name": "vm-b", "involvedObject.namespace": "default",
		"involvedObject.kind": "VirtualMachine", "involvedObject.uid": "uid-vm-b"}.AsSelector().String()
	list, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: sel, Limit: 500})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	e := list.Items[0]
	assert.Equal(t, "vm-b.1", e.Name)
	assert.Equal(t, corev1.ObjectReference{Kind: "VirtualMachine", Namespace: "default", Name: "vm-b", UID: "uid-vm-b", APIVersion: "kubevirt.io/v1"}, e.InvolvedObject)
	assert.Equal(t, "note of vm-b.1", e.Message)
	assert.Equal(t, "virtkit.io/virt-controller", e.Source.Component)
	assert.Equal(t, int32(3), e.Count)
	assert.Equal(t, time.Date(2026, 12, 3, 10, 5, 0, 0, time.UTC), e.LastTimestamp.UTC())
	assert.Equal(t, time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC), e.FirstTimestamp.UTC())
	got, err := cs.CoreV1().Events("default").Get(ctx, "vm-a.1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "vm-a", got.InvolvedObject.Name)
	everywhere, err := cs.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "reason=SuccessfulCreate"})
	require.NoError(t, err)
	assert.Len(t, everywhere.Items, 2)
	_, err = cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.color=red"})
	assert.True(t, apierrors.IsBadRequest(err), "unknown field label: %v", err)

	// kube-apiserver's printer columns for core events.
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/api/v1/namespaces/default/events").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Param("fieldSelector", "involvedObject.name=vm-b").DoRaw(ctx)
	require.NoError(t, err)
	var tbl metav1.Table
	require.NoError(t, json.Unmarshal(raw, &tbl))
	var names []string
	for _, c := range tbl.ColumnDefinitions {
		names = append(names, c.Name)
	}
	assert.Equal(t, []string{"Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message", "First Seen", "Count", "Name"}, names)
	require.Len(t, tbl.Rows, 1)
	assert.Equal(t, []any{"5m (x3 over 10m)", "Normal", "SuccessfulCreate", "virtualmachine/vm-b", "", "virtkit.io/virt-controller",
		"note of vm-b.1", "10m", "3", "vm-b.1"}, tbl.Rows[0].Cells)

	// events.k8s.io selects by the same fields under regarding.*.
	raw, err = cs.Discovery().RESTClient().Get().AbsPath("/apis/events.k8s.io/v1/namespaces/default/events").
		Param("fieldSelector", "regarding.name=vm-b,regarding.uid=uid-vm-b").DoRaw(ctx)
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"name":"vm-b.1"`)
	assert.NotContains(t, string(raw), `"name":"vm-a.1"`)

	w, err := cs.CoreV1().Events("default").Watch(ctx, metav1.ListOptions{
		ResourceVersion: list.ResourceVersion, FieldSelector: "involvedObject.name=vm-c"})
	require.NoError(t, err)
	defer w.Stop()
	require.NoError(t, st.Create(ctx, storedEvent("vm-c.1", "vm-c", "Started", 1)))
	select {
	case ev := <-w.ResultChan():
		require.Equal(t, watch.Added, ev.Type)
		ce, ok := ev.Object.(*corev1.Event)
		require.True(t, ok, "a core/v1 Event: %T", ev.Object)
		assert.Equal(t, "Started", ce.Reason)
		assert.Equal(t, "vm-c", ce.InvolvedObject.Name)
	case <-time.After(20 * time.Second):
		t.Fatal("no watch event")
	}

	_, err = cs.CoreV1().Events("default").Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	assert.True(t, apierrors.IsMethodNotSupported(err), "read-only: %v", err)
	err = cs.CoreV1().Events("default").Delete(ctx, "vm-a.1", metav1.DeleteOptions{})
	assert.True(t, apierrors.IsMethodNotSupported(err), "read-only: %v", err)

	// Anything else under /api is not found.
	tr := ts.anonymous(t)
	resp, err := tr.Get(ts.URL + "/api/v1/pods")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "anonymous first")
	assert.True(t, strings.Contains(string(mustRaw(t, cs, "/api")), `"v1"`))
}

func mustRaw(t *testing.T, cs *kubernetes.Clientset, path string) []byte {
	t.Helper()
	b, err := cs.Discovery().RESTClient().Get().AbsPath(path).DoRaw(t.Context())
	require.NoError(t, err)
	return b
}
