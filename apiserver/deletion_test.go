package apiserver_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/yaml"

	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/cluster"
)

var (
	vmiGVR = schemaGVR("kubevirt.io", "v1", "virtualmachineinstances")
	rsGVR  = schemaGVR("kubevirt.io", "v1", "virtualmachineinstancereplicasets")
)

func unstructuredYAML(t testing.TB, doc string) *unstructured.Unstructured {
	t.Helper()
	m := map[string]any{}
	require.NoError(t, yaml.Unmarshal([]byte(doc), &m))
	return &unstructured.Unstructured{Object: m}
}

// kubectl delete waits as kubectl does: list by name, watch from the
// list's resourceVersion with the name's field selector. Every change
// between the list and the watch reaches the watch, through a deletion
// that waits for finalizers, whichever version in it the list was at.
func TestWatchFromListedVersionDeliversDeleted(t *testing.T) {
	ts := startServer(t, newStore(t), apiserver.GenericOptions{})
	dc, err := dynamic.NewForConfig(ts.admin())
	require.NoError(t, err)
	ctx := t.Context()
	vmis := dc.Resource(vmiGVR).Namespace("default")
	byName := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "vmi-0").String()}
	for _, tc := range []struct {
		name      string
		listAfter int // writes done before the list: 0 create, 1 delete (mark), 2 first finalizer, 3 last finalizer
		want      []watch.EventType
	}{
		{"listed before the delete", 0, []watch.EventType{watch.Modified, watch.Modified, watch.Deleted}},
		{"listed after the mark", 1, []watch.EventType{watch.Modified, watch.Deleted}},
		{"listed with one finalizer left", 2, []watch.EventType{watch.Deleted}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := vmis.Create(ctx, unstructuredYAML(t, `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: vmi-0
  finalizers: [example.com/a, example.com/b]
spec:
  domain:
    devices: {}
    memory: {guest: 64Mi}
`), metav1.CreateOptions{})
			require.NoError(t, err)
			var listRV string
			list := func() {
				l, err := vmis.List(ctx, byName)
				require.NoError(t, err)
				require.Len(t, l.Items, 1)
				listRV = l.GetResourceVersion()
			}
			dropFinalizer := func() {
				o, err := vmis.Get(ctx, "vmi-0", metav1.GetOptions{})
				require.NoError(t, err)
				o.SetFinalizers(o.GetFinalizers()[1:])
				_, err = vmis.Update(ctx, o, metav1.UpdateOptions{})
				require.NoError(t, err)
			}
			steps := []func(){
				func() { require.NoError(t, vmis.Delete(ctx, "vmi-0", metav1.DeleteOptions{})) },
				dropFinalizer,
				dropFinalizer,
			}
			for i, step := range steps {
				if i == tc.listAfter {
					list()
				}
				step()
			}
			_, err = vmis.Get(ctx, "vmi-0", metav1.GetOptions{})
			require.True(t, apierrors.IsNotFound(err), "deleted: %v", err)

			opts := byName
			opts.ResourceVersion = listRV
			opts.AllowWatchBookmarks = true
			w, err := vmis.Watch(ctx, opts)
			require.NoError(t, err)
			defer w.Stop()
			var got []watch.EventType
			timeout := time.After(30 * time.Second)
			for len(got) < len(tc.want) {
				select {
				case ev := <-w.ResultChan():
					if ev.Type != watch.Bookmark {
						got = append(got, ev.Type)
					}
				case <-timeout:
					require.Failf(t, "watch hung", "got %v, want %v", got, tc.want)
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// startClusterServer serves the API over a running simulated cluster.
func startClusterServer(t *testing.T) (*cluster.Cluster, *testServer, dynamic.Interface) {
	t.Helper()
	c, err := cluster.New(cluster.Options{Nodes: 2, Store: newStore(t)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	ts := startServer(t, c.Store(), apiserver.GenericOptions{})
	dc, err := dynamic.NewForConfig(ts.admin())
	require.NoError(t, err)
	return c, ts, dc
}

// deleteRaw deletes with a DeleteOptions body as JSON (the deprecated
// orphanDependents, which client-go's types mark deprecated).
func deleteRaw(ctx context.Context, t *testing.T, ts *testServer, path, body string) {
	t.Helper()
	tr, err := rest.TransportFor(ts.admin())
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, ts.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: tr}).Do(req)
	require.NoError(t, err)
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// 202 Accepted: the object stays while finalizers hold it.
	require.Contains(t, []int{http.StatusOK, http.StatusAccepted}, resp.StatusCode, "%s", msg)
}

func rsObject(t testing.TB, name string, replicas int) *unstructured.Unstructured {
	return unstructuredYAML(t, fmt.Sprintf(`apiVersion: kubevirt.io/v1
kind: VirtualMachineInstanceReplicaSet
metadata:
  name: %s
spec:
  replicas: %d
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec:
      domain:
        devices: {}
        memory: {guest: 64Mi}
`, name, replicas, name, name))
}

// runningVMIs lists the default namespace's running VMIs.
func runningVMIs(ctx context.Context, t *testing.T, dc dynamic.Interface) []unstructured.Unstructured {
	t.Helper()
	l, err := dc.Resource(vmiGVR).Namespace("default").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var out []unstructured.Unstructured
	for _, it := range l.Items {
		if phase, _, _ := unstructured.NestedString(it.Object, "status", "phase"); phase == "Running" {
			out = append(out, it)
		}
	}
	return out
}

// client-go deletes of a VM and a ReplicaSet with each propagation policy
// (and the deprecated orphanDependents): Orphan leaves the VMIs running
// without owner references, Foreground and Background delete them.
func TestDeletePropagationThroughAPI(t *testing.T) {
	c, ts, dc := startClusterServer(t)
	ctx := t.Context()
	policy := func(p metav1.DeletionPropagation) metav1.DeleteOptions {
		return metav1.DeleteOptions{PropagationPolicy: &p}
	}
	for i, tc := range []struct {
		name    string
		opts    metav1.DeleteOptions
		raw     string // a DeleteOptions body sent as is instead of opts
		orphans bool
	}{
		{"orphan", policy(metav1.DeletePropagationOrphan), "", true},
		{"foreground", policy(metav1.DeletePropagationForeground), "", false},
		{"background", policy(metav1.DeletePropagationBackground), "", false},
		{"orphanDependents true", metav1.DeleteOptions{}, `{"kind":"DeleteOptions","apiVersion":"v1","orphanDependents":true}`, true},
		{"orphanDependents false", metav1.DeleteOptions{}, `{"kind":"DeleteOptions","apiVersion":"v1","orphanDependents":false}`, false},
	} {
		for _, kind := range []string{"vm", "vmirs"} {
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				name := fmt.Sprintf("%s-%d", kind, i)
				res, obj, want, plural := dc.Resource(vmGVR), vmObject(t, name, "Always"), 1, "virtualmachines"
				if kind == "vmirs" {
					res, obj, want, plural = dc.Resource(rsGVR), rsObject(t, name, 2), 2, "virtualmachineinstancereplicasets"
				}
				owner, err := res.Namespace("default").Create(ctx, obj, metav1.CreateOptions{})
				require.NoError(t, err)
				require.Eventually(t, func() bool { return len(runningVMIs(ctx, t, dc)) == want }, 30*time.Second, 20*time.Millisecond)

				if tc.raw != "" {
					deleteRaw(ctx, t, ts, "/apis/kubevirt.io/v1/namespaces/default/"+plural+"/"+name, tc.raw)
				} else {
					require.NoError(t, res.Namespace("default").Delete(ctx, name, tc.opts))
				}
				require.Eventually(t, func() bool {
					_, err := res.Namespace("default").Get(ctx, name, metav1.GetOptions{})
					return apierrors.IsNotFound(err)
				}, 30*time.Second, 20*time.Millisecond, "the owner goes")
				if !tc.orphans {
					require.Eventually(t, func() bool {
						l, err := dc.Resource(vmiGVR).Namespace("default").List(ctx, metav1.ListOptions{})
						return err == nil && len(l.Items) == 0
					}, 30*time.Second, 20*time.Millisecond, "the VMIs go")
					return
				}
				left := runningVMIs(ctx, t, dc)
				require.Len(t, left, want, "orphaned VMIs keep running")
				for _, v := range left {
					assert.Empty(t, v.GetOwnerReferences(), v.GetName())
					assert.Nil(t, v.GetDeletionTimestamp(), v.GetName())
					for _, ref := range v.GetOwnerReferences() {
						assert.NotEqual(t, owner.GetUID(), ref.UID)
					}
				}
				require.NoError(t, cluster.CheckOwnersAndFinalizers(ctx, c))
				for _, v := range left {
					require.NoError(t, dc.Resource(vmiGVR).Namespace("default").Delete(ctx, v.GetName(), metav1.DeleteOptions{}))
				}
				require.Eventually(t, func() bool {
					l, err := dc.Resource(vmiGVR).Namespace("default").List(ctx, metav1.ListOptions{})
					return err == nil && len(l.Items) == 0
				}, 30*time.Second, 20*time.Millisecond, "an orphaned VMI can be deleted")
			})
		}
	}
}

// A delete that sets both orphanDependents and propagationPolicy, or an
// unknown policy, is invalid and deletes nothing.
func TestDeletePropagationInvalid(t *testing.T) {
	ts := startServer(t, newStore(t), apiserver.GenericOptions{})
	dc, err := dynamic.NewForConfig(ts.admin())
	require.NoError(t, err)
	ctx := t.Context()
	vms := dc.Resource(vmGVR).Namespace("default")
	_, err = vms.Create(ctx, vmObject(t, "vm-0", "Halted"), metav1.CreateOptions{})
	require.NoError(t, err)
	sideways := metav1.DeletionPropagation("Sideways")
	err = vms.Delete(ctx, "vm-0", metav1.DeleteOptions{PropagationPolicy: &sideways})
	require.True(t, apierrors.IsInvalid(err), "%v", err)
	tr, err := rest.TransportFor(ts.admin())
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, ts.URL+"/apis/kubevirt.io/v1/namespaces/default/virtualmachines/vm-0",
		strings.NewReader(`{"orphanDependents":true,"propagationPolicy":"Orphan"}`))
	require.NoError(t, err)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "orphanDependents and propagationPolicy both set")
	_, err = vms.Get(ctx, "vm-0", metav1.GetOptions{})
	require.NoError(t, err)
}

