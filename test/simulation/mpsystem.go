package simulation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/events"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/internal/etcdproc"
	"github.com/virtkit/virtkit/internal/tcpproxy"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/store/etcd"
)

// The liveness settings of the multi-process mode: short, so that a
// failover takes seconds, with margins for processes starved on a loaded
// machine. A node agent silent for mpFenceTimeout destroys its guests; the
// controller waits mpMonitorGrace + mpUnresponsiveGrace (more than 1.5
// times the fence timeout) before it fails a silent node's VMIs.
const (
	mpHeartbeat         = "300ms"
	mpStatusInterval    = "2s"
	mpFenceTimeout      = "3s"
	mpMonitorGrace      = "4s"
	mpUnresponsiveGrace = "2s"
	// mpLeaderTTL is the controller's election lease. etcd's client
	// renews a lease every third of its TTL and gives it up (the session
	// ends, the controller exits) when no renewal has been answered for a
	// whole TTL; etcd answers a renewal only once it has applied what it
	// committed. 2 s, etcd's smallest lease with its default timings, left
	// about 1.3 s for any stall of the controller process or of etcd's
	// apply loop, which a 2-core machine running a CI build beside this
	// test (these processes at nice 10) exceeds now and then: the
	// controller lost its lease while alive. 6 s leaves 4 s, still far
	// below the 15 s Kubernetes' and KubeVirt's controllers (and virtkit's
	// default) use, and keeps a killed controller's failover short.
	mpLeaderTTL = "6s"
	// mpCallTimeout bounds one call of the simulation to etcd or a node.
	mpCallTimeout = 30 * time.Second
)

// MultiProcessOptions configure [RunMultiProcess].
type MultiProcessOptions struct {
	// Binary is the virtkit command (required).
	Binary string
	// EtcdBinary is the etcd server (required).
	EtcdBinary string
	// Dir holds etcd's data, the simulated hosts' state files and the
	// processes' logs (required; one run per directory).
	Dir string
	// Converge bounds, in real time, how long the cluster has once every
	// fault is healed to satisfy the final invariants (default 90 s).
	Converge time.Duration
	// TimeScale divides an operation's advance of time into the real pause
	// after it (default 10), capped at MaxPause (default 2 s).
	TimeScale int
	MaxPause  time.Duration
}

func (o MultiProcessOptions) withDefaults() MultiProcessOptions {
	if o.Converge <= 0 {
		o.Converge = 90 * time.Second
	}
	if o.TimeScale <= 0 {
		o.TimeScale = 10
	}
	if o.MaxPause <= 0 {
		o.MaxPause = 2 * time.Second
	}
	return o
}

// pause is the real time an operation's advance stands for.
func (o MultiProcessOptions) pause(m Millis) time.Duration {
	return min(m.Duration()/time.Duration(o.TimeScale), o.MaxPause)
}

// mpNode is one `virtkit node` process, where it reports its host, and
// the TCP proxy it reaches etcd through (the partition fault cuts it).
type mpNode struct {
	proc        *proc
	metricsAddr string
	// faultsAddr serves the simulated host's guest faults
	// (--sim-faults-addr).
	faultsAddr string
	proxy      *tcpproxy.Proxy
	// cut records that the node was partitioned from the store at some
	// point: its event recorder may have given up on writes since.
	cut bool
}

// multiProcess is the system of the multi-process mode: a real etcd
// server, one `virtkit controller` and `virtkit node` processes on the
// simulated hypervisor, each simulated host inside its node process.
type multiProcess struct {
	dir    string
	etcd   *etcdproc.Server
	store  *etcd.Store
	rec    *Recorder
	ctrl   *proc
	nodes  map[string]*mpNode
	names  []string
	life   *lifecycleState
	client *http.Client
	// ctrlProxy is the controller's link to etcd (the store-latency fault
	// slows it with the nodes' links).
	ctrlProxy *tcpproxy.Proxy
	opts      MultiProcessOptions
	cancel    context.CancelFunc
	mu        sync.Mutex // guards nodes' cut and guestFaults
	// guestFaults counts the guest faults the hosts took.
	guestFaults int
}

