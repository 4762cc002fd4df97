package store

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	"github.com/virtkit/virtkit"
)

// Default sizes of the memory store's bounded buffers.
const (
	DefaultHistorySize = 10000
	DefaultWatchBuffer = 10000
)

// Options configures NewMemoryWithOptions. The zero value is the default:
// virtkit's kinds, wall clock, DefaultHistorySize, DefaultWatchBuffer, no
// logging.
type Options struct {
	// Kinds are registered in addition to DefaultKinds.
	Kinds []Kind
	// Clock stamps creationTimestamp and deletionTimestamp; nil is the
	// real clock.
	Clock clock.PassiveClock
	// HistorySize is how many events are kept for watches resuming from a
	// resourceVersion; older versions get ErrExpired. 0 means
	// DefaultHistorySize.
	HistorySize int
	// WatchBuffer is how many events a watcher may be behind before it gets
	// an Error event wrapping ErrExpired and is closed. 0 means
	// DefaultWatchBuffer.
	WatchBuffer int
	// Logger receives debug messages about expired watchers; nil discards.
	Logger *slog.Logger
	// CheckReadOnlyEvents, for tests, fingerprints every object handed to
	// read-only watchers (WatchOptions.ReadOnly) so that
	// [Memory.ReadOnlyViolations] can report the ones a watcher changed.
	// It costs an encoding per shared object and keeps every fingerprint.
	CheckReadOnlyEvents bool
	// IDs draws the uids and generated names of created objects; nil is
	// RandomIDs. SeededIDs makes them repeat from run to run.
	IDs IDs
	// StartResourceVersion is the store's resourceVersion before its first
	// write (which gets the next one); 0 by default. A store served by a
	// Kubernetes generic API server (apiserver/kubestorage) starts at 1 or
	// more: Kubernetes reads resourceVersion 0 as "any version", so it
	// cannot name the state of a store nothing was written to yet.
	StartResourceVersion uint64
}

// Validate reports malformed options with the field name.
func (o Options) Validate() error {
	if o.HistorySize < 0 {
		return fmt.Errorf("historySize: %w: %d is negative", ErrInvalid, o.HistorySize)
	}
	if o.WatchBuffer < 0 {
		return fmt.Errorf("watchBuffer: %w: %d is negative", ErrInvalid, o.WatchBuffer)
	}
	return nil
}

// Memory is the embedded, in-process Store. Objects live in maps; every write
// takes one lock, bumps a store-wide resourceVersion and appends one event to
// a bounded history that watchers resume from.
//
// Every object it holds went through Create or Update (there is no import
// path for foreign bytes), so it never holds a corrupt value: it does not
// implement CorruptReporter and does not run storetest.RunCorrupt.
type Memory struct {
	scheme      *Scheme
	now         func() time.Time
	watchBuffer int
	log         *slog.Logger
	ids         IDs

	mu      sync.RWMutex
	rv      uint64
	objects map[string]map[Key]virtkit.Object // by kind name; values are never mutated
	history ring
	// compacted is the highest resourceVersion whose event is gone.
	compacted uint64
	watchers  map[string]*watcherSet
	// guard fingerprints shared event objects (Options.CheckReadOnlyEvents).
	guard *sharedGuard
}

var (
	_ Store        = (*Memory)(nil)
	_ StatusWriter = (*Memory)(nil)
	_ Compacter    = (*Memory)(nil)
)

// NewMemory returns a memory store with zero Options: it knows virtkit's kinds.
func NewMemory() *Memory {
	m, err := NewMemoryWithOptions(Options{})
	if err != nil {
		// DefaultKinds is a fixed, tested table.
		panic(fmt.Sprintf("store: default kinds: %v", err))
	}
	return m
}

