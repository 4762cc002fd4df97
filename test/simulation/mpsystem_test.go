package simulation

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/events"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/internal/tcpproxy"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/store/etcd"
	"github.com/virtkit/virtkit/store/etcd/etcdtest"
)

// The multi-process checks read the hosts from the node agents' GET
// /debug/domains and the objects from etcd: hosts that disagree with the
// store are reported (a guest on two hosts, a leaked domain, a Running VMI
// without its guest, an Always VM without a Running VMI), and a process
// that exited by itself is.
func TestMultiProcessChecksHosts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded etcd: not in -short")
	}
	ctx := t.Context()
	endpoints := etcdtest.StartServer(t)
	st, err := etcd.New(ctx, etcd.Options{Endpoints: endpoints})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })

	running := func(name, uid string) node.HostDomain {
		return node.HostDomain{Name: Namespace + "_" + name, UUID: uid, State: hypervisor.StateRunning, Active: true, Virtkit: true}
	}
	hosts := map[string][]node.HostDomain{
		"node-1": {running("vmi-0", "u1")}, // vmi-1's guest runs nowhere
		"node-2": {running("vmi-0", "u3"), running("gone", "u4")},
	}
	m := &multiProcess{store: st, life: &lifecycleState{}, client: &http.Client{Timeout: 5 * time.Second},
		nodes: map[string]*mpNode{}, ctrl: &proc{name: "controller", state: procRunning}}
	for _, n := range []string{"node-1", "node-2"} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_ = json.NewEncoder(w).Encode(hostReply{Node: n, Domains: hosts[n]})
		}))
		t.Cleanup(srv.Close)
		m.names = append(m.names, n)
		m.nodes[n] = &mpNode{proc: &proc{name: n, state: procRunning}, metricsAddr: strings.TrimPrefix(srv.URL, "http://")}
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m.rec, err = Record(rctx, st, time.Now)
	require.NoError(t, err)
	t.Cleanup(func() { cancel(); m.rec.wg.Wait() })

	require.NoError(t, m.apply(ctx, newVM("vm-0", virtkit.RunStrategyAlways, 0, nil)))
	for _, name := range []string{"vmi-0", "vmi-1"} {
		v := newVMI(name)
		require.NoError(t, st.Create(ctx, v))
		v.Status.Phase, v.Status.NodeName = virtkit.Running, "node-1"
		require.NoError(t, st.UpdateStatus(ctx, v))
	}

	chk := newChecker(m)
	chk.perStepGroundTruth = false
	var got []Violation
	require.NoError(t, chk.settled(ctx, 3, &got))
	invs := map[string]string{}
	for _, v := range got {
		invs[v.Invariant] += v.Message + "\n"
	}
	assert.Contains(t, invs[InvDoubleRun], "domain sim_vmi-0 runs on node-1 and node-2")
	assert.Contains(t, invs[InvLeakedDomain], "domain sim_gone on node-2")
	assert.Contains(t, invs[InvGroundTruth], "VMI sim/vmi-1 Running on \"node-1\", active domains on []")
	assert.Contains(t, invs[InvRunStrategy], "VM sim/vm-0 is Always, its VMI is missing")

	// A node agent that does not answer is an error (retried until the
	// convergence bound), not a pass.
	m.nodes["node-2"].proc.state = procStopped
	require.ErrorContains(t, chk.settled(ctx, 3, &got), "node node-2: agent stopped")

	// An exit nobody caused is reported at the next step.
	m.ctrl.unexpected = []string{"controller (run 1) exited by itself: exit status 2"}
	vs, err := chk.step(ctx, 4)
	require.NoError(t, err)
	require.NotEmpty(t, vs)
	assert.Equal(t, InvClusterExited, vs[0].Invariant)
	assert.Contains(t, vs[0].Message, "controller (run 1) exited by itself")
}