// startMultiProcess starts etcd, the recorder, the controller and the node
// agents, and waits until every node is ready and the controller leads.
func startMultiProcess(ctx context.Context, o MultiProcessOptions, nodes int) (m *multiProcess, err error) {
	if o.Binary == "" || o.EtcdBinary == "" || o.Dir == "" {
		return nil, errors.New("multi-process: Binary, EtcdBinary and Dir: required")
	}
	m = &multiProcess{dir: o.Dir, opts: o, nodes: map[string]*mpNode{}, client: &http.Client{Timeout: 5 * time.Second},
		life: &lifecycleState{acpi: map[string]sim.ACPIBehaviour{}}}
	defer func() {
		if err != nil {
			m.close()
		}
	}()
	m.etcd, err = etcdproc.Start(ctx, etcdproc.Options{Binary: o.EtcdBinary, Dir: filepath.Join(o.Dir, "etcd-data"),
		Name: "simulation", LogFile: filepath.Join(o.Dir, "etcd.log")})
	if err != nil {
		return m, err
	}
	if m.store, err = etcd.New(ctx, etcd.Options{Endpoints: []string{m.etcd.Endpoint()}}); err != nil {
		return m, err
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m.cancel = cancel
	if m.rec, err = Record(rctx, m.store, time.Now); err != nil {
		return m, err
	}
	// The controller reaches etcd through a proxy too: store-latency slows
	// every process's link.
	if m.ctrlProxy, err = tcpproxy.Start(context.WithoutCancel(ctx), tcpproxy.Options{Target: m.etcd.ClientAddr()}); err != nil {
		return m, err
	}
	storeArg := "etcd://" + m.ctrlProxy.Addr()
	m.ctrl = newProc(o.Dir, o.Binary, "controller", "controller", "--store", storeArg, "--leader-id", "c1",
		"--leader-ttl", mpLeaderTTL, "--node-monitor-grace", mpMonitorGrace, "--unresponsive-grace", mpUnresponsiveGrace)
	for i := 1; i <= nodes; i++ {
		name := fmt.Sprintf("node-%d", i)
		addr, err := freeAddr()
		if err != nil {
			return m, err
		}
		faults, err := freeAddr()
		if err != nil {
			return m, err
		}
		// Each agent reaches etcd through a proxy of its own, so that a
		// partition cuts one node from the store and nothing else.
		px, err := tcpproxy.Start(context.WithoutCancel(ctx), tcpproxy.Options{Target: m.etcd.ClientAddr()})
		if err != nil {
			return m, err
		}
		m.names = append(m.names, name)
		m.nodes[name] = &mpNode{metricsAddr: addr, faultsAddr: faults, proxy: px, proc: newProc(o.Dir, o.Binary, name, "node", "--name", name,
			"--store", "etcd://"+px.Addr(), "--metrics-addr", addr, "--sim-faults-addr", faults, "--hypervisor", "sim",
			"--sim-state", filepath.Join(o.Dir, name+".state.json"), "--heartbeat-interval", mpHeartbeat,
			"--fence-timeout", mpFenceTimeout, "--status-interval", mpStatusInterval)}
	}
	for _, p := range m.procs() {
		if err := p.start(); err != nil {
			return m, err
		}
	}
	return m, m.waitReady(ctx, 60*time.Second)
}

func (m *multiProcess) procs() []*proc {
	out := []*proc{m.ctrl}
	for _, n := range m.names {
		out = append(out, m.nodes[n].proc)
	}
	return out
}

// waitReady waits until every node is ready and the controller leads.
func (m *multiProcess) waitReady(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		ready, leader := m.readyNodes(ctx), m.leader(ctx)
		if len(ready) == len(m.names) && leader != "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("multi-process: after %s: ready nodes %v, leader %q", limit, ready, leader)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (m *multiProcess) readyNodes(ctx context.Context) []string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var l virtkit.NodeList
	if err := m.store.List(ctx, &l, store.ListOptions{}); err != nil {
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

// leader is the id of the leading controller, "" when none leads.
func (m *multiProcess) leader(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := m.store.Client().Get(ctx, etcd.DefaultPrefix+"/leader/controller/", clientv3.WithFirstCreate()...)
	if err != nil || len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}

// close stops every process, the recorder and etcd.
func (m *multiProcess) close() {
	if m.life != nil {
		m.life.cancelDrains()
		m.life.waitDrains(10 * time.Second)
	}
	done := make(chan struct{})
	procs := m.procs()
	for _, p := range procs {
		if p == nil {
			done <- struct{}{}
			continue
		}
		go func() { p.shutdown(20 * time.Second); done <- struct{}{} }()
	}
	for range procs {
		<-done
	}
	if m.cancel != nil {
		m.cancel()
		m.rec.wg.Wait()
	}
	for _, px := range m.proxies() {
		_ = px.Close()
	}
	if m.store != nil {
		_ = m.store.Close()
	}
	if m.etcd != nil {
		_ = m.etcd.Kill(context.Background())
	}
}

// logTails is the end of every process's log, for a failing seed.
func (m *multiProcess) logTails(lines int) string {
	var b strings.Builder
	for _, p := range m.procs() {
		fmt.Fprintf(&b, "===== %s (%s), last %d lines:\n%s\n", p.name, p.State(), lines, p.tail(lines))
	}
	return b.String()
}

// summary says what the final checks read once they passed.
func (m *multiProcess) summary(ctx context.Context, took time.Duration) string {
	ctx, cancel := context.WithTimeout(ctx, mpCallTimeout)
	defer cancel()
	doms, _ := m.observed(ctx)
	active := 0
	for _, d := range doms {
		if d.Active {
			active++
		}
	}
	var vmis virtkit.VirtualMachineInstanceList
	_ = m.store.List(ctx, &vmis, store.ListOptions{})
	running := 0
	for _, v := range vmis.Items {
		if v.Status.Phase == virtkit.Running {
			running++
		}
	}
	starts := 0
	for _, p := range m.procs() {
		p.mu.Lock()
		starts += p.starts
		p.mu.Unlock()
	}
	m.mu.Lock()
	faults := m.guestFaults
	m.mu.Unlock()
	stops, ignoring := 0, 0
	m.life.mu.Lock()
	for _, s := range m.life.stops {
		if s.clean {
			stops++
			if s.answer < 0 {
				ignoring++
			}
		}
	}
	m.life.mu.Unlock()
	return fmt.Sprintf("converged %s after the faults healed: %d VMIs (%d Running), %d active domains on %d hosts, %d process starts, "+
		"%d guest faults injected, %d stops followed (%d of guests ignoring ACPI)",
		took.Round(100*time.Millisecond), len(vmis.Items), running, active, len(m.names), starts, faults, stops, ignoring)
}

// hostReply is the part of a node's GET /debug/domains the checks read.
type hostReply struct {
	Node    string            `json:"node"`
	Domains []node.HostDomain `json:"domains"`
}

// hostDomains reads what a node's simulated host runs from its agent.
func (m *multiProcess) hostDomains(ctx context.Context, name string) ([]node.HostDomain, error) {
	n := m.nodes[name]
	if st := n.proc.State(); st != procRunning {
		return nil, fmt.Errorf("node %s: agent %s: its host cannot be read", name, st)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.metricsAddr+"/debug/domains", nil)
	if err != nil {
		return nil, err
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("node %s: GET /debug/domains: %s", name, resp.Status)
	}
	var r hostReply
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, fmt.Errorf("node %s: GET /debug/domains: %w", name, err)
	}
	return r.Domains, nil
}

func (m *multiProcess) observed(ctx context.Context) ([]cluster.ObservedDomain, error) {
	var out []cluster.ObservedDomain
	for _, n := range m.names {
		doms, err := m.hostDomains(ctx, n)
		if err != nil {
			return nil, err
		}
		for _, d := range doms {
			out = append(out, cluster.ObservedDomain{Host: n, HostDomain: d})
		}
	}
	return out, nil
}

// The system interface.

func (m *multiProcess) st() store.Store { return m.store }

func (m *multiProcess) apply(ctx context.Context, obj virtkit.Object) error {
	return cluster.ApplyOne(ctx, m.store, obj)
}

func (m *multiProcess) cordon(ctx context.Context, n string) error {
	return controller.Cordon(ctx, m.store, n)
}

func (m *multiProcess) uncordon(ctx context.Context, n string) error {
	return controller.Uncordon(ctx, m.store, n)
}

// eventStats: the processes' recorders are not readable from here. A node
// that was partitioned from the store counts as one whose recorder gave up
// (its writes may have failed past their retries), as the in-process
// recorders report.
func (m *multiProcess) eventStats() map[string]events.Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]events.Stats{}
	for name, n := range m.nodes {
		if n.cut {
			out[name] = events.Stats{GaveUp: 1}
		}
	}
	return out
}

