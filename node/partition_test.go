package node_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/store/etcd"
	"github.com/virtkit/virtkit/store/etcd/etcdtest"
)

// tcpProxy forwards loopback TCP connections to target until the test
// cuts it: a cut closes every open connection and refuses new ones (they
// are accepted and closed at once) until Heal.
type tcpProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func startProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &tcpProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.serve)
	t.Cleanup(p.close)
	return p
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			continue
		}
		p.wg.Go(func() { p.pipe(c) })
	}
}

// track registers c, or closes it when the proxy is cut.
func (p *tcpProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *tcpProxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
		delete(p.conns, c)
	}
}

func (p *tcpProxy) pipe(down net.Conn) {
	d := net.Dialer{Timeout: time.Second}
	up, err := d.Dial("tcp", p.target)
	if err != nil {
		p.untrack(down)
		return
	}
	if !p.track(up) {
		p.untrack(down)
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, down); done <- struct{}{} }()
	go func() { _, _ = io.Copy(down, up); done <- struct{}{} }()
	<-done
	p.untrack(up, down)
	<-done
}

// setCut cuts (closing every connection) or heals the proxy.
func (p *tcpProxy) setCut(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = on
	if on {
		for c := range p.conns {
			_ = c.Close()
			delete(p.conns, c)
		}
	}
}

func (p *tcpProxy) close() {
	_ = p.ln.Close()
	p.setCut(true)
	p.wg.Wait()
}

// etcdStore opens an etcd store on endpoint whose client reconnects
// quickly after a cut (gRPC's default backoff grows to two minutes).
func etcdStore(t *testing.T, endpoint, prefix string) *etcd.Store {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{endpoint},
		DialTimeout: 2 * time.Second,
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.5, MaxDelay: 250 * time.Millisecond},
			MinConnectTimeout: time.Second,
		})},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	st, err := etcd.New(context.Background(), etcd.Options{Client: cli, Prefix: prefix})
	require.NoError(t, err)
	return st
}

func partitionVM(name string) *virtkit.VirtualMachine {
	rs := virtkit.RunStrategyAlways
	tmpl := &virtkit.VirtualMachineInstanceTemplateSpec{}
	tmpl.Spec.Domain.Resources.Requests = virtkit.ResourceList{
		virtkit.ResourceCPU: resource.MustParse("100m"), virtkit.ResourceMemory: resource.MustParse("64Mi"),
	}
	return &virtkit.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachine},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       virtkit.VirtualMachineSpec{RunStrategy: &rs, Template: tmpl},
	}
}