func TestMultiProcessPause(t *testing.T) {
	o := MultiProcessOptions{}.withDefaults()
	assert.Equal(t, 100*time.Millisecond, o.pause(Millis(1000)))
	assert.Equal(t, 2*time.Second, o.pause(Millis(180000)))
	assert.Equal(t, time.Duration(0), o.pause(0))
}

// Each kind has its own watch: on real time a change of one kind can
// arrive after a later change (higher resourceVersion) of another. The
// checker goes on from the changes it has read, by arrival: it reads every
// change once (a change read twice would be an object "created again with
// its own uid").
func TestHistoryReadsLateChangesOnce(t *testing.T) {
	r := &Recorder{now: time.Now}
	chk := newChecker(&Harness{Recorder: r, life: &lifecycleState{}})
	ev := func(typ store.EventType, name, uid, rv string) store.Event {
		v := newVMI(name)
		v.UID, v.ResourceVersion = types.UID(uid), rv
		return store.Event{Type: typ, Object: v}
	}
	var out []Violation
	r.add("VirtualMachineInstance", ev(store.Added, "a", "ua", "5"))
	chk.history(0, &out)
	// A change of another kind, written before a's creation, arrives late.
	r.add("Node", store.Event{Type: store.Added, Object: &virtkit.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "un", ResourceVersion: "3"}}})
	r.add("VirtualMachineInstance", ev(store.Modified, "a", "ua", "6"))
	chk.history(1, &out)
	r.add("VirtualMachineInstance", ev(store.Deleted, "a", "ua", "7"))
	r.add("VirtualMachineInstance", ev(store.Added, "a", "ua2", "8"))
	chk.history(2, &out)
	assert.Empty(t, out)
	assert.Equal(t, map[string]string{"VirtualMachineInstance sim/a": "ua2", "Node /n": "un"}, chk.live)

	// A real reuse is still reported.
	r.add("VirtualMachineInstance", ev(store.Added, "b", "ua", "9"))
	chk.history(3, &out)
	require.Len(t, out, 1)
	assert.Contains(t, out[0].Message, "uid ua of VirtualMachineInstance sim/a reused by VirtualMachineInstance sim/b")
}

// The partition fault of the multi-process mode cuts the node's proxy to
// etcd, and only that node's; heal ends it. A node once partitioned counts
// as one whose event recorder may have given up.
func TestMultiProcessPartition(t *testing.T) {
	m := &multiProcess{nodes: map[string]*mpNode{}, life: &lifecycleState{}}
	for _, n := range []string{"node-1", "node-2"} {
		px, err := tcpproxy.Start(t.Context(), tcpproxy.Options{Target: "127.0.0.1:9"})
		require.NoError(t, err)
		t.Cleanup(func() { _ = px.Close() })
		m.names = append(m.names, n)
		m.nodes[n] = &mpNode{proc: &proc{name: n, state: procRunning}, proxy: px}
	}
	table := map[string]opSpec{}
	for _, s := range mpOperations() {
		table[s.name] = s
	}
	require.Contains(t, table, "partition")
	require.NoError(t, table["partition"].run(t.Context(), m, Op{Name: "partition", Target: "node-1"}))
	assert.True(t, m.nodes["node-1"].proxy.IsCut())
	assert.False(t, m.nodes["node-2"].proxy.IsCut())
	assert.False(t, m.undisturbed("node-1"))
	assert.True(t, m.undisturbed("node-2"))
	assert.Equal(t, map[string]events.Stats{"node-1": {GaveUp: 1}}, m.eventStats())

	require.NoError(t, table["heal"].run(t.Context(), m, Op{Name: "heal", Target: "node-1"}))
	assert.False(t, m.nodes["node-1"].proxy.IsCut())
	assert.True(t, m.undisturbed("node-1"))
	assert.Equal(t, map[string]events.Stats{"node-1": {GaveUp: 1}}, m.eventStats(), "its events may have been lost meanwhile")
}
