//go:build faults

package faults

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

// detectorRig is three simulated hosts in this process writing the state
// files node agents write; node-a and node-b also answer /debug/domains
// as agents do, node-c does not (it is observed through its file).
type detectorRig struct {
	t     *testing.T
	ctx   context.Context
	c     *testCluster
	hosts map[string]*sim.Persistent
}

func newDetectorRig(t *testing.T) *detectorRig {
	// Not t.TempDir: the simulated hosts save asynchronously and may
	// still write a file while the directory is being removed.
	dir, err := os.MkdirTemp("", "faults-detector-")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(func() {
		cancel()
		for range 20 {
			if os.RemoveAll(dir) == nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	r := &detectorRig{t: t, ctx: ctx, c: &testCluster{t: t, dir: dir, nodes: map[string]*testNode{}},
		hosts: map[string]*sim.Persistent{}}
	for _, name := range nodeNames {
		n := &testNode{name: name, state: filepath.Join(dir, name+".state.json"), proc: newVProc(dir, name)}
		n.proc.state = procRunning // no process: the test plays it
		h, err := sim.OpenPersistent(ctx, sim.New(sim.Options{Name: name}), n.state)
		require.NoError(t, err)
		r.hosts[name] = h
		if name != "node-c" {
			srv := httptest.NewServer(hostDomainsHandler(h))
			t.Cleanup(srv.Close)
			n.metricsAddr = strings.TrimPrefix(srv.URL, "http://")
		}
		r.c.nodes[name] = n
	}
	return r
}

// hostDomainsHandler answers GET /debug/domains from a simulated host, in
// the node agent's format.
func hostDomainsHandler(h *sim.Persistent) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != hostDomainsPath {
			http.NotFound(w, req)
			return
		}
		doms, err := h.List(req.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		type dom struct {
			Name   string                 `json:"name"`
			UUID   string                 `json:"uuid"`
			State  hypervisor.DomainState `json:"state"`
			Active bool                   `json:"active"`
		}
		type watchdog struct {
			Armed    bool       `json:"armed"`
			Deadline *time.Time `json:"deadline,omitempty"`
		}
		var reply struct {
			Domains  []dom     `json:"domains"`
			Watchdog *watchdog `json:"watchdog"`
		}
		for _, d := range doms {
			reply.Domains = append(reply.Domains, dom{Name: d.Name, UUID: d.UUID, State: d.State, Active: active(d.State)})
		}
		reply.Watchdog = &watchdog{}
		if deadline, armed := h.WatchdogDeadline(); armed {
			reply.Watchdog.Armed, reply.Watchdog.Deadline = true, &deadline
		}
		_ = json.NewEncoder(w).Encode(reply)
	})
}

func (r *detectorRig) run(node, dom string) {
	r.t.Helper()
	_, err := r.hosts[node].Define(r.ctx, `<domain type='kvm'><name>`+dom+`</name><memory unit='MiB'>64</memory><vcpu>1</vcpu><os><type arch='x86_64'>hvm</type></os></domain>`)
	require.NoError(r.t, err)
	require.NoError(r.t, r.hosts[node].Start(r.ctx, dom, hypervisor.StartOptions{}))
}

func (r *detectorRig) destroy(node, dom string) {
	r.t.Helper()
	require.NoError(r.t, r.hosts[node].Destroy(r.ctx, dom))
}

func (r *detectorRig) state(node string, s procState) { r.c.nodes[node].proc.state = s }

// doubles runs one detector round on a fresh monitor that keeps the
// observers' memory (the last answer of a node before it stopped).
func (r *detectorRig) doubles(obs observers) []string {
	r.t.Helper()
	m := newMonitor(r.c)
	m.ctx = r.ctx
	m.obs = obs
	m.sample()
	require.Equal(r.t, 1, m.samples, "a conclusive round")
	v, _ := m.report()
	return v["double run"]
}

// TestDetector checks the double-run detector itself.
func TestDetector(t *testing.T) {
	r := newDetectorRig(t)
	obs := r.c.newObservers()

	// A guest handed over: stopped on node-a before it starts on node-b.
	r.run("node-a", "default_moved")
	require.Empty(t, r.doubles(obs))
	r.destroy("node-a", "default_moved")
	r.run("node-b", "default_moved")
	require.Empty(t, r.doubles(obs))

	// Running on two nodes, one observed through its state file.
	r.run("node-c", "default_moved")
	got := r.doubles(obs)
	require.Len(t, got, 1)
	assert.Contains(t, got[0], "default_moved active on [node-b node-c] at once: 1 samples")

	// A killed or frozen agent's guests keep running (no watchdog here):
	// from its state file, or from its last answer.
	r.state("node-c", procDown)
	require.Len(t, r.doubles(obs), 1)
	r.state("node-c", procStopped)
	require.Len(t, r.doubles(obs), 1)
	r.state("node-c", procRunning)
	r.destroy("node-c", "default_moved")
	require.Empty(t, r.doubles(obs))
	r.state("node-b", procStopped)
	r.destroy("node-b", "default_moved") // not seen: the process is frozen
	r.run("node-a", "default_moved")
	got = r.doubles(obs)
	require.Len(t, got, 1)
	assert.Contains(t, got[0], "default_moved active on [node-a node-b]")
	r.state("node-b", procRunning)
	require.Empty(t, r.doubles(obs), "node-b's next answer shows the guest gone")

	// A killed agent's guests stop at the watchdog deadline on file; a
	// frozen one's at the deadline of its last answer.
	r.destroy("node-a", "default_moved")
	require.NoError(t, r.hosts["node-c"].PetWatchdog(r.ctx, 400*time.Millisecond))
	require.NoError(t, r.hosts["node-b"].PetWatchdog(r.ctx, 400*time.Millisecond))
	r.run("node-c", "default_wd")
	r.run("node-b", "default_wd2")
	require.Empty(t, r.doubles(obs)) // node-b's answer, with its deadline, is its last
	r.state("node-c", procDown)
	r.state("node-b", procStopped)
	r.run("node-a", "default_wd")
	r.run("node-a", "default_wd2")
	require.Len(t, r.doubles(obs), 2, "before the deadlines")
	time.Sleep(500 * time.Millisecond)
	require.Empty(t, r.doubles(obs), "after the deadlines")
	r.destroy("node-a", "default_wd")
	r.destroy("node-a", "default_wd2")
	r.state("node-c", procRunning)
	r.state("node-b", procRunning)
	require.NoError(t, r.hosts["node-c"].DisarmWatchdog(r.ctx))
	require.NoError(t, r.hosts["node-b"].DisarmWatchdog(r.ctx))

	// A paused guest still holds its VM.
	r.run("node-c", "default_paused")
	r.run("node-b", "default_paused")
	require.NoError(t, r.hosts["node-b"].Pause(r.ctx, "default_paused"))
	got = r.doubles(obs)
	require.Len(t, got, 1)
	assert.Contains(t, got[0], "default_paused active on [node-b node-c]")
}
