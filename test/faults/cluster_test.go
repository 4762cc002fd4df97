//go:build faults

package faults

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/internal/etcdproc"
	"github.com/virtkit/virtkit/internal/tcpproxy"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/store/etcd"
)

// Liveness settings: short, so a scenario takes seconds, with margins for a
// starved process on a loaded 2-core machine. A node not heard from for
// monitorGrace is not ready; its VMIs fail unresponsiveGrace later; a dead
// leader is replaced after leaderTTL.
const (
	heartbeat         = "300ms"
	statusInterval    = "2s"
	monitorGrace      = 4 * time.Second
	unresponsiveGrace = 2 * time.Second
	leaderTTL         = "2s"
	// fenceTimeout: a node agent that has not renewed its heartbeat for
	// this long destroys its guests (its host's watchdog a tenth later);
	// the controllers wait 1.5 times this before restarting them, which
	// monitorGrace + unresponsiveGrace exceed.
	fenceTimeout = 3 * time.Second
	namespace    = "default"
)

var nodeNames = []string{"node-a", "node-b", "node-c"}

// testCluster is one control plane under test: an etcd server process, two
// controller replicas and three node agents, each behind its own proxy to etcd,
// a store client for the checks, and the invariant monitors.
type testCluster struct {
	t     *testing.T
	dir   string
	etcd  *etcdproc.Server
	st    *etcd.Store
	ctrls map[string]*vproc
	// ctrlProxies stand between each controller replica and etcd.
	ctrlProxies map[string]*tcpproxy.Proxy
	nodes       map[string]*testNode
	mon         *monitor
}

type testNode struct {
	name  string
	proc  *vproc
	proxy *tcpproxy.Proxy
	state string // the sim state file
	// metricsAddr is the agent's --metrics-addr (its /debug/domains).
	metricsAddr string
}

// newCluster starts everything and waits until three nodes are ready and a
// controller leads.
func newCluster(t *testing.T) *testCluster {
	t.Helper()
	if testing.Short() {
		t.Skip("fault-injection suite skipped in -short mode")
	}
	if etcdBinary == "" {
		testenv.Unavailable(t, etcdMissing)
	}
	dir := t.TempDir()
	c := &testCluster{t: t, dir: dir, ctrls: map[string]*vproc{}, ctrlProxies: map[string]*tcpproxy.Proxy{}, nodes: map[string]*testNode{}}
	ctx := t.Context()
	var err error
	c.etcd, err = etcdproc.Start(ctx, etcdproc.Options{Binary: etcdBinary, Dir: filepath.Join(dir, "etcd-data"),
		Name: "faults", LogFile: filepath.Join(dir, "etcd.log")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.etcd.Kill(context.Background()) })

	c.st, err = etcd.New(ctx, etcd.Options{Endpoints: []string{c.etcd.Endpoint()}})
	require.NoError(t, err)
	// Cleanups run last-in first-out: the monitors and processes stop, then
	// the client closes, then the server is killed.
	t.Cleanup(func() { _ = c.st.Close() })

	for _, id := range []string{"c1", "c2"} {
		// Not t.Context(), which ends before the cleanups run: the links
		// must stay up until the processes have stopped.
		px, err := tcpproxy.Start(context.Background(), tcpproxy.Options{Target: c.etcd.ClientAddr()})
		require.NoError(t, err)
		t.Cleanup(func() { _ = px.Close() })
		c.ctrlProxies[id] = px
		c.ctrls[id] = newVProc(dir, "controller-"+id, "controller", "--store", "etcd://"+px.Addr(), "--leader-id", id,
			"--leader-ttl", leaderTTL, "--node-monitor-grace", monitorGrace.String(),
			"--unresponsive-grace", unresponsiveGrace.String())
	}
	for _, name := range nodeNames {
		// Not t.Context(), which ends before the cleanups run: the links
		// must stay up until the processes have stopped.
		px, err := tcpproxy.Start(context.Background(), tcpproxy.Options{Target: c.etcd.ClientAddr()})
		require.NoError(t, err)
		t.Cleanup(func() { _ = px.Close() })
		addr, err := freeAddr()
		require.NoError(t, err)
		n := &testNode{name: name, proxy: px, state: filepath.Join(dir, name+".state.json"), metricsAddr: addr}
		n.proc = newVProc(dir, name, "node", "--name", name, "--store", "etcd://"+px.Addr(), "--metrics-addr", addr,
			"--hypervisor", "sim", "--sim-state", n.state, "--sim-cpus", "64", "--sim-memory", "64Gi",
			"--heartbeat-interval", heartbeat, "--fence-timeout", fenceTimeout.String(), "--status-interval", statusInterval)
		c.nodes[name] = n
	}
	t.Cleanup(c.stopAll)
	t.Cleanup(func() {
		if t.Failed() {
			c.dumpLogs()
		}
	})
	c.mon = newMonitor(c)
	t.Cleanup(c.mon.stop)
	for _, p := range c.procs() {
		require.NoError(t, p.start())
	}
	c.waitFor("three ready nodes and a leader", 60*time.Second, func() (bool, string) {
		ready := c.readyNodes()
		leader := c.leader()
		return len(ready) == len(nodeNames) && leader != "", fmt.Sprintf("ready %v, leader %q", ready, leader)
	})
	c.mon.start()
	return c
}

