package simulation

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/internal/seeded"
	"github.com/virtkit/virtkit/store"
)

// ErrPartitioned is what a partitioned node's store calls fail with.
var ErrPartitioned = errors.New("simulated partition from the store")

// userKey marks the simulation's own calls (the user's operations and the
// invariant checks): the fault store lets them through untouched.
type userKey struct{}

func asUser(ctx context.Context) context.Context { return context.WithValue(ctx, userKey{}, true) }

func isUser(ctx context.Context) bool { v, _ := ctx.Value(userKey{}).(bool); return v }

// scheduledKey marks a user's calls that run in the background alongside
// the components (a drain): no faults, but their writes take turns with
// the components' (writeTurns).
type scheduledKey struct{}

// asScheduledUser marks ctx's writes as a background user's.
func asScheduledUser(ctx context.Context) context.Context {
	return context.WithValue(ctx, scheduledKey{}, true)
}

func isScheduled(ctx context.Context) bool { v, _ := ctx.Value(scheduledKey{}).(bool); return v }

// faultStore wraps the cluster's store for every component: it can fail
// updates with ErrConflict (as if another writer had won) and delay writes
// on the virtual clock, and it makes the writes take turns (writeTurns).
// A conflict is decided once the write has its turn, by hashing the seed,
// the write (verb, key and the object as JSON without resourceVersions)
// and how many times that very write was tried before, so the decision
// does not depend on which goroutine reaches the store first, and a
// writer that retries after a conflict is not refused forever.
type faultStore struct {
	store.Store
	seed  int64
	clk   clock.WithTicker
	turns *writeTurns

	mu          sync.Mutex
	conflictPct int
	latency     time.Duration
	writes      map[[32]byte]int

	// stopped ends every delay under way and refuses later ones: a
	// harness closing no longer moves virtual time, so a write delayed on
	// it would wait for good.
	stopped  chan struct{}
	stopOnce sync.Once
}

// ErrStopped is what a component's store calls fail with once the
// harness is closing.
var ErrStopped = errors.New("simulation stopped")

// stop ends the delays under way and refuses later ones.
func (f *faultStore) stop() { f.stopOnce.Do(func() { close(f.stopped) }) }

func newFaultStore(st store.Store, seed int64, clk clock.WithTicker) *faultStore {
	return &faultStore{Store: st, seed: seed, clk: clk, turns: &writeTurns{salt: uint64(seed)}, writes: map[[32]byte]int{}, stopped: make(chan struct{})}
}

func (f *faultStore) setConflicts(pct int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.conflictPct = pct
}

func (f *faultStore) setLatency(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.latency = d
}

// before runs the faults of one write: a delay, then its turn, then maybe
// a conflict. A user's write goes straight through; a background user's
// (isScheduled) only takes its turn.
func (f *faultStore) before(ctx context.Context, verb string, obj virtkit.Object, mayConflict bool) error {
	faults := !isUser(ctx)
	if !faults && !isScheduled(ctx) {
		return nil
	}
	select {
	case <-f.stopped:
		return ErrStopped
	default:
	}
	f.mu.Lock()
	lat := f.latency
	f.mu.Unlock()
	if faults && lat > 0 {
		t := f.clk.NewTimer(lat)
		select {
		case <-t.C():
		case <-f.stopped:
			t.Stop()
			return ErrStopped
		case <-gone(ctx):
			t.Stop()
			return ErrAgentDead
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	if err := f.turns.wait(ctx, turnKey(ctx, verb, obj), f.stopped); err != nil {
		return err
	}
	f.mu.Lock()
	pct := f.conflictPct
	f.mu.Unlock()
	if faults && mayConflict && pct > 0 {
		id := fmt.Sprintf("%T/%s/%s", obj, obj.GetNamespace(), obj.GetName())
		js, err := canonicalJSON(obj)
		if err != nil {
			return err
		}
		write := seeded.Key(f.seed, verb, id, js)
		f.mu.Lock()
		n := f.writes[write]
		f.writes[write] = n + 1
		f.mu.Unlock()
		k := seeded.Key(f.seed, "conflict", string(write[:]), fmt.Sprint(n))
		if int(k[0])%100 < pct {
			return fmt.Errorf("%s %s: %w (injected)", verb, id, store.ErrConflict)
		}
	}
	return nil
}

func (f *faultStore) Create(ctx context.Context, obj virtkit.Object) error {
	if err := f.before(ctx, "create", obj, false); err != nil {
		return err
	}
	return f.Store.Create(ctx, obj)
}

func (f *faultStore) Update(ctx context.Context, obj virtkit.Object) error {
	if err := f.before(ctx, "update", obj, true); err != nil {
		return err
	}
	return f.Store.Update(ctx, obj)
}

func (f *faultStore) UpdateStatus(ctx context.Context, obj virtkit.Object) error {
	if err := f.before(ctx, "update status", obj, true); err != nil {
		return err
	}
	return f.Store.UpdateStatus(ctx, obj)
}

// UpdateWithStatus keeps the wrapped store's one-write path.
func (f *faultStore) UpdateWithStatus(ctx context.Context, obj virtkit.Object) error {
	if err := f.before(ctx, "update with status", obj, true); err != nil {
		return err
	}
	return store.UpdateWithStatus(ctx, f.Store, obj)
}

func (f *faultStore) Delete(ctx context.Context, obj virtkit.Object, opts store.DeleteOptions) error {
	if err := f.before(ctx, "delete", obj, false); err != nil {
		return err
	}
	return f.Store.Delete(ctx, obj, opts)
}

// linkMode is the state of one node's link to the store.
type linkMode int

const (
	linkUp linkMode = iota
	// linkPartitioned: every call fails with ErrPartitioned at once.
	linkPartitioned
	// linkFrozen: every call hangs until the node thaws (or its context
	// ends), as a frozen host's agent would.
	linkFrozen
)

// nodeLink is one node agent's view of the store: up, partitioned or
// frozen. Watches already open keep delivering (a partition that cuts
// requests but not a long-lived stream); new ones obey the mode.
type nodeLink struct {
	store.Store
	// name is the node's: it orders the agent's writes (turnKey).
	name string
	mu   sync.Mutex
	mode linkMode
	thaw chan struct{}
	// stopped is the fault store's: a frozen call ends when the harness
	// closes.
	stopped <-chan struct{}
	// dead is closed while the node's agent is crashed: its process is
	// gone, so a call it had under way (frozen, or delayed by the fault
	// store) never lands, and a new one fails at once.
	dead   chan struct{}
	killed bool
}

// ErrAgentDead is what a store call of a crashed agent fails with: the
// process that made it is gone.
var ErrAgentDead = errors.New("simulated agent process is gone")

// deadKey carries a node link's dead channel to the fault store, so a
// write it delays ends with the process that made it.
type deadKey struct{}

// kill marks the agent's process gone: calls under way end, new ones fail.
func (l *nodeLink) kill() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.killed {
		l.killed = true
		close(l.dead)
	}
}

// revive lets a restarted agent's calls through again.
func (l *nodeLink) revive() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.killed {
		l.killed = false
		l.dead = make(chan struct{})
	}
}

