//go:build faults

package faults

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

const (
	// sampleEvery is the double-run detector's period.
	sampleEvery = 50 * time.Millisecond
	// listEvery is the period of the object checks (uids, lost objects).
	listEvery = 250 * time.Millisecond
	// maxViolations bounds what is kept per kind of violation.
	maxViolations = 20
)

// active reports whether a guest in this state holds its VM: it executes,
// or is paused or suspended with its memory and disks.
func active(s hypervisor.DomainState) bool {
	switch s {
	case hypervisor.StateShutoff, hypervisor.StateCrashed, hypervisor.StateNoState, "":
		return false
	}
	return true
}

// monitor checks the invariants continuously while a scenario runs.
type monitor struct {
	c      *testCluster
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	obs observers // only the detector goroutine uses them

	mu sync.Mutex
	// samples counts detector rounds; lists counts object checks and
	// listErrors those that failed (etcd down).
	samples, lists, listErrors int
	// inconsistent counts detector rounds that found no consistent
	// snapshot or failed to read a node.
	inconsistent int
	doubles      map[string]*doubleRun
	// intent: name -> when the suite last changed its mind about the VM;
	// wanted names must exist from then on; flux names are not checked.
	intent map[string]time.Time
	wanted map[string]bool
	flux   map[string]bool
	// vmObs is each VM's uid as last listed, with when that list started.
	vmObs map[string]vmObservation
	// uidKey maps every uid seen to its object.
	uidKey map[types.UID]string
	// incarnations counts distinct VMI uids per VM name.
	incarnations map[string]map[types.UID]bool
	violations   map[string][]string
}

type vmObservation struct {
	uid types.UID
	at  time.Time
}

// doubleRun is one VM seen active on more than one node.
type doubleRun struct {
	nodes       map[string]bool
	first, last time.Time
	samples     int
}

func newMonitor(c *testCluster) *monitor {
	return &monitor{
		c: c, doubles: map[string]*doubleRun{}, intent: map[string]time.Time{}, wanted: map[string]bool{},
		flux: map[string]bool{}, vmObs: map[string]vmObservation{}, uidKey: map[types.UID]string{},
		incarnations: map[string]map[types.UID]bool{}, violations: map[string][]string{},
		obs: c.newObservers(),
	}
}

func (m *monitor) start() {
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.wg.Go(func() { m.loop(sampleEvery, m.sample) })
	m.wg.Go(func() { m.loop(listEvery, m.check) })
}

func (m *monitor) stop() {
	if m.cancel != nil {
		m.cancel()
		m.wg.Wait()
	}
}