// NewMemoryWithOptions returns a memory store configured by opts. It fails
// with ErrInvalid for bad options or kinds (duplicates included).
func NewMemoryWithOptions(opts Options) (*Memory, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	scheme, err := NewScheme(append(DefaultKinds(), opts.Kinds...)...)
	if err != nil {
		return nil, err
	}
	m := &Memory{
		scheme:      scheme,
		now:         time.Now,
		watchBuffer: opts.WatchBuffer,
		ids:         opts.IDs,
		log:         opts.Logger,
		objects:     map[string]map[Key]virtkit.Object{},
		watchers:    map[string]*watcherSet{},
		rv:          opts.StartResourceVersion,
		compacted:   opts.StartResourceVersion,
	}
	if opts.CheckReadOnlyEvents {
		m.guard = &sharedGuard{}
	}
	if opts.Clock != nil {
		m.now = opts.Clock.Now
	}
	if m.watchBuffer == 0 {
		m.watchBuffer = DefaultWatchBuffer
	}
	if m.log == nil {
		m.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	size := opts.HistorySize
	if size == 0 {
		size = DefaultHistorySize
	}
	m.history.buf = make([]memEvent, size)
	return m, nil
}

// Scheme returns the store's kind registry.
func (m *Memory) Scheme() *Scheme { return m.scheme }

// memEvent is one committed change. obj (and old, the previous state for
// Modified) are stored objects: shared and never mutated. shared, set on
// the events fanned out live (not those kept in history), holds the one
// copy of obj that every read-only watcher receives.
type memEvent struct {
	rv     uint64
	kind   string
	typ    EventType
	obj    virtkit.Object
	old    virtkit.Object
	shared *sharedCopy
}

// ring is a fixed-size FIFO of events in resourceVersion order.
type ring struct {
	buf   []memEvent
	start int
	n     int
}

// push appends ev and returns the evicted event, if any.
func (r *ring) push(ev memEvent) (memEvent, bool) {
	if len(r.buf) == 0 {
		return ev, true
	}
	if r.n < len(r.buf) {
		r.buf[(r.start+r.n)%len(r.buf)] = ev
		r.n++
		return memEvent{}, false
	}
	old := r.buf[r.start]
	r.buf[r.start] = ev
	r.start = (r.start + 1) % len(r.buf)
	return old, true
}

func (r *ring) at(i int) memEvent { return r.buf[(r.start+i)%len(r.buf)] }

// after returns the events with rv > v, in order.
func (r *ring) after(v uint64) []memEvent {
	i := sort.Search(r.n, func(i int) bool { return r.at(i).rv > v })
	out := make([]memEvent, 0, r.n-i)
	for ; i < r.n; i++ {
		out = append(out, r.at(i))
	}
	return out
}

func (r *ring) clear() {
	clear(r.buf)
	r.start, r.n = 0, 0
}

// commit stores obj (or removes it for Deleted), bumps the resourceVersion,
// records the event and fans it out. m.mu must be held for writing.
func (m *Memory) commit(kind string, key Key, typ EventType, obj, old virtkit.Object) {
	m.rv++
	obj.SetResourceVersion(strconv.FormatUint(m.rv, 10))
	objs := m.objects[kind]
	if objs == nil {
		objs = map[Key]virtkit.Object{}
		m.objects[kind] = objs
	}
	if typ == Deleted {
		delete(objs, key)
	} else {
		objs[key] = obj
	}
	ev := memEvent{rv: m.rv, kind: kind, typ: typ, obj: obj, old: old}
	if evicted, ok := m.history.push(ev); ok {
		m.compacted = evicted.rv
	}
	// The history keeps no copy: a shared copy lives only as long as a
	// watcher still has to deliver it.
	ev.shared = &sharedCopy{}
	if ws := m.watchers[kind]; ws != nil {
		ws.each(ev, func(w *memWatcher) bool {
			if w.push(ev) {
				return true
			}
			m.log.Debug("watcher fell behind; expired", "kind", kind, "buffer", m.watchBuffer)
			return false
		})
	}
}

func copyObject(obj virtkit.Object) virtkit.Object {
	return obj.DeepCopyObject().(virtkit.Object)
}

// Get implements Store.
func (m *Memory) Get(ctx context.Context, key Key, obj virtkit.Object) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	kind, err := m.scheme.KindOf(obj)
	if err != nil {
		return err
	}
	if err := CheckKey(kind, key); err != nil {
		return err
	}
	m.mu.RLock()
	stored, ok := m.objects[kind.Name][key]
	m.mu.RUnlock()
	if !ok {
		return fmt.Errorf("%s %s: %w", kind.Name, key, ErrNotFound)
	}
	// Stored objects are immutable, so copying outside the lock is safe.
	Into(obj, copyObject(stored))
	return nil
}

