package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/drain"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/store/etcd"
	"github.com/virtkit/virtkit/store/etcd/etcdtest"
)

// startProcess runs a virtkit command in the background until the test
// ends and returns its output.
func startProcess(t *testing.T, args ...string) *lockedBuffer {
	t.Helper()
	return startCommand(t, false, args...)
}

// startCommand runs a virtkit command in the background until the test
// ends and returns its output; with checkExit, an error the command
// returns when it is stopped fails the test.
func startCommand(t *testing.T, checkExit bool, args ...string) *lockedBuffer {
	t.Helper()
	cmd := newRootCmd()
	out := &lockedBuffer{}
	cmd.SetOut(out)
	cmd.SetErr(out)
	cmd.SetArgs(args)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if checkExit {
				assert.NoError(t, err, "virtkit %s: %s", args[0], out)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("virtkit %s did not stop", args[0])
		}
	})
	return out
}

// runVerb runs a one-shot virtkit command and returns its output.
func runVerb(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out lockedBuffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	err := cmd.ExecuteContext(ctx)
	return out.String(), err
}

// The multi-process control plane (virtkit controller on etcd and two
// virtkit node processes): the node agents record their events (Started,
// Migrating, Migrated) as the embedded cluster's do, and virtkit drain
// live-migrates a LiveMigrate VMI off its node and reports it.
func TestNodeProcessEventsAndDrainCLI(t *testing.T) {
	endpoints := etcdtest.StartServer(t)
	storeArg := "etcd://" + strings.TrimPrefix(endpoints[0], "http://")
	st, err := etcd.New(t.Context(), etcd.Options{Endpoints: endpoints})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })

	ctrlOut := startProcess(t, "controller", "--store", storeArg, "--leader-ttl", "5s")
	for _, n := range []string{"n1", "n2"} {
		startProcess(t, "node", "--name", n, "--store", storeArg, "--hypervisor", "sim",
			"--heartbeat-interval", "200ms", "--status-interval", "200ms")
	}
	require.Eventually(t, func() bool {
		var nodes virtkit.NodeList
		require.NoError(t, st.List(t.Context(), &nodes, store.ListOptions{}))
		ready := 0
		for _, n := range nodes.Items {
			if virtkit.IsConditionTrue(n.Status.Conditions, virtkit.NodeReady) {
				ready++
			}
		}
		return ready == 2
	}, 30*time.Second, 50*time.Millisecond, "both nodes ready: %s", ctrlOut)

	mem := resource.MustParse("64Mi")
	live := virtkit.EvictionStrategyLiveMigrate
	vmi := &virtkit.VirtualMachineInstance{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstance},
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default"},
		Spec: virtkit.VirtualMachineInstanceSpec{Domain: virtkit.DomainSpec{Memory: &virtkit.Memory{Guest: &mem}},
			EvictionStrategy: &live},
	}
	virtkit.DefaultOptions{PodNetworkBinding: virtkit.NetworkBindingMasquerade}.SetDefaults(vmi)
	require.NoError(t, st.Create(t.Context(), vmi))
	get := func() *virtkit.VirtualMachineInstance {
		v := &virtkit.VirtualMachineInstance{}
		require.NoError(t, st.Get(t.Context(), store.Key{Namespace: "default", Name: "a"}, v))
		return v
	}
	require.Eventually(t, func() bool {
		v := get()
		return v.IsRunning() && v.IsMigratable()
	}, 30*time.Second, 50*time.Millisecond, "the VMI runs and can migrate")
	from := get().Status.NodeName

	out, err := runVerb(t, "drain", from, "--store", storeArg, "--timeout", "60s")
	require.NoError(t, err, out)
	assert.Contains(t, out, "node/"+from+" cordoned\n")
	assert.Contains(t, out, "vmi/default/a (evictionStrategy LiveMigrate): Migrating")
	assert.True(t, strings.HasSuffix(out, "node/"+from+" drained\n"), out)
	v := get()
	assert.True(t, v.IsRunning())
	assert.NotEqual(t, from, v.Status.NodeName, "moved off the drained node")

	// The node agents' own events, written by the virtkit node processes.
	require.Eventually(t, func() bool {
		var l virtkit.EventList
		require.NoError(t, st.List(t.Context(), &l, store.ListOptions{Namespace: "default"}))
		seen := map[string]bool{}
		for _, e := range l.Items {
			if e.ReportingController == virtkit.ReportingNodeAgent && e.Regarding.Name == "a" {
				seen[e.Reason] = true
			}
		}
		return seen[virtkit.EventReasonStarted] && seen[virtkit.EventReasonMigrating] && seen[virtkit.EventReasonMigrated]
	}, 10*time.Second, 50*time.Millisecond, "Started, Migrating and Migrated events from the node agents")

	out, err = runVerb(t, "uncordon", from, "--store", storeArg)
	require.NoError(t, err, out)
	assert.Equal(t, "node/"+from+" uncordoned\n", out)
	n := &virtkit.Node{}
	require.NoError(t, st.Get(t.Context(), store.Key{Name: from}, n))
	assert.False(t, n.Spec.Unschedulable)
	assert.False(t, controller.IsDraining(n))
}

