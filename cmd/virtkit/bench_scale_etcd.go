package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/internal/etcdproc"
	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/store/etcd"
)

// etcdScaleOptions configure one multi-process scale run on etcd.
type etcdScaleOptions struct {
	// Endpoints of an etcd to use; empty starts a fresh etcd server
	// process (build/bin/etcd, see hack/etcd.sh) for the run.
	Endpoints []string
	// NodeProcs is how many `virtkit node` processes run (simulated hosts).
	NodeProcs int
	Workers   int
	// ProfilePrefix, when set, makes every virtkit process write a CPU
	// profile to PREFIX-NAME-VMS.pprof.
	ProfilePrefix string
	// Binary is the virtkit executable the processes run.
	Binary string
}

// benchProc is one process of the run.
type benchProc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func (p *benchProc) pid() int { return p.cmd.Process.Pid }

// measureScaleEtcd runs one controller process and o.NodeProcs node
// processes against etcd, creates vms VMs through etcd from this process
// and measures create-to-Running, CPU per process over that window, VM and
// VMI writes (counted from a watch) and reconciles (scraped from each
// process's metrics once the fleet settled).
func measureScaleEtcd(ctx context.Context, vms int, o etcdScaleOptions) (res cluster.ScaleResult, err error) {
	dir, err := os.MkdirTemp("", "virtkit-bench-scale-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)

	endpoints := o.Endpoints
	var srv *etcdproc.Server
	if len(endpoints) == 0 {
		bin, err := etcdproc.FindBinary(moduleRoot())
		if err != nil {
			return res, err
		}
		srv, err = etcdproc.Start(ctx, etcdproc.Options{Binary: bin, Dir: filepath.Join(dir, "etcd"), Name: "bench-scale", LogFile: filepath.Join(dir, "etcd.log")})
		if err != nil {
			return res, err
		}
		defer func() { _ = srv.Stop(context.WithoutCancel(ctx)) }()
		endpoints = []string{srv.Endpoint()}
	}
	// A prefix of its own, so runs against a shared etcd never meet.
	prefix := fmt.Sprintf("/virtkit-bench-scale-%d", time.Now().UnixNano())
	st, err := etcd.New(ctx, etcd.Options{Endpoints: endpoints, Prefix: prefix})
	if err != nil {
		return res, err
	}
	defer st.Close()
	defer func() {
		if err == nil {
			// Leave a shared etcd as it was.
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			_, _ = st.Client().Delete(dctx, prefix+"/", clientv3.WithPrefix())
			cancel()
		}
	}()

	var hosts []string
	for _, e := range endpoints {
		hosts = append(hosts, strings.TrimPrefix(strings.TrimPrefix(e, "http://"), "https://"))
	}
	storeFlag := []string{"--store", "etcd://" + strings.Join(hosts, ","), "--etcd-prefix", prefix}
	var procs []*benchProc
	defer func() { stopProcs(procs) }()
	start := func(name string, args ...string) (*benchProc, error) {
		if o.ProfilePrefix != "" {
			args = append(args, "--cpu-profile", fmt.Sprintf("%s-%s-%d.pprof", o.ProfilePrefix, name, vms))
		}
		args = append(args, "--metrics-addr", "127.0.0.1:0")
		p := &benchProc{name: name, log: filepath.Join(dir, name+".log"), done: make(chan struct{})}
		f, err := os.Create(p.log)
		if err != nil {
			return nil, err
		}
		p.cmd = exec.Command(o.Binary, args...)
		p.cmd.Stdout, p.cmd.Stderr = f, f
		if err := p.cmd.Start(); err != nil {
			f.Close()
			return nil, fmt.Errorf("start %s: %w", name, err)
		}
		go func() { _ = p.cmd.Wait(); f.Close(); close(p.done) }()
		procs = append(procs, p)
		return p, nil
	}
	workers := strconv.Itoa(o.Workers)
	if _, err := start("controller", append([]string{"controller", "--workers", workers, "--leader-ttl", "5s", "--log-level", "warn"}, storeFlag...)...); err != nil {
		return res, err
	}
	perHost := vms/o.NodeProcs + 1
	for i := range o.NodeProcs {
		name := fmt.Sprintf("scale-node-%d", i)
		if _, err := start(name, append([]string{"node", "--name", name, "--hypervisor", "sim", "--workers", workers, "--log-level", "warn",
			"--sim-cpus", strconv.Itoa(max(8, perHost)), "--sim-memory", fmt.Sprintf("%dMi", max(8, perHost)*128), "--status-interval", "1m"},
			storeFlag...)...); err != nil {
			return res, err
		}
	}
	if err := waitReady(ctx, st, prefix, o.NodeProcs, procs); err != nil {
		return res, err
	}

	counter, err := countWrites(ctx, st, prefix)
	if err != nil {
		return res, err
	}
	names := make([]string, vms)
	for i := range names {
		names[i] = fmt.Sprintf("vm-%05d", i)
	}
	pids := map[string]int{"bench": os.Getpid()}
	for _, p := range procs {
		pids[p.name] = p.pid()
	}
	if srv != nil {
		pids["etcd"] = srv.PID()
	}
	cpu0 := cpuOf(pids)
	lat, total, err := cluster.MeasureCreateToRunning(ctx, st, names, 16, func(ctx context.Context, name string) error {
		return cluster.Apply(ctx, st, cluster.ScaleVM(name))
	})
	cpu1 := cpuOf(pids)
	if err != nil {
		return res, fmt.Errorf("%w%s", err, procLogTails(procs))
	}
	writes := counter.settle(ctx, 500*time.Millisecond, 15*time.Second)

	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	res = cluster.ScaleResult{
		VMs: vms, Nodes: o.NodeProcs, Total: total, Backend: "etcd",
		Throughput: float64(vms) / total.Seconds(),
		P50:        pct(0.50), P90: pct(0.90), P99: pct(0.99), Max: lat[len(lat)-1],
		WritesPerVM: float64(writes) / float64(vms),
	}
	for _, name := range append([]string{"bench", "etcd"}, procNames(procs)...) {
		pid, ok := pids[name]
		if !ok {
			continue
		}
		pc := cluster.ProcessCounts{Name: name, CPU: cpu1[name] - cpu0[name], PeakRSS: peakRSSOf(pid)}
		for _, p := range procs {
			if p.name == name {
				pc.Reconciles = scrapeReconciles(ctx, p)
			}
		}
		res.Processes = append(res.Processes, pc)
		res.CPU += pc.CPU
		res.PeakRSS += pc.PeakRSS
		res.Reconciles += pc.Reconciles
	}
	res.CPUPerVM = res.CPU / time.Duration(vms)
	res.ReconcilesPerVM = float64(res.Reconciles) / float64(vms)
	res.ReconcilesPerSec = float64(res.Reconciles) / total.Seconds()
	return res, nil
}

func procNames(procs []*benchProc) []string {
	var out []string
	for _, p := range procs {
		out = append(out, p.name)
	}
	return out
}

// waitReady waits for every node to be Ready and the controller to lead.
func waitReady(ctx context.Context, st *etcd.Store, prefix string, nodes int, procs []*benchProc) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		for _, p := range procs {
			select {
			case <-p.done:
				return fmt.Errorf("%s exited while starting%s", p.name, procLogTails([]*benchProc{p}))
			default:
			}
		}
		ready := 0
		l := &virtkit.NodeList{}
		if err := st.List(ctx, l, store.ListOptions{}); err == nil {
			for _, n := range l.Items {
				if virtkit.IsConditionTrue(n.Status.Conditions, virtkit.NodeReady) {
					ready++
				}
			}
		}
		resp, err := st.Client().Get(ctx, prefix+"/leader/controller/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if ready == nodes && err == nil && resp.Count > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d ready nodes (%d) and a leader: %w%s", nodes, ready, ctx.Err(), procLogTails(procs))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// writeCounter counts VM and VMI writes from raw etcd watches on their
// key prefixes (one event per write; nothing decoded, so the count costs
// the bench little).
type writeCounter struct {
	mu     sync.Mutex
	n      uint64
	cancel context.CancelFunc
}

func countWrites(ctx context.Context, st *etcd.Store, prefix string) (*writeCounter, error) {
	resp, err := st.Client().Get(ctx, prefix+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	c := &writeCounter{cancel: cancel}
	for _, kind := range []string{virtkit.KindVirtualMachine, virtkit.KindVirtualMachineInstance} {
		ch := st.Client().Watch(wctx, prefix+"/"+kind+"/", clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
		go func() {
			for resp := range ch {
				c.mu.Lock()
				c.n += uint64(len(resp.Events))
				c.mu.Unlock()
			}
		}()
	}
	return c, nil
}

func (c *writeCounter) count() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// settle waits until no write was seen for quiet (at most maxWait), stops
// counting and returns the count.
func (c *writeCounter) settle(ctx context.Context, quiet, maxWait time.Duration) uint64 {
	defer c.cancel()
	deadline := time.Now().Add(maxWait)
	last := c.count()
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return c.count()
		case <-time.After(quiet):
		}
		if now := c.count(); now != last {
			last = now
			continue
		}
		return last
	}
	return c.count()
}

// stopProcs sends SIGTERM to every process and waits (SIGKILL after 20 s).
func stopProcs(procs []*benchProc) {
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
}

// procLogTails are the last lines of each process's log, for errors.
func procLogTails(procs []*benchProc) string {
	var b strings.Builder
	for _, p := range procs {
		data, _ := os.ReadFile(p.log)
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 10 {
			lines = lines[len(lines)-10:]
		}
		fmt.Fprintf(&b, "\n--- %s:\n%s", p.name, strings.Join(lines, "\n"))
	}
	return b.String()
}

var metricsURLInLog = regexp.MustCompile(`metrics: (http://\S+/metrics)`)

// scrapeReconciles sums virtkit_controller_reconcile_total from the
// process's metrics endpoint (its address is in its log).
func scrapeReconciles(ctx context.Context, p *benchProc) uint64 {
	data, _ := os.ReadFile(p.log)
	m := metricsURLInLog.FindSubmatch(data)
	if m == nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, string(m[1]), nil)
	if err != nil {
		return 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var total float64
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 256<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "virtkit_controller_reconcile_total") {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			total += v
		}
	}
	return uint64(total)
}

// clockTicks is Linux's USER_HZ, the unit of /proc/PID/stat's CPU times.
const clockTicks = 100

// cpuOf reads each process's user + system CPU time from /proc.
func cpuOf(pids map[string]int) map[string]time.Duration {
	out := make(map[string]time.Duration, len(pids))
	for name, pid := range pids {
		d, err := procCPU(pid)
		if err == nil {
			out[name] = d
		}
	}
	return out
}

func procCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces: fields start after its ')'.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0, errors.New("malformed stat")
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("malformed stat")
	}
	// utime and stime are the 14th and 15th fields; f starts at the 3rd.
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("malformed stat")
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// peakRSSOf is a process's VmHWM in bytes, 0 when unknown.
func peakRSSOf(pid int) uint64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kib, _ := strconv.ParseUint(f[0], 10, 64)
				return kib << 10
			}
		}
	}
	return 0
}

// moduleRoot is the nearest directory up from the working directory with
// a go.mod, where hack/etcd.sh puts build/bin/etcd ("" when none).
func moduleRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
