//go:build faults

package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"syscall"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// hostDomainsPath is where a node agent started with --metrics-addr serves
// what its hypervisor really runs (the node package's observation
// contract). An agent without it is observed through its state file.
const hostDomainsPath = "/debug/domains"

// maxReplyBytes bounds one observation read.
const maxReplyBytes = 8 << 20

// hostView is what one read of a node says is active there.
type hostView struct {
	// active maps each active domain to its uuid.
	active map[string]string
	// deadline is when the host's watchdog stops every guest unless
	// petted; nil when none is armed.
	deadline *time.Time
}

// debugDomainsReply is the part of GET /debug/domains the suite reads.
type debugDomainsReply struct {
	Domains []struct {
		Name   string `json:"name"`
		UUID   string `json:"uuid"`
		Active bool   `json:"active"`
	} `json:"domains"`
	Watchdog *struct {
		Armed    bool       `json:"armed"`
		Deadline *time.Time `json:"deadline"`
	} `json:"watchdog"`
}

// stateFileView is the part of a simulated host's state file the suite
// reads.
type stateFileView struct {
	Domains []struct {
		Name  string                 `json:"name"`
		UUID  string                 `json:"uuid"`
		State hypervisor.DomainState `json:"state"`
	} `json:"domains"`
	WatchdogDeadline *time.Time `json:"watchdogDeadline"`
}

// observer reads one node's guests. It is not safe for concurrent use:
// every goroutine that observes has its own.
type observer struct {
	n      *testNode
	client *http.Client
	noHTTP bool      // the agent serves no /debug/domains
	last   *hostView // the last answer of the running process
	cache  struct {
		fp   fileFingerprint
		view hostView
	}
}

type observers map[string]*observer

func (c *testCluster) newObservers() observers {
	out := observers{}
	for _, name := range nodeNames {
		n := c.nodes[name]
		out[name] = &observer{n: n, noHTTP: n.metricsAddr == "", client: &http.Client{Timeout: time.Second}}
	}
	return out
}

// read returns what the node runs, given its process's state:
//
//   - a running process that answers: its answer at /debug/domains, which
//     already reflects its host's watchdog;
//   - any other (frozen by SIGSTOP, killed, starting, stuck, or serving no
//     /debug/domains): the guests of its last answer until the watchdog
//     deadline that answer carried (forever without one), as the node
//     package's observation contract says, together with the guests its
//     state file records until the deadline on file: guests outlive their
//     agent, and a restarted agent's host restores them from that file.
//
// Guests held only by a deadline are filtered at the time of the read.
func (o *observer) read(ctx context.Context, state procState) (hostView, error) {
	if state == procRunning && !o.noHTTP {
		v, err := o.get(ctx)
		if err == nil {
			o.last = &v
			return v, nil
		}
		if errors.Is(err, errNoEndpoint) {
			o.noHTTP = true
		}
	}
	f, err := o.file()
	if err != nil {
		return hostView{}, err
	}
	now := time.Now()
	out := hostView{active: map[string]string{}}
	for _, v := range []*hostView{o.last, &f} {
		if v == nil || (v.deadline != nil && !now.Before(*v.deadline)) {
			continue // the watchdog has stopped them
		}
		maps.Copy(out.active, v.active)
	}
	return out, nil
}

var errNoEndpoint = errors.New("the node agent serves no " + hostDomainsPath)

func (o *observer) get(ctx context.Context) (hostView, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+o.n.metricsAddr+hostDomainsPath, nil)
	if err != nil {
		return hostView{}, err
	}
	resp, err := o.client.Do(req)
	if err != nil {
		return hostView{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes))
	if err != nil {
		return hostView{}, err
	}
	if resp.StatusCode == http.StatusNotFound {
		return hostView{}, errNoEndpoint
	}
	if resp.StatusCode != http.StatusOK {
		return hostView{}, fmt.Errorf("%s %s: %s", o.n.name, resp.Status, body)
	}
	var r debugDomainsReply
	if err := json.Unmarshal(body, &r); err != nil {
		return hostView{}, fmt.Errorf("%s %s: %w", o.n.name, hostDomainsPath, err)
	}
	v := hostView{active: map[string]string{}}
	for _, d := range r.Domains {
		if d.Active {
			v.active[d.Name] = d.UUID
		}
	}
	if r.Watchdog != nil && r.Watchdog.Armed {
		v.deadline = r.Watchdog.Deadline
	}
	return v, nil
}