// Through a kubeconfig the node verbs run the same library code over the
// API: a drain shuts a VMI with evictionStrategy None down and records an
// Evicted event; uncordon makes the node schedulable again.
func TestNodeVerbsOnAPI(t *testing.T) {
	kc, storeArg := startAPIControllerOnEtcd(t, "dn-1")
	st, err := etcd.New(t.Context(), etcd.Options{Endpoints: []string{"http://" + strings.TrimPrefix(storeArg, "etcd://")}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	require.Eventually(t, func() bool {
		n := &virtkit.Node{}
		return st.Get(t.Context(), store.Key{Name: "dn-1"}, n) == nil && virtkit.IsConditionTrue(n.Status.Conditions, virtkit.NodeReady)
	}, 30*time.Second, 50*time.Millisecond, "the node is ready")

	mem := resource.MustParse("64Mi")
	vmi := &virtkit.VirtualMachineInstance{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstance},
		ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "default"},
		Spec:       virtkit.VirtualMachineInstanceSpec{Domain: virtkit.DomainSpec{Memory: &virtkit.Memory{Guest: &mem}}},
	}
	virtkit.SetDefaults(vmi) // evictionStrategy None
	require.NoError(t, st.Create(t.Context(), vmi))
	require.Eventually(t, func() bool {
		v := &virtkit.VirtualMachineInstance{}
		return st.Get(t.Context(), store.KeyOf(vmi), v) == nil && v.IsRunning()
	}, 30*time.Second, 50*time.Millisecond, "the VMI runs")

	out, err := runVerb(t, "drain", "dn-1", "--kubeconfig", kc, "--timeout", "60s")
	require.NoError(t, err, out)
	assert.Contains(t, out, "vmi/default/b (evictionStrategy None): ShuttingDown: evictionStrategy None: shut down by the drain of node dn-1\n")
	assert.True(t, strings.HasSuffix(out, "node/dn-1 drained\n"), out)
	err = st.Get(t.Context(), store.KeyOf(vmi), &virtkit.VirtualMachineInstance{})
	require.ErrorIs(t, err, store.ErrNotFound, "the VMI is shut down and gone")
	var l virtkit.EventList
	require.NoError(t, st.List(t.Context(), &l, store.ListOptions{Namespace: "default"}))
	evicted := 0
	for _, e := range l.Items {
		if e.Reason == virtkit.EventReasonEvicted && e.Regarding.Name == "b" && e.ReportingController == drain.Reporter {
			evicted++
		}
	}
	assert.Equal(t, 1, evicted, "one Evicted event")

	out, err = runVerb(t, "uncordon", "dn-1", "--kubeconfig", kc)
	require.NoError(t, err, out)
	assert.Equal(t, "node/dn-1 uncordoned\n", out)
	n := &virtkit.Node{}
	require.NoError(t, st.Get(t.Context(), store.Key{Name: "dn-1"}, n))
	assert.False(t, n.Spec.Unschedulable)
	assert.False(t, controller.IsDraining(n))
	out, err = runVerb(t, "cordon", "no-such-node", "--kubeconfig", kc)
	require.ErrorIs(t, err, store.ErrNotFound, out)
}

func TestNodeVerbErrors(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"drain without a store", []string{"drain", "n1"}, "--store"},
		{"cordon without a store", []string{"cordon", "n1"}, "--store"},
		{"drain bad strategy", []string{"drain", "n1", "--store", "etcd://127.0.0.1:1", "--default-eviction-strategy", "Kill"}, "--default-eviction-strategy"},
		{"drain negative timeout", []string{"drain", "n1", "--store", "etcd://127.0.0.1:1", "--timeout", "-1s"}, "--timeout"},
		{"drain without a node", []string{"drain"}, "accepts 1 arg"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runVerb(t, tt.args...)
			require.Error(t, err, out)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
