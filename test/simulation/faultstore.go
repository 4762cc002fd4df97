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

// faultStore wraps the cluster's store for every component: it can fail
// updates with ErrConflict (as if another writer had won) and delay writes
// on the virtual clock. A conflict is decided by hashing the seed, the
// write (verb, key and the object as JSON without resourceVersions) and
// how many times that very write was tried before, so the decision does
// not depend on which goroutine reaches the store first, and a writer
// that retries after a conflict is not refused forever.
type faultStore struct {
	store.Store
	seed int64
	clk  clock.WithTicker

	mu          sync.Mutex
	conflictPct int
	latency     time.Duration
	writes      map[[32]byte]int
}

func newFaultStore(st store.Store, seed int64, clk clock.WithTicker) *faultStore {
	return &faultStore{Store: st, seed: seed, clk: clk, writes: map[[32]byte]int{}}
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

// before runs the faults of one write: a delay, then maybe a conflict.
func (f *faultStore) before(ctx context.Context, verb string, obj virtkit.Object, mayConflict bool) error {
	if isUser(ctx) {
		return nil
	}
	f.mu.Lock()
	pct, lat := f.conflictPct, f.latency
	f.mu.Unlock()
	if lat > 0 {
		t := f.clk.NewTimer(lat)
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	if mayConflict && pct > 0 {
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
	mu   sync.Mutex
	mode linkMode
	thaw chan struct{}
}

func newNodeLink(st store.Store) *nodeLink { return &nodeLink{Store: st} }

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

func (l *nodeLink) gate(ctx context.Context) error {
	l.mu.Lock()
	mode, thaw := l.mode, l.thaw
	l.mu.Unlock()
	switch mode {
	case linkPartitioned:
		return ErrPartitioned
	case linkFrozen:
		select {
		case <-thaw:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (l *nodeLink) Get(ctx context.Context, key store.Key, obj virtkit.Object) error {
	if err := l.gate(ctx); err != nil {
		return err
	}
	return l.Store.Get(ctx, key, obj)
}

func (l *nodeLink) List(ctx context.Context, list virtkit.ObjectList, opts store.ListOptions) error {
	if err := l.gate(ctx); err != nil {
		return err
	}
	return l.Store.List(ctx, list, opts)
}

func (l *nodeLink) Create(ctx context.Context, obj virtkit.Object) error {
	if err := l.gate(ctx); err != nil {
		return err
	}
	return l.Store.Create(ctx, obj)
}

func (l *nodeLink) Update(ctx context.Context, obj virtkit.Object) error {
	if err := l.gate(ctx); err != nil {
		return err
	}
	return l.Store.Update(ctx, obj)
}

func (l *nodeLink) UpdateStatus(ctx context.Context, obj virtkit.Object) error {
	if err := l.gate(ctx); err != nil {
		return err
	}
	return l.Store.UpdateStatus(ctx, obj)
}

func (l *nodeLink) UpdateWithStatus(ctx context.Context, obj virtkit.Object) error {
	if err := l.gate(ctx); err != nil {
		return err
	}
	return store.UpdateWithStatus(ctx, l.Store, obj)
}

func (l *nodeLink) Delete(ctx context.Context, obj virtkit.Object, opts store.DeleteOptions) error {
	if err := l.gate(ctx); err != nil {
		return err
	}
	return l.Store.Delete(ctx, obj, opts)
}

func (l *nodeLink) Watch(ctx context.Context, list virtkit.ObjectList, opts store.WatchOptions) (<-chan store.Event, error) {
	if err := l.gate(ctx); err != nil {
		return nil, err
	}
	return l.Store.Watch(ctx, list, opts)
}