// proxies are the processes' links to etcd.
func (m *multiProcess) proxies() []*tcpproxy.Proxy {
	var out []*tcpproxy.Proxy
	if m.ctrlProxy != nil {
		out = append(out, m.ctrlProxy)
	}
	for _, n := range m.names {
		if px := m.nodes[n].proxy; px != nil {
			out = append(out, px)
		}
	}
	return out
}

// mpMaxLatency caps the store-latency fault of the multi-process mode. The
// proxies hold each chunk for the latency in each direction, so a request
// waits twice as long, and a lease renewal answered that much later than
// the previous one: beyond about 500 ms one way the controller's 6 s lease
// and the agents' 3 s fence timeout are at stake on every change of
// latency, which is the partition fault's part, not this one's.
const mpMaxLatency = 500 * time.Millisecond

// setLatency holds every chunk on every process's link to etcd for d (at
// most mpMaxLatency) before forwarding it.
func (m *multiProcess) setLatency(d time.Duration) {
	for _, px := range m.proxies() {
		px.SetLatency(min(d, mpMaxLatency))
	}
}

// partition cuts node's link to etcd (heal ends it).
func (m *multiProcess) partition(node string) {
	n := m.nodes[node]
	if n == nil {
		return
	}
	m.mu.Lock()
	n.cut = true
	m.mu.Unlock()
	n.proxy.Cut()
}