// TestNoVMRunsTwiceAcrossPartitions cuts node agents off from a real etcd
// through a TCP proxy, 20 times, some cuts shorter than the fence timeout
// and some long enough for the controller to restart the node's VMs on the
// other node, and samples both hosts' running guests all along: no VM ever
// runs on both at once.
func TestNoVMRunsTwiceAcrossPartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("partition cycles take about a minute")
	}
	// Under the race detector everything runs several times slower: the
	// same cycles on a stretched clock.
	scale := time.Duration(1)
	if raceEnabled {
		scale = 2
	}
	var (
		heartbeat    = 100 * time.Millisecond * scale
		fence        = 2 * time.Second * scale
		monitorGrace = time.Second * scale
		// Below virtkit.MinNodeGrace(fence) = 1.5 x fence on purpose:
		// the published fence timeout must stretch it.
		unresponsiveGrace = 1500 * time.Millisecond * scale
		shortCut          = 700 * time.Millisecond * scale
		longCut           = 4500 * time.Millisecond * scale
		convergeTimeout   = 45 * time.Second * scale
	)
	const (
		cycles = 20
		vms    = 6
	)
	endpoints := etcdtest.StartServer(t)
	target := strings.TrimPrefix(endpoints[0], "http://")
	prefix := "/partition-" + fmt.Sprint(time.Now().UnixNano())
	log := slog.New(slog.DiscardHandler)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })

	// The control plane talks to etcd directly.
	cst := etcdStore(t, endpoints[0], prefix)
	nh, err := controller.NewNodeHealthReconciler(controller.NodeHealthOptions{Store: cst,
		MonitorGracePeriod: monitorGrace, UnresponsiveGracePeriod: unresponsiveGrace, Logger: log})
	require.NoError(t, err)
	c, err := cluster.New(cluster.Options{Store: cst, NodeNames: []string{"unused-controller-only"},
		Replace: map[string]reconcile.Reconciler{cluster.NodeHealthController: nh}, Logger: log})
	require.NoError(t, err)
	for _, ctrl := range c.Controllers() {
		wg.Go(func() { _ = ctrl.Start(ctx) })
	}

	// Two node agents, each behind its own proxy.
	names := []string{"node-a", "node-b"}
	hosts := map[string]*sim.Host{}
	proxies := map[string]*tcpProxy{}
	agents := map[string]*node.Agent{}
	for _, name := range names {
		proxies[name] = startProxy(t, target)
		hosts[name] = sim.New(sim.Options{Name: name, Logger: log})
		a, err := node.New(node.Options{NodeName: name, Hypervisor: hosts[name], Watchdog: hosts[name],
			Store:             etcdStore(t, "http://"+proxies[name].addr(), prefix),
			HeartbeatInterval: heartbeat, FenceTimeout: fence,
			StatusInterval: 250 * time.Millisecond * scale, ResyncPeriod: time.Second * scale, ReconcileTimeout: 2 * time.Second * scale,
			Logger: log})
		require.NoError(t, err)
		agents[name] = a
		wg.Go(func() {
			if err := a.Start(ctx); err != nil && ctx.Err() == nil {
				t.Errorf("agent %s: %v", name, err)
			}
		})
	}

	// The sampler: every few milliseconds, which host runs which guest.
	var (
		mu         sync.Mutex
		violations []string
		ranOn      = map[string]map[string]bool{} // domain -> hosts it ever ran on
		samples    int
	)
	sample := func() map[string][]string {
		running := map[string][]string{}
		for _, name := range names {
			doms, err := hosts[name].List(ctx)
			if err != nil {
				return nil
			}
			for _, d := range doms {
				if d.State.IsActive() {
					running[d.Name] = append(running[d.Name], name)
				}
			}
		}
		return running
	}
	wg.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			running := sample()
			mu.Lock()
			samples++
			for dom, on := range running {
				if ranOn[dom] == nil {
					ranOn[dom] = map[string]bool{}
				}
				for _, h := range on {
					ranOn[dom][h] = true
				}
				if len(on) > 1 {
					violations = append(violations, fmt.Sprintf("%s: %s running on %v", time.Now().Format("15:04:05.000"), dom, on))
				}
			}
			mu.Unlock()
		}
	})

	for i := range vms {
		require.NoError(t, cluster.Apply(ctx, cst, partitionVM(fmt.Sprintf("vm-%d", i))))
	}
	converged := func() (bool, string) {
		running := sample()
		var bad []string
		for i := range vms {
			name := fmt.Sprintf("vm-%d", i)
			vmi := &virtkit.VirtualMachineInstance{}
			if err := cst.Get(ctx, store.Key{Namespace: "default", Name: name}, vmi); err != nil {
				bad = append(bad, name+": "+err.Error())
				continue
			}
			on := running[node.DomainName("default", name)]
			if vmi.Status.Phase != virtkit.Running || len(on) != 1 || on[0] != vmi.Status.NodeName {
				bad = append(bad, fmt.Sprintf("%s: %s on %q, running on %v", name, vmi.Status.Phase, vmi.Status.NodeName, on))
			}
		}
		for _, name := range names {
			if agents[name].Fenced() {
				bad = append(bad, name+": fenced")
			}
		}
		return len(bad) == 0, strings.Join(bad, "; ")
	}
	waitConverged := func(what string) {
		t.Helper()
		deadline := time.Now().Add(convergeTimeout)
		for {
			ok, why := converged()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not converged: %s", what, why)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitConverged("start")

	start := time.Now()
	for i := range cycles {
		victim := names[i%2]
		cut := shortCut
		if (i/2)%2 == 1 {
			cut = longCut
		}
		proxies[victim].setCut(true)
		time.Sleep(cut)
		proxies[victim].setCut(false)
		waitConverged(fmt.Sprintf("cycle %d (%s cut for %v)", i, victim, cut))
		time.Sleep(200 * time.Millisecond)
	}

	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	var moved []string
	for dom, on := range ranOn {
		if len(on) > 1 {
			moved = append(moved, dom)
		}
	}
	sort.Strings(moved)
	fences := agents["node-a"].Fences() + agents["node-b"].Fences()
	t.Logf("%d cycles in %v: %d samples, %d fences, guests that ran on both nodes (at different times): %v",
		cycles, time.Since(start).Round(100*time.Millisecond), samples, fences, moved)
	if len(violations) > 0 {
		t.Fatalf("a VM ran on two nodes at once, in %d samples; the first: %v", len(violations), violations[:min(len(violations), 10)])
	}
	require.NotZero(t, fences, "long cuts fence the node")
	require.NotEmpty(t, moved, "long cuts move VMs to the other node")
	require.Greater(t, samples, 500)
}
