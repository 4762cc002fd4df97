package simulation

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

// writeTurns makes the components' store writes of one virtual instant
// take turns in an order that does not depend on the Go scheduler. A
// component's write (through the fault store) parks until it is granted a
// turn; the harness grants one only when the cluster has settled (every
// goroutine blocked, so every write the instant has produced so far is
// parked), picks the least by a canonical key (the object, the verb, the
// writer, the body), and settles again (the write's watch events fan out,
// the components react and park their next writes) before the next turn.
// Two components acting on one object at one instant (the garbage
// collector and the VM controller deleting a VMI, two writers of one
// status) then go in the same order on every run, and a write conflicts,
// or not, the same way.
//
// Writes of the simulation's own calls (the user's operations, the
// invariants) never park: the goroutine that grants turns makes them.
type writeTurns struct {
	// on is set once the cluster is built: cluster.New writes its
	// defaults from the caller's goroutine, one at a time, before any
	// component runs (and before anything grants turns).
	on atomic.Bool
	// salt is the seed: the order of the turns is the keys' order after
	// hashing them with it, so every seed goes through the writes of an
	// instant in an order of its own (the interleavings a run explores
	// still vary from seed to seed) and every run of a seed in the same.
	salt uint64

	mu     sync.Mutex
	parked []*turn
	// held stops the turns for a while (an agent crashing: see
	// Harness.crashAgent).
	held bool
	// granted and ties count turns given and turns given with another
	// parked write of the same key (which of the two goes first is then
	// left to arrival order: a remaining source of nondeterminism).
	granted, ties int
}

// turn is one parked write.
type turn struct {
	key   string
	rank  uint64 // the key hashed with the salt
	grant chan struct{}
}

// wait parks a write under key until it is granted a turn, or until its
// writer's agent dies, the harness stops, or ctx ends.
func (w *writeTurns) wait(ctx context.Context, key string, stopped <-chan struct{}) error {
	if !w.on.Load() {
		return nil
	}
	t := &turn{key: key, rank: w.rank(key), grant: make(chan struct{})}
	w.mu.Lock()
	w.parked = append(w.parked, t)
	w.mu.Unlock()
	var err error
	select {
	case <-t.grant:
		return nil
	case <-stopped:
		err = ErrStopped
	case <-gone(ctx):
		err = ErrAgentDead
	case <-ctx.Done():
		err = ctx.Err()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, p := range w.parked {
		if p == t {
			w.parked = append(w.parked[:i], w.parked[i+1:]...)
			break
		}
	}
	return err
}

// grantNext lets the parked write with the least key go; it reports
// whether there was one.
func (w *writeTurns) grantNext() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.parked) == 0 || w.held {
		return false
	}
	best := 0
	for i, p := range w.parked[1:] {
		if b := w.parked[best]; p.rank < b.rank || (p.rank == b.rank && p.key < b.key) {
			best = i + 1
		}
	}
	t := w.parked[best]
	for i, p := range w.parked {
		if i != best && p.key == t.key {
			w.ties++
			break
		}
	}
	w.parked = append(w.parked[:best], w.parked[best+1:]...)
	w.granted++
	close(t.grant)
	return true
}

// hold stops granting turns (on) or lets them go again (off).
func (w *writeTurns) hold(on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.held = on
}

// rank hashes key with the salt.
func (w *writeTurns) rank(key string) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], w.salt)
	_, _ = h.Write(b[:])
	_, _ = h.Write([]byte(key))
	return h.Sum64()
}

// pending is how many writes are parked.
func (w *writeTurns) pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.parked)
}

// stats reports the turns granted and the ties among them.
func (w *writeTurns) stats() (granted, ties int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.granted, w.ties
}

