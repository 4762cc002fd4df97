package metrics

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/store"
)

// failingLister fails every listing: a collector that lists would count
// an error and serve no VMI.
type failingLister struct{}

func (failingLister) List(context.Context, virtkit.ObjectList, store.ListOptions) error {
	return errors.New("listed")
}

func indexKeys(x *VMIIndex) ([]string, bool) {
	var keys []string
	ok := x.RangeVMIs(func(v *virtkit.VirtualMachineInstance) bool {
		keys = append(keys, v.Namespace+"/"+v.Name+"="+v.Labels["app"])
		return true
	})
	return keys, ok
}

func startIndex(t *testing.T, st store.Store, sel labels.Selector) *VMIIndex {
	t.Helper()
	x, err := NewVMIIndex(st, sel, Options{})
	require.NoError(t, err)
	_, ok := indexKeys(x)
	require.False(t, ok, "no view before Start")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- x.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return x
}

// TestVMIIndexFollowsTheStore: the index holds the store's VMIs matching
// its selector, in namespace/name order (namespace "a" before "a-b"),
// follows creations, label changes and deletions, and hands out the
// store's shared objects without anyone modifying them.
func TestVMIIndexFollowsTheStore(t *testing.T) {
	ctx := context.Background()
	st, err := store.NewMemoryWithOptions(store.Options{CheckReadOnlyEvents: true})
	require.NoError(t, err)
	create := func(ns, name, app string) {
		v := runningVMI(ns, name, "n1", map[string]string{"app": app, "idx": "yes"})
		require.NoError(t, st.Create(ctx, &v))
	}
	create("a-b", "x", "1")
	create("a", "z", "2")
	other := runningVMI("a", "other", "n1", map[string]string{"app": "no"})
	require.NoError(t, st.Create(ctx, &other))
	x := startIndex(t, st, labels.SelectorFromSet(labels.Set{"idx": "yes"}))

	eventually := func(want ...string) {
		t.Helper()
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			keys, ok := indexKeys(x)
			assert.True(c, ok)
			assert.Equal(c, want, keys)
		}, 10*time.Second, 5*time.Millisecond)
	}
	eventually("a/z=2", "a-b/x=1")

	create("a", "y", "3")
	eventually("a/y=3", "a/z=2", "a-b/x=1")

	var v virtkit.VirtualMachineInstance
	require.NoError(t, st.Get(ctx, store.Key{Namespace: "a", Name: "y"}, &v))
	v.Labels["app"] = "4"
	require.NoError(t, st.Update(ctx, &v))
	eventually("a/y=4", "a/z=2", "a-b/x=1")

	// Leaving the selector is leaving the index.
	require.NoError(t, st.Get(ctx, store.Key{Namespace: "a", Name: "z"}, &v))
	delete(v.Labels, "idx")
	require.NoError(t, st.Update(ctx, &v))
	gone := runningVMI("a-b", "x", "n1", nil)
	require.NoError(t, st.Delete(ctx, &gone, store.DeleteOptions{}))
	eventually("a/y=4")

	// The same object on every visit: nothing is copied per scrape.
	var first, second *virtkit.VirtualMachineInstance
	x.RangeVMIs(func(v *virtkit.VirtualMachineInstance) bool { first = v; return false })
	x.RangeVMIs(func(v *virtkit.VirtualMachineInstance) bool { second = v; return false })
	assert.Same(t, first, second)
	assert.NoError(t, st.ReadOnlyViolations())
}

// TestDomainCollectorOverAnIndex: a collector reading a VMIIndex streams
// and gathers exactly what one listing the store does, and leaves the
// shared objects unmodified.
func TestDomainCollectorOverAnIndex(t *testing.T) {
	ctx := context.Background()
	st, err := store.NewMemoryWithOptions(store.Options{CheckReadOnlyEvents: true})
	require.NoError(t, err)
	host := &fakeHost{fakeDomains: &fakeDomains{stats: map[string]hypervisor.DomainStats{}}, cpus: 2}
	for _, name := range []string{"c", "a", "b"} {
		v := runningVMI("ns", name, "n1", map[string]string{"app": name})
		require.NoError(t, st.Create(ctx, &v))
		host.stats[DomainName("ns", name)] = fullStats()
	}
	x := startIndex(t, st, nil)
	require.Eventually(t, func() bool { keys, _ := indexKeys(x); return len(keys) == 3 }, 10*time.Second, 5*time.Millisecond)

	nodes := []NodeSource{{Name: "n1", Domains: host}}
	listed, err := NewDomainCollector(DomainSources{Objects: st, Nodes: nodes}, Options{})
	require.NoError(t, err)
	indexed, err := NewDomainCollector(DomainSources{Objects: failingLister{}, Nodes: nodes, VMIs: x}, Options{})
	require.NoError(t, err)

	want := streamed(t, listed)
	for range 2 { // the second scrape reads the cached label sets
		got := streamed(t, indexed)
		assert.Equal(t, string(want), string(got))
	}
	assert.Equal(t, series(gathered(t, listed)), series(gathered(t, indexed)))
	assert.True(t, bytes.Contains(want, []byte(`name="a"`)))
	assert.NoError(t, st.ReadOnlyViolations())
}

// TestControlPlaneCollectorOverAnIndex: a control-plane collector taking
// its VMIs from a VMIIndex gathers what one listing them does.
func TestControlPlaneCollectorOverAnIndex(t *testing.T) {
	ctx := context.Background()
	st, err := store.NewMemoryWithOptions(store.Options{CheckReadOnlyEvents: true})
	require.NoError(t, err)
	for _, name := range []string{"c", "a", "b"} {
		v := withTransitions(runningVMI("ns", name, "n1", map[string]string{"app": name}), virtkit.Pending, time.Second, virtkit.Running, 3*time.Second)
		require.NoError(t, st.Create(ctx, &v))
	}
	x := startIndex(t, st, nil)
	require.Eventually(t, func() bool { keys, _ := indexKeys(x); return len(keys) == 3 }, 10*time.Second, 5*time.Millisecond)

	listed, err := NewControlPlaneCollector(ControlPlaneSources{Objects: st}, Options{})
	require.NoError(t, err)
	indexed, err := NewControlPlaneCollector(ControlPlaneSources{Objects: st, VMIs: x}, Options{})
	require.NoError(t, err)
	want := series(gathered(t, listed))
	assert.Contains(t, strings.Join(want, "\n"), `kubevirt_vmi_info{`)
	assert.Equal(t, want, series(gathered(t, indexed)))
	assert.NoError(t, st.ReadOnlyViolations())
}