// kubectl delete's wait, as kubectl 1.32 runs it (client-go's
// UntilWithSync: a reflector lists by name, then watches from the list's
// resourceVersion),
// with the whole finalized deletion happening after the list and before
// the watch starts: the watch still delivers DELETED.
func TestDeleteWaitAcrossListAndWatch(t *testing.T) {
	ts := startServer(t, newStore(t), apiserver.GenericOptions{})
	cfg := ts.admin()
	gate := &watchGate{waiting: make(chan struct{}, 1)}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { gate.next = rt; return gate }
	dc, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	ctx := t.Context()
	vmis := dc.Resource(vmiGVR).Namespace("default")
	_, err = vmis.Create(ctx, unstructuredYAML(t, `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: vmi-0
  finalizers: [example.com/a]
spec:
  domain:
    devices: {}
    memory: {guest: 64Mi}
`), metav1.CreateOptions{})
	require.NoError(t, err)

	byName := fields.OneTermEqualSelector("metadata.name", "vmi-0").String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = byName
			return vmis.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			if o.SendInitialEvents != nil {
				// The reflector then falls back to list and watch, as
				// kubectl 1.32 waits.
				return nil, errors.New("this test lists and watches")
			}
			o.FieldSelector = byName
			return vmis.Watch(ctx, o)
		},
	}
	gate.close()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := watchtools.UntilWithSync(wctx, lw, &unstructured.Unstructured{}, nil, func(ev watch.Event) (bool, error) {
			return ev.Type == watch.Deleted, nil
		})
		done <- err
	}()
	select {
	case <-gate.waiting: // listed; the watch is held
	case <-wctx.Done():
		t.Fatal("no watch request")
	}
	require.NoError(t, vmis.Delete(ctx, "vmi-0", metav1.DeleteOptions{}))
	o, err := vmis.Get(ctx, "vmi-0", metav1.GetOptions{})
	require.NoError(t, err)
	o.SetFinalizers(nil)
	_, err = vmis.Update(ctx, o, metav1.UpdateOptions{})
	require.NoError(t, err)
	gate.release()
	require.NoError(t, <-done, "the wait sees DELETED")
}