// fileFingerprint identifies one version of a state file (each save
// renames a new file over the old).
type fileFingerprint struct {
	ino   uint64
	mtime time.Time
	size  int64
}

func (o *observer) file() (hostView, error) {
	fi, err := os.Stat(o.n.state)
	if os.IsNotExist(err) {
		return hostView{}, nil
	}
	if err != nil {
		return hostView{}, err
	}
	fp := fileFingerprint{mtime: fi.ModTime(), size: fi.Size()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		fp.ino = st.Ino
	}
	if o.cache.view.active != nil && o.cache.fp == fp {
		return o.cache.view, nil
	}
	data, err := os.ReadFile(o.n.state)
	if err != nil {
		return hostView{}, err
	}
	var f stateFileView
	if err := json.Unmarshal(data, &f); err != nil {
		return hostView{}, fmt.Errorf("%s: %w", o.n.state, err)
	}
	v := hostView{active: map[string]string{}, deadline: f.WatchdogDeadline}
	for _, d := range f.Domains {
		if active(d.State) {
			v.active[d.Name] = d.UUID
		}
	}
	// Cache only what was read from the file that was stat'ed.
	if fi2, err := os.Stat(o.n.state); err == nil && fi2.ModTime().Equal(fp.mtime) && fi2.Size() == fp.size {
		o.cache.fp, o.cache.view = fp, v
	}
	return v, nil
}

// errInconsistent: processes kept changing state during every attempt at a
// snapshot.
var errInconsistent = errors.New("no consistent snapshot of the nodes' guests")

// runningGuests returns, for every active domain, the nodes it runs on at
// one same instant. Nodes are read one after the other, twice; a guest
// counts on a node only if both reads show it active with the same uuid,
// so it was active during the whole interval between them, and these
// intervals all overlap (every first read precedes every second read; a
// guest held by a watchdog deadline is in the second read only if the
// deadline is after every first read). The snapshot is retried when a
// process changed state while it was taken.
func (c *testCluster) runningGuests(obs observers) (map[string][]string, error) {
	ctx, cancel := context.WithTimeout(c.t.Context(), 10*time.Second)
	defer cancel()
	for range 5 {
		states := c.procStates()
		first, err := obs.readAll(ctx, states)
		if err != nil {
			return nil, err
		}
		second, err := obs.readAll(ctx, states)
		if err != nil {
			return nil, err
		}
		if !maps.Equal(states, c.procStates()) {
			continue
		}
		out := map[string][]string{}
		for _, name := range nodeNames {
			v1, v2 := first[name], second[name]
			for dom, uuid := range v1.active {
				if v2.active[dom] == uuid {
					out[dom] = append(out[dom], name)
				}
			}
		}
		return out, nil
	}
	return nil, errInconsistent
}

func (c *testCluster) procStates() map[string]procState {
	out := map[string]procState{}
	for _, name := range nodeNames {
		out[name] = c.nodes[name].proc.State()
	}
	return out
}

func (obs observers) readAll(ctx context.Context, states map[string]procState) (map[string]hostView, error) {
	out := map[string]hostView{}
	for _, name := range nodeNames {
		v, err := obs[name].read(ctx, states[name])
		if err != nil {
			return nil, err
		}
		out[name] = v
	}
	return out, nil
}

// sample is one round of the double-run detector.
func (m *monitor) sample() {
	guests, err := m.c.runningGuests(m.obs)
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		if m.ctx.Err() != nil {
			return
		}
		// A read that failed (a process stopped or killed while it was
		// read, a reply that timed out) proves nothing either way.
		m.inconsistent++
		return
	}
	m.samples++
	for dom, where := range guests {
		if len(where) < 2 {
			continue
		}
		d := m.doubles[dom]
		if d == nil {
			d = &doubleRun{nodes: map[string]bool{}, first: now}
			m.doubles[dom] = d
		}
		for _, n := range where {
			d.nodes[n] = true
		}
		d.last = now
		d.samples++
	}
}
