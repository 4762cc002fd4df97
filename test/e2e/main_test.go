package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/internal/proctest"
	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/store/etcd"
	"github.com/virtkit/virtkit/store/etcd/etcdtest"
)

// binary is the virtkit command built by TestMain ("" when -short).
var binary string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	flag.Parse()
	if !testing.Short() {
		bin, cleanup, err := proctest.BuildVirtkit("virtkit-e2e-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
		defer cleanup()
		binary = bin
	}
	return m.Run()
}

// proc is one virtkit process of the test.
type proc struct {
	name string
	args []string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error // valid after done is closed
}

// testCluster is the test's etcd, processes and a store client for checks.
type testCluster struct {
	t     testing.TB
	dir   string
	store string // the --store flag value
	st    *etcd.Store

	mu    sync.Mutex
	procs []*proc
}

func newCluster(t testing.TB) *testCluster {
	t.Helper()
	if binary == "" {
		t.Skip("end-to-end test skipped in -short mode")
	}
	endpoints := etcdtest.StartServer(t)
	st, err := etcd.New(t.Context(), etcd.Options{Endpoints: endpoints})
	require.NoError(t, err)
	c := &testCluster{t: t, dir: t.TempDir(), store: "etcd://" + strings.TrimPrefix(endpoints[0], "http://"), st: st}
	// Cleanups run last-in first-out: processes stop and the client
	// closes before the etcd server does.
	t.Cleanup(func() { _ = st.Close() })
	t.Cleanup(c.stopAll)
	t.Cleanup(func() {
		if t.Failed() {
			c.dumpLogs()
		}
	})
	return c
}

// start runs `virtkit args...` in the background, logging to a file.
func (c *testCluster) start(name string, args ...string) *proc {
	c.t.Helper()
	p := &proc{name: name, args: args, log: filepath.Join(c.dir, name+".log"), done: make(chan struct{})}
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(c.t, err)
	p.cmd = exec.Command(binary, args...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	require.NoError(c.t, p.cmd.Start(), "start %s", name)
	go func() {
		p.err = p.cmd.Wait()
		f.Close()
		close(p.done)
	}()
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	return p
}

// run runs `virtkit args...` to completion and returns its stdout.
func (c *testCluster) run(args ...string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(c.t, cmd.Run(), "virtkit %s: %s", strings.Join(args, " "), stderr.String())
	return stdout.String()
}

func (p *proc) kill9(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not die after SIGKILL", p.name)
	}
}

// term sends SIGTERM and waits for the process to exit; it returns the
// exit error.
func (p *proc) term(t *testing.T) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Errorf("%s did not stop within 30s of SIGTERM", p.name)
		return p.err
	}
}

// cpu is the CPU time the process used; valid once it exited.
func (p *proc) cpu() time.Duration {
	<-p.done
	if p.cmd.ProcessState == nil {
		return 0
	}
	return p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()
}

func (p *proc) logText() string {
	data, _ := os.ReadFile(p.log)
	return string(data)
}

func (c *testCluster) stopAll() {
	c.mu.Lock()
	procs := append([]*proc(nil), c.procs...)
	c.mu.Unlock()
	for _, p := range procs {
		select {
		case <-p.done:
			continue
		default:
		}
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

// dumpLogs prints the tail of every process's log.
func (c *testCluster) dumpLogs() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.procs {
		lines := strings.Split(strings.TrimRight(p.logText(), "\n"), "\n")
		if len(lines) > 150 {
			lines = lines[len(lines)-150:]
		}
		c.t.Logf("===== %s (virtkit %s), last %d lines:\n%s", p.name, strings.Join(p.args, " "), len(lines), strings.Join(lines, "\n"))
	}
}

// waitFor polls cond until it holds or the deadline passes; cond returns
// a description of the state for the failure message.
func (c *testCluster) waitFor(what string, timeout time.Duration, cond func() (bool, string)) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out after %v waiting for %s; last state: %s", timeout, what, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (c *testCluster) vms() []virtkit.VirtualMachine {
	c.t.Helper()
	l := &virtkit.VirtualMachineList{}
	require.NoError(c.t, c.st.List(c.t.Context(), l, store.ListOptions{}))
	return l.Items
}

func (c *testCluster) vmis() []virtkit.VirtualMachineInstance {
	c.t.Helper()
	l := &virtkit.VirtualMachineInstanceList{}
	require.NoError(c.t, c.st.List(c.t.Context(), l, store.ListOptions{}))
	return l.Items
}

func (c *testCluster) node(name string) *virtkit.Node {
	c.t.Helper()
	n := &virtkit.Node{}
	require.NoError(c.t, c.st.Get(c.t.Context(), store.Key{Name: name}, n))
	return n
}

// leader returns the identity of the controller replica that leads.
func (c *testCluster) leader(key string) string {
	c.t.Helper()
	resp, err := c.st.Client().Get(c.t.Context(), key+"/", clientv3.WithFirstCreate()...)
	require.NoError(c.t, err)
	if len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}

// getList runs `virtkit get KIND -o json -A` and decodes the List.
func getList[T any](c *testCluster, kind string) []T {
	c.t.Helper()
	out := c.run("get", kind, "-o", "json", "-A", "--store", c.store)
	var list struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Items      []T    `json:"items"`
	}
	require.NoError(c.t, json.Unmarshal([]byte(out), &list), "get %s -o json: %s", kind, out)
	require.Equal(c.t, "List", list.Kind)
	require.Equal(c.t, "v1", list.APIVersion)
	return list.Items
}

// logHas reports whether the process logged a line containing all parts.
func (p *proc) logHas(parts ...string) bool { return proctest.LogHas(p.logText(), parts...) }