func (c *testCluster) procs() []*vproc {
	var out []*vproc
	for _, id := range []string{"c1", "c2"} {
		out = append(out, c.ctrls[id])
	}
	for _, n := range nodeNames {
		out = append(out, c.nodes[n].proc)
	}
	return out
}

func (c *testCluster) stopAll() {
	done := make(chan struct{})
	procs := c.procs()
	began := time.Now()
	for _, p := range procs {
		go func() {
			if p.shutdown(20 * time.Second) {
				text := p.logText()
				if i := strings.LastIndex(text, "===== start"); i >= 0 {
					text = text[i:]
				}
				c.t.Errorf("%s did not stop within 20s of SIGTERM; stopped with SIGQUIT. Its last run's log:\n%s", p.name, text)
			}
			done <- struct{}{}
		}()
	}
	defer func() {
		if d := time.Since(began); d > 5*time.Second {
			c.t.Logf("stopping the processes took %v", d.Round(100*time.Millisecond))
		}
	}()
	for range procs {
		<-done
	}
}

// dumpLogs prints the tail of every process's log.
func (c *testCluster) dumpLogs() {
	for _, p := range c.procs() {
		lines := strings.Split(strings.TrimRight(p.logText(), "\n"), "\n")
		if len(lines) > 80 {
			lines = lines[len(lines)-80:]
		}
		c.t.Logf("===== %s, last %d lines:\n%s", p.name, len(lines), strings.Join(lines, "\n"))
	}
	data, _ := os.ReadFile(filepath.Join(c.dir, "etcd.log"))
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	c.t.Logf("===== etcd, last %d lines:\n%s", len(lines), strings.Join(lines, "\n"))
}

// waitFor polls cond until it holds or timeout passes; cond describes the
// state for the failure message.
func (c *testCluster) waitFor(what string, timeout time.Duration, cond func() (bool, string)) time.Duration {
	c.t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	var last string
	for {
		ok, state := cond()
		if ok {
			return time.Since(start)
		}
		last = state
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out after %v waiting for %s; last state: %s", timeout, what, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ctx returns a context for one store call from the test: bounded, so a
// check during an etcd outage fails instead of hanging.
func (c *testCluster) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.t.Context(), 5*time.Second)
}

func (c *testCluster) readyNodes() []string {
	ctx, cancel := c.ctx()
	defer cancel()
	l := &virtkit.NodeList{}
	if err := c.st.List(ctx, l, store.ListOptions{}); err != nil {
		return nil
	}
	var ready []string
	for _, n := range l.Items {
		if virtkit.IsConditionTrue(n.Status.Conditions, virtkit.NodeReady) {
			ready = append(ready, n.Name)
		}
	}
	return ready
}

// leader returns the id of the leading controller replica, "" if none or
// etcd does not answer.
func (c *testCluster) leader() string {
	ctx, cancel := c.ctx()
	defer cancel()
	resp, err := c.st.Client().Get(ctx, etcd.DefaultPrefix+"/leader/controller/", clientv3.WithFirstCreate()...)
	if err != nil || len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}