func (m *monitor) loop(every time.Duration, fn func()) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		fn()
		select {
		case <-m.ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// want records that VM name must exist from now on.
func (m *monitor) want(name string) { m.setIntent(name, true, false) }

// unwant records that VM name is being deleted.
func (m *monitor) unwant(name string) { m.setIntent(name, false, false) }

// inFlux records that VM name's fate is being decided by a race; resolve
// it with want or unwant.
func (m *monitor) inFlux(name string) { m.setIntent(name, false, true) }

func (m *monitor) setIntent(name string, want, flux bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.intent[name] = time.Now()
	m.wanted[name] = want
	m.flux[name] = flux
}

// wantedVMs are the VMs that must exist and run.
func (m *monitor) wantedVMs() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for n, w := range m.wanted {
		if w {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// --- object checks: uids and lost objects

func (m *monitor) check() {
	started := time.Now()
	ctx, cancel := context.WithTimeout(m.ctx, 3*time.Second)
	defer cancel()
	vms := &virtkit.VirtualMachineList{}
	vmis := &virtkit.VirtualMachineInstanceList{}
	nodes := &virtkit.NodeList{}
	err := m.c.st.List(ctx, vms, store.ListOptions{})
	if err == nil {
		err = m.c.st.List(ctx, vmis, store.ListOptions{})
	}
	if err == nil {
		err = m.c.st.List(ctx, nodes, store.ListOptions{})
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		if m.ctx.Err() == nil {
			m.listErrors++ // etcd unreachable: nothing can be checked
		}
		return
	}
	m.lists++
	seen := map[string]bool{}
	for _, v := range vms.Items {
		seen[v.Name] = true
		m.noteUID(v.UID, "VirtualMachine "+v.Namespace+"/"+v.Name)
		prev, ok := m.vmObs[v.Name]
		if ok && prev.uid != v.UID && m.intent[v.Name].Before(prev.at) {
			m.violationLocked("replaced", "VM %s changed uid %s -> %s though nobody deleted it", v.Name, prev.uid, v.UID)
		}
		m.vmObs[v.Name] = vmObservation{uid: v.UID, at: started}
	}
	for name, want := range m.wanted {
		if want && !m.flux[name] && m.intent[name].Before(started) && !seen[name] {
			m.violationLocked("lost", "VM %s missing though its creation was acknowledged at %s", name,
				m.intent[name].Format("15:04:05.000"))
		}
	}
	for _, v := range vmis.Items {
		m.noteUID(v.UID, "VirtualMachineInstance "+v.Namespace+"/"+v.Name)
		if m.incarnations[v.Name] == nil {
			m.incarnations[v.Name] = map[types.UID]bool{}
		}
		m.incarnations[v.Name][v.UID] = true
	}
	for _, n := range nodes.Items {
		m.noteUID(n.UID, "Node "+n.Name)
	}
}

func (m *monitor) noteUID(uid types.UID, key string) {
	if uid == "" {
		m.violationLocked("uid", "%s has no uid", key)
		return
	}
	if prev, ok := m.uidKey[uid]; ok && prev != key {
		m.violationLocked("uid", "uid %s belongs to %s and %s", uid, prev, key)
		return
	}
	m.uidKey[uid] = key
}

func (m *monitor) violationLocked(kind, format string, args ...any) {
	if len(m.violations[kind]) < maxViolations {
		m.violations[kind] = append(m.violations[kind], time.Now().Format("15:04:05.000 ")+fmt.Sprintf(format, args...))
	}
}

// report is the monitor's findings: violations by kind (empty when every
// invariant held) and a summary line.
func (m *monitor) report() (map[string][]string, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]string{}
	for k, v := range m.violations {
		out[k] = append([]string(nil), v...)
	}
	doms := make([]string, 0, len(m.doubles))
	for d := range m.doubles {
		doms = append(doms, d)
	}
	sort.Strings(doms)
	for _, dom := range doms {
		d := m.doubles[dom]
		var nodes []string
		for n := range d.nodes {
			nodes = append(nodes, n)
		}
		sort.Strings(nodes)
		out["double run"] = append(out["double run"], fmt.Sprintf("%s active on %v at once: %d samples from %s to %s (%v)",
			dom, nodes, d.samples, d.first.Format("15:04:05.000"), d.last.Format("15:04:05.000"),
			d.last.Sub(d.first).Round(time.Millisecond)))
	}
	replaced := 0
	for _, uids := range m.incarnations {
		replaced += len(uids) - 1
	}
	summary := fmt.Sprintf("detector: %d samples every %v (%d inconclusive), %d VMs double-run; object checks: %d lists (%d failed), %d uids, %d VMI re-incarnations",
		m.samples, sampleEvery, m.inconsistent, len(m.doubles), m.lists, m.listErrors, len(m.uidKey), replaced)
	return out, summary
}

// incarnationsOf returns how many VMI uids VM name had.
func (m *monitor) incarnationsOf(name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.incarnations[name])
}

// --- convergence

// converged checks the end state: every wanted VM has exactly one VMI,
// Running on a running node, whose guest is active on that node and
// nowhere else; no other VM or VMI exists; no other guest is active on any
// node. Every node must be running.
func (c *testCluster) converged() (bool, string) {
	want := c.mon.wantedVMs()
	for _, n := range nodeNames {
		if s := c.nodes[n].proc.State(); s != procRunning {
			return false, n + " is " + s.String()
		}
	}
	ctx, cancel := c.ctx()
	defer cancel()
	vms := &virtkit.VirtualMachineList{}
	vmis := &virtkit.VirtualMachineInstanceList{}
	if err := c.st.List(ctx, vms, store.ListOptions{}); err != nil {
		return false, err.Error()
	}
	if err := c.st.List(ctx, vmis, store.ListOptions{}); err != nil {
		return false, err.Error()
	}
	guests, err := c.runningGuests(c.newObservers())
	if err != nil {
		return false, err.Error()
	}
	var problems []string
	vmByName := map[string]bool{}
	for _, v := range vms.Items {
		vmByName[v.Name] = true
		if !slices.Contains(want, v.Name) {
			problems = append(problems, "unwanted VM "+v.Name)
		}
	}
	vmiByName := map[string]virtkit.VirtualMachineInstance{}
	for _, v := range vmis.Items {
		vmiByName[v.Name] = v
		if !slices.Contains(want, v.Name) {
			problems = append(problems, fmt.Sprintf("unwanted VMI %s (%s on %q)", v.Name, v.Status.Phase, v.Status.NodeName))
		}
	}
	for _, name := range want {
		vmi, ok := vmiByName[name]
		where := guests[node.DomainName(namespace, name)]
		switch {
		case !vmByName[name]:
			problems = append(problems, name+": no VM")
		case !ok:
			problems = append(problems, name+": no VMI")
		case vmi.DeletionTimestamp != nil:
			problems = append(problems, name+": VMI being deleted")
		case vmi.Status.Phase != virtkit.Running:
			problems = append(problems, fmt.Sprintf("%s: VMI %s on %q", name, vmi.Status.Phase, vmi.Status.NodeName))
		case len(where) != 1 || where[0] != vmi.Status.NodeName:
			problems = append(problems, fmt.Sprintf("%s: VMI on %s, guests on %v", name, vmi.Status.NodeName, where))
		}
	}
	for dom, where := range guests {
		_, name, _ := node.SplitDomainName(dom)
		if !slices.Contains(want, name) {
			problems = append(problems, fmt.Sprintf("stray guest %s on %v", dom, where))
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		if len(problems) > 8 {
			problems = append(problems[:8], fmt.Sprintf("... %d more", len(problems)-8))
		}
		return false, strings.Join(problems, "; ")
	}
	return true, ""
}

// finish waits for convergence, lets the detector run a little longer,
// stops the monitors and fails the test for every violated invariant.
func (c *testCluster) finish(timeout time.Duration) {
	c.t.Helper()
	took := c.waitFor(fmt.Sprintf("%d VMs running, one guest each", len(c.mon.wantedVMs())), timeout, c.converged)
	c.t.Logf("converged %v after the last step", took.Round(100*time.Millisecond))
	time.Sleep(time.Second)
	c.mon.stop()
	violations, summary := c.mon.report()
	c.t.Log(summary)
	for _, p := range c.procs() {
		starts, exits := p.history()
		if starts > 1 {
			c.t.Logf("%s started %d times; exits: %s", p.name, starts, strings.Join(exits, "; "))
		}
	}
	kinds := make([]string, 0, len(violations))
	for k := range violations {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		c.t.Errorf("invariant violated (%s), %d findings:\n  %s", k, len(violations[k]), strings.Join(violations[k], "\n  "))
	}
}