// List implements Store.
func (m *Memory) List(ctx context.Context, list virtkit.ObjectList, opts ListOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	kind, err := m.scheme.ListKind(list)
	if err != nil {
		return err
	}
	ns := opts.Namespace
	if kind.ClusterScoped {
		ns = ""
	}
	type item struct {
		sortKey string
		obj     virtkit.Object
	}
	m.mu.RLock()
	items := make([]item, 0, len(m.objects[kind.Name]))
	for key, obj := range m.objects[kind.Name] {
		if Matches(obj, ns, opts.LabelSelector) {
			items = append(items, item{sortKey: key.String(), obj: obj})
		}
	}
	rv := m.rv
	m.mu.RUnlock()
	sort.Slice(items, func(i, j int) bool { return items[i].sortKey < items[j].sortKey })
	objs := make([]runtime.Object, len(items))
	for i, it := range items {
		objs[i] = copyObject(it.obj)
	}
	if err := SetList(list, objs); err != nil {
		return fmt.Errorf("%s list: %w", kind.Name, err)
	}
	list.SetResourceVersion(strconv.FormatUint(rv, 10))
	list.SetContinue("")
	return nil
}

// Create implements Store.
func (m *Memory) Create(ctx context.Context, obj virtkit.Object) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for attempt := 0; ; attempt++ {
		next, kind, key, err := m.scheme.PrepareCreateWithIDs(obj, m.now(), m.ids)
		if err != nil {
			return err
		}
		if _, exists := m.objects[kind.Name][key]; exists {
			if obj.GetName() == "" && attempt < 8 {
				continue // generated name collided; draw another
			}
			return fmt.Errorf("%s %s: %w", kind.Name, key, ErrAlreadyExists)
		}
		m.commit(kind.Name, key, Added, next, nil)
		Into(obj, copyObject(next))
		return nil
	}
}

// Update implements Store.
func (m *Memory) Update(ctx context.Context, obj virtkit.Object) error {
	return m.update(ctx, obj, m.scheme.PrepareUpdate)
}

// UpdateStatus implements Store.
func (m *Memory) UpdateStatus(ctx context.Context, obj virtkit.Object) error {
	return m.update(ctx, obj, m.scheme.PrepareUpdateStatus)
}

func (m *Memory) update(ctx context.Context, obj virtkit.Object, prepare func(stored, obj virtkit.Object) (virtkit.Object, WriteOp, error)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	kind, key, err := m.scheme.ObjectKey(obj, false)
	if err != nil {
		return err
	}
	// Stored objects are never mutated, so the expensive part (copying and
	// comparing the object) runs outside the write lock; the lock only
	// checks that nothing was committed in between and commits.
	for {
		m.mu.RLock()
		stored, ok := m.objects[kind.Name][key]
		m.mu.RUnlock()
		if !ok {
			return fmt.Errorf("%s %s: %w", kind.Name, key, ErrNotFound)
		}
		next, op, err := prepare(stored, obj)
		if err != nil {
			return err
		}
		if op != WriteNone {
			m.mu.Lock()
			if m.objects[kind.Name][key] != stored {
				// Another write won; prepare again against it (which
				// reports the conflict if obj was based on the old one).
				m.mu.Unlock()
				continue
			}
			switch op {
			case WritePut:
				m.commit(kind.Name, key, Modified, next, stored)
			case WriteRemove:
				m.commit(kind.Name, key, Deleted, next, stored)
			}
			m.mu.Unlock()
		}
		Into(obj, copyObject(next))
		return nil
	}
}

// Delete implements Store.
func (m *Memory) Delete(ctx context.Context, obj virtkit.Object, opts DeleteOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	kind, key, err := m.scheme.ObjectKey(obj, false)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	stored, ok := m.objects[kind.Name][key]
	if !ok {
		return fmt.Errorf("%s %s: %w", kind.Name, key, ErrNotFound)
	}
	next, op, err := m.scheme.PrepareDelete(stored, opts, m.now())
	if err != nil {
		return err
	}
	switch op {
	case WritePut:
		m.commit(kind.Name, key, Modified, next, stored)
	case WriteRemove:
		next = copyObject(stored) // the Deleted event carries the deletion's version
		m.commit(kind.Name, key, Deleted, next, stored)
	}
	Into(obj, copyObject(next))
	return nil
}

// Compact drops the event history: a Watch from any resourceVersion before
// now fails with ErrExpired.
func (m *Memory) Compact(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.history.clear()
	m.compacted = m.rv
	return nil
}

// UpdateWithStatus implements StatusWriter.
func (m *Memory) UpdateWithStatus(ctx context.Context, obj virtkit.Object) error {
	return m.update(ctx, obj, m.scheme.PrepareUpdateWithStatus)
}