// vm is a VirtualMachine with runStrategy Always and a small guest,
// labelled applier=label.
func vm(t testing.TB, name, label string) virtkit.Object {
	t.Helper()
	objs, err := virtkit.DecodeBytes([]byte(vmManifest(label, name)))
	require.NoError(t, err)
	require.Len(t, objs, 1)
	return objs[0]
}

// vmManifest is the YAML of VMs for `virtkit apply`, with one label.
func vmManifest(label string, names ...string) string {
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, `---
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: %s
  namespace: default
  labels:
    applier: %s
spec:
  runStrategy: Always
  template:
    spec:
      domain:
        memory:
          guest: 64Mi
        devices: {}
`, n, label)
	}
	return b.String()
}

// createVMs applies VMs from the test process and records them as wanted.
func (c *testCluster) createVMs(names ...string) {
	c.t.Helper()
	for _, n := range names {
		ctx, cancel := context.WithTimeout(c.t.Context(), 30*time.Second)
		err := cluster.ApplyOne(ctx, c.st, vm(c.t, n, "test"))
		cancel()
		require.NoError(c.t, err)
		c.mon.want(n)
	}
}

// deleteVM deletes a VM and records it as unwanted.
func (c *testCluster) deleteVM(name string) {
	c.t.Helper()
	c.mon.unwant(name)
	ctx, cancel := context.WithTimeout(c.t.Context(), 30*time.Second)
	defer cancel()
	v := &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	require.NoError(c.t, c.st.Delete(ctx, v, store.DeleteOptions{}))
}

// freeAddr returns a loopback HOST:PORT that was free just now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%02d", prefix, i)
	}
	return out
}

// vmisOn returns the VMs whose VMI is on node.
func (c *testCluster) vmisOn(nodeName string) []string {
	c.t.Helper()
	ctx, cancel := c.ctx()
	defer cancel()
	l := &virtkit.VirtualMachineInstanceList{}
	require.NoError(c.t, c.st.List(ctx, l, store.ListOptions{}))
	var out []string
	for _, v := range l.Items {
		if v.Status.NodeName == nodeName {
			out = append(out, v.Name)
		}
	}
	return out
}

// movedOff reports whether every wanted VM runs, with its guest, on a
// running node other than victim (whose own guests are not looked at).
func (c *testCluster) movedOff(victim string) (bool, string) {
	ctx, cancel := c.ctx()
	defer cancel()
	l := &virtkit.VirtualMachineInstanceList{}
	if err := c.st.List(ctx, l, store.ListOptions{}); err != nil {
		return false, err.Error()
	}
	guests, err := c.runningGuests(c.newObservers())
	if err != nil {
		return false, err.Error()
	}
	byName := map[string]virtkit.VirtualMachineInstance{}
	for _, v := range l.Items {
		byName[v.Name] = v
	}
	var wrong []string
	for _, name := range c.mon.wantedVMs() {
		v, ok := byName[name]
		on := v.Status.NodeName
		var where []string
		for _, n := range guests[node.DomainName(namespace, name)] {
			if n != victim {
				where = append(where, n)
			}
		}
		if !ok || v.Status.Phase != virtkit.Running || on == victim || len(where) != 1 || where[0] != on {
			wrong = append(wrong, fmt.Sprintf("%s:%s@%s guests %v", name, v.Status.Phase, on, where))
		}
	}
	if len(wrong) > 8 {
		wrong = append(wrong[:8], fmt.Sprintf("... %d more", len(wrong)-8))
	}
	return len(wrong) == 0, strings.Join(wrong, "; ")
}

// nodeReady returns the Ready condition's status and reason of a node.
func (c *testCluster) nodeReady(name string) (virtkit.ConditionStatus, string) {
	ctx, cancel := c.ctx()
	defer cancel()
	n := &virtkit.Node{}
	if err := c.st.Get(ctx, store.Key{Name: name}, n); err != nil {
		return "", err.Error()
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == virtkit.NodeReady {
			return cond.Status, cond.Reason
		}
	}
	return "", "no Ready condition"
}