func newNodeLink(name string, f *faultStore) *nodeLink {
	return &nodeLink{Store: f, name: name, stopped: f.stopped, dead: make(chan struct{})}
}

func (l *nodeLink) set(m linkMode) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mode == linkFrozen && m != linkFrozen {
		close(l.thaw)
	}
	if m == linkFrozen && l.mode != linkFrozen {
		l.thaw = make(chan struct{})
	}
	l.mode = m
}

// up reports whether the node reaches the store.
func (l *nodeLink) up() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mode == linkUp
}

// slow reports whether writes are delayed.
func (f *faultStore) slow() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.latency > 0
}

// gate applies the link's mode to one call and returns the context the
// call goes on with (carrying the dead channel of the agent making it).
func (l *nodeLink) gate(ctx context.Context) (context.Context, error) {
	l.mu.Lock()
	mode, thaw, dead, killed := l.mode, l.thaw, l.dead, l.killed
	l.mu.Unlock()
	if killed {
		return ctx, ErrAgentDead
	}
	switch mode {
	case linkPartitioned:
		return ctx, ErrPartitioned
	case linkFrozen:
		select {
		case <-thaw:
		case <-dead:
			return ctx, ErrAgentDead
		case <-l.stopped:
			return ctx, ErrStopped
		case <-ctx.Done():
			return ctx, ctx.Err()
		}
	}
	return context.WithValue(ctx, deadKey{}, l), nil
}

// gone returns the channel closed when the agent of the link carried by
// ctx crashes (nil, which never fires, for a call not made by an agent).
func gone(ctx context.Context) <-chan struct{} {
	l, _ := ctx.Value(deadKey{}).(*nodeLink)
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dead
}

func (l *nodeLink) Get(ctx context.Context, key store.Key, obj virtkit.Object) error {
	ctx, err := l.gate(ctx)
	if err != nil {
		return err
	}
	return l.Store.Get(ctx, key, obj)
}

func (l *nodeLink) List(ctx context.Context, list virtkit.ObjectList, opts store.ListOptions) error {
	ctx, err := l.gate(ctx)
	if err != nil {
		return err
	}
	return l.Store.List(ctx, list, opts)
}

func (l *nodeLink) Create(ctx context.Context, obj virtkit.Object) error {
	ctx, err := l.gate(ctx)
	if err != nil {
		return err
	}
	return l.Store.Create(ctx, obj)
}

func (l *nodeLink) Update(ctx context.Context, obj virtkit.Object) error {
	ctx, err := l.gate(ctx)
	if err != nil {
		return err
	}
	return l.Store.Update(ctx, obj)
}

func (l *nodeLink) UpdateStatus(ctx context.Context, obj virtkit.Object) error {
	ctx, err := l.gate(ctx)
	if err != nil {
		return err
	}
	return l.Store.UpdateStatus(ctx, obj)
}

func (l *nodeLink) UpdateWithStatus(ctx context.Context, obj virtkit.Object) error {
	ctx, err := l.gate(ctx)
	if err != nil {
		return err
	}
	return store.UpdateWithStatus(ctx, l.Store, obj)
}

func (l *nodeLink) Delete(ctx context.Context, obj virtkit.Object, opts store.DeleteOptions) error {
	ctx, err := l.gate(ctx)
	if err != nil {
		return err
	}
	return l.Store.Delete(ctx, obj, opts)
}

func (l *nodeLink) Watch(ctx context.Context, list virtkit.ObjectList, opts store.WatchOptions) (<-chan store.Event, error) {
	ctx, err := l.gate(ctx)
	if err != nil {
		return nil, err
	}
	return l.Store.Watch(ctx, list, opts)
}