// turnKey is the canonical key of one write: the object (kind,
// namespace, name), the verb, the writer (its node, for a node agent's
// write, then a fingerprint of the code path that made it: which
// component, which call), then a hash of the body. Everything in it is
// the same on every run of a seed; none of it is arrival order.
func turnKey(ctx context.Context, verb string, obj virtkit.Object) string {
	node := ""
	if l, _ := ctx.Value(deadKey{}).(*nodeLink); l != nil {
		node = l.name
	}
	body := fnv.New64a()
	if js, err := json.Marshal(obj); err == nil {
		_, _ = body.Write(js)
	}
	return fmt.Sprintf("%T\x00%s\x00%s\x00%s\x00%s\x00%016x\x00%016x", obj, obj.GetNamespace(), obj.GetName(),
		verb, node, writerPath(), body.Sum64())
}

// writerPath fingerprints the calling goroutine's stack by function and
// line: the same code path gives the same value on every run (and in
// every build of the same source), two components give different ones.
func writerPath() uint64 {
	var pcs [64]uintptr
	n := runtime.Callers(3, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	h := fnv.New64a()
	for {
		f, more := frames.Next()
		fmt.Fprintf(h, "%s:%d\n", f.Function, f.Line)
		if !more {
			break
		}
	}
	return h.Sum64()
}

// timerSite keys a timer by the call path that schedules it (function and
// line of every frame, as writerPath does), for the virtual clock's
// tie-break ([sim.VirtualClock.SetTieBreak]): timers that concurrent
// goroutines set for one instant (a migration's progress ticker and its
// engine's first poll, started together) then fire in the same order on
// every run, not in the order the goroutines got to the clock. Timers set
// on one path (two nodes' heartbeats) keep their scheduling order among
// themselves. The frames' names are looked up once per program counter.
func timerSite() uint64 {
	var pcs [48]uintptr
	n := runtime.Callers(2, pcs[:])
	h := fnv.New64a()
	var b [8]byte
	for _, pc := range pcs[:n] {
		binary.LittleEndian.PutUint64(b[:], framesKey(pc))
		_, _ = h.Write(b[:])
	}
	return h.Sum64()
}

// frameKeys caches framesKey: program counter to the hash of its frames.
var frameKeys sync.Map

// framesKey hashes the function and line (inlined frames included) of one
// return address, the same in every build of the same source.
func framesKey(pc uintptr) uint64 {
	if k, ok := frameKeys.Load(pc); ok {
		return k.(uint64)
	}
	h := fnv.New64a()
	frames := runtime.CallersFrames([]uintptr{pc})
	for {
		f, more := frames.Next()
		fmt.Fprintf(h, "%s:%d\n", f.Function, f.Line)
		if !more {
			break
		}
	}
	k := h.Sum64()
	frameKeys.Store(pc, k)
	return k
}

// turnClock is the cluster's clock in a harness: the virtual clock, with
// the write turns taken between its instants. cluster.Cluster steps it one
// timer at a time once the cluster has settled ([cluster.Cluster.Settle],
// [cluster.Cluster.Advance]); each step first fires a timer due now, else
// grants the next parked write, and only when neither is left moves the
// clock on. Timers due at one instant thus all fire (their writes park)
// before the writes take their turns, so the order in which the timers
// were set (which goroutine got there first) does not decide the order of
// the writes.
type turnClock struct {
	*sim.VirtualClock
	turns *writeTurns
}

// StepOne fires a timer due now, or grants the next parked write, or
// steps the virtual clock towards limit.
func (c *turnClock) StepOne(limit time.Time) bool {
	if c.VirtualClock.StepOne(c.Now()) || c.turns.grantNext() {
		return true
	}
	return c.VirtualClock.StepOne(limit)
}

// Step is StepOne for a caller that steps whole instants (an unseeded
// cluster): what is due now, then the parked writes, then the next
// instant.
func (c *turnClock) Step(limit time.Time) bool {
	if c.VirtualClock.Step(c.Now()) || c.turns.grantNext() {
		return true
	}
	return c.VirtualClock.Step(limit)
}