func (m *multiProcess) drain(ctx context.Context, n string, o controller.DrainOptions) error {
	return controller.Drain(ctx, m.store, n, o)
}

func (m *multiProcess) now() time.Time { return time.Now() }

func (m *multiProcess) afterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

func (m *multiProcess) lifecycle() *lifecycleState { return m.life }

func (m *multiProcess) undisturbed(n string) bool {
	mn := m.nodes[n]
	return mn != nil && mn.proc.State() == procRunning && (mn.proxy == nil || !mn.proxy.IsCut())
}

func (m *multiProcess) exited() (bool, error) {
	var all []string
	for _, p := range m.procs() {
		all = append(all, p.exits()...)
	}
	if len(all) == 0 {
		return false, nil
	}
	return true, errors.New(strings.Join(all, "; "))
}

func (m *multiProcess) recorder() *Recorder { return m.rec }

func (m *multiProcess) observation() cluster.Observation {
	return cluster.Observation{Store: m.store, Domains: m.observed}
}

func (m *multiProcess) domains(ctx context.Context) ([]domainAt, error) {
	obs, err := m.observed(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]domainAt, 0, len(obs))
	for _, d := range obs {
		out = append(out, domainAt{node: d.Host, info: hypervisor.DomainInfo{
			DomainID: hypervisor.DomainID{Name: d.Name, UUID: d.UUID}, State: d.State, Reason: d.Reason}})
	}
	return out, nil
}

// heal ends every fault: partitions heal, frozen agents resume, killed agents and a killed
// controller start again, drains end and every node is uncordoned.
func (m *multiProcess) heal(ctx context.Context) error {
	m.life.cancelDrains()
	m.life.waitDrains(30 * time.Second)
	for _, n := range m.names {
		m.nodes[n].proxy.Heal()
	}
	m.setLatency(0)
	for _, p := range m.procs() {
		if err := p.signal(syscall.SIGCONT); err != nil {
			return err
		}
		if err := p.start(); err != nil {
			return err
		}
	}
	for _, n := range m.names {
		// The controller may be writing the Node too: retry a conflict.
		err := retryConflict(ctx, func() error { return m.uncordon(ctx, n) })
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("uncordon %s: %w", n, err)
		}
	}
	return nil
}

func retryConflict(ctx context.Context, f func() error) error {
	var err error
	for range 10 {
		if err = f(); !errors.Is(err, store.ErrConflict) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return err
}

// freeAddr is a loopback HOST:PORT that was free just now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
