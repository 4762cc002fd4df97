package sim_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"testing"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

// FuzzStateFile: whatever a state file holds, reading it and restoring it
// into a fresh host never panics; it either fails with an error wrapping
// sim.ErrStateFile or recreates exactly the recorded domains that outlive
// a restart (persistent or running), and the file it writes back restores
// the same host again.
func FuzzStateFile(f *testing.F) {
	dom := func(name, state string, persistent bool) map[string]any {
		return map[string]any{"name": name, "uuid": "", "xml": persistXML(name), "state": state, "persistent": persistent}
	}
	for _, doms := range [][]map[string]any{
		nil,
		{dom("ns_a", "Running", true), dom("ns_b", "Paused", true), dom("ns_c", "Shutoff", true), dom("ns_d", "Running", false)},
		{dom("ns_a", "Running", true), dom("ns_a", "Shutoff", true)},
		{dom("ns_a", "Exploded", true)},
		{{"name": "ns_x", "xml": persistXML("ns_y"), "state": "Running", "persistent": true}},
		{{"name": "", "xml": "<domain/>", "state": "Running", "persistent": true}},
	} {
		data, _ := json.Marshal(map[string]any{"version": 1, "host": "n1", "domains": doms})
		f.Add(data)
	}
	f.Add([]byte(`{"version":2,"domains":[]}`))
	f.Add([]byte(`not json`))
	f.Add([]byte(`{"version":1,"domains":[{"name":"a","xml":"<domain><name>a</name><memory>99999999999999999999</memory></domain>","state":"Running","persistent":true}]}`))

	dir, err := os.MkdirTemp("", "sim-fuzz-")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { os.RemoveAll(dir) })
	// One file per input: a host's saver may still write its file for a
	// moment after its context ends.
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, fmt.Sprintf("state-%d.json", n.Add(1)))
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		recorded, err := sim.ReadState(path)
		if err != nil {
			if !errors.Is(err, sim.ErrStateFile) {
				t.Fatalf("ReadState error does not wrap ErrStateFile: %v", err)
			}
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		p, err := sim.OpenPersistent(ctx, sim.New(sim.Options{Name: "n1"}), path)
		if err != nil {
			if !errors.Is(err, sim.ErrStateFile) {
				t.Fatalf("OpenPersistent error does not wrap ErrStateFile: %v", err)
			}
			return
		}
		want := map[string]hypervisor.DomainState{}
		for _, d := range recorded {
			switch {
			case d.State.IsActive():
				want[d.Name] = d.State
			case d.Persistent:
				want[d.Name] = hypervisor.StateShutoff
			}
		}
		got := restored(t, p)
		if !equalStates(got, want) {
			t.Fatalf("restored %v, the file recorded %v", got, want)
		}
		// The file written back restores the same host.
		cancel()
		<-p.Done()
		ctx2, cancel2 := context.WithCancel(context.Background())
		again, err := sim.OpenPersistent(ctx2, sim.New(sim.Options{Name: "n1"}), path)
		if err != nil {
			cancel2()
			t.Fatalf("the file the host wrote does not restore: %v", err)
		}
		defer func() { cancel2(); <-again.Done() }()
		if got2 := restored(t, again); !equalStates(got2, got) {
			t.Fatalf("second restore %v, first %v", got2, got)
		}
	})
}

func restored(t *testing.T, h hypervisor.Hypervisor) map[string]hypervisor.DomainState {
	t.Helper()
	list, err := h.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]hypervisor.DomainState{}
	for _, d := range list {
		out[d.Name] = d.State
	}
	return out
}

func equalStates(a, b map[string]hypervisor.DomainState) bool {
	if len(a) != len(b) {
		return false
	}
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if a[k] != b[k] {
			return false
		}
	}
	return true
}
