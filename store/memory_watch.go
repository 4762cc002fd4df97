package store

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/virtkit/virtkit"
)

// memWatcher is one Watch on the memory store. Writers append to queue under
// the store lock and never block; the watcher's own goroutine deep-copies and
// delivers, so slow consumers cost memory (bounded by limit), not latency.
type memWatcher struct {
	namespace string
	selector  labels.Selector
	// after skips events up to this version (a watch from a future version).
	after uint64
	// readOnly watchers receive the event's shared copy (WatchOptions.ReadOnly).
	readOnly bool
	limit    int
	wake     chan struct{}
	// indexed watchers select one label value (watcherSet.byLabel).
	indexed              bool
	indexKey, indexValue string

	mu      sync.Mutex
	queue   []memEvent
	expired bool
}

// push filters ev for this watcher and queues it. It returns false when the
// watcher is over its limit and has been marked expired.
func (w *memWatcher) push(ev memEvent) bool {
	typ, ok := w.translate(ev)
	if !ok {
		return true
	}
	ev.typ = typ
	w.mu.Lock()
	full := len(w.queue) >= w.limit
	if full {
		w.expired = true
	} else {
		w.queue = append(w.queue, ev)
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return !full
}

// translate applies namespace and label filters; label changes turn
// Modified into Added or Deleted for this watcher.
func (w *memWatcher) translate(ev memEvent) (EventType, bool) {
	if ev.rv <= w.after && ev.rv != 0 {
		return "", false
	}
	if w.namespace != "" && ev.obj.GetNamespace() != w.namespace {
		return "", false
	}
	if w.selector == nil {
		return ev.typ, true
	}
	now := Matches(ev.obj, "", w.selector)
	if ev.typ != Modified {
		return ev.typ, now
	}
	before := Matches(ev.old, "", w.selector)
	switch {
	case now && before:
		return Modified, true
	case now:
		return Added, true
	case before:
		return Deleted, true
	}
	return "", false
}

// Watch implements Store.
func (m *Memory) Watch(ctx context.Context, list virtkit.ObjectList, opts WatchOptions) (<-chan Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	kind, err := m.scheme.ListKind(list)
	if err != nil {
		return nil, err
	}
	var from uint64
	if opts.ResourceVersion != "" {
		if opts.SendInitialEvents {
			return nil, fmt.Errorf("%s watch: %w: resourceVersion: must be empty with sendInitialEvents", kind.Name, ErrInvalid)
		}
		from, err = strconv.ParseUint(opts.ResourceVersion, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s watch: %w: resourceVersion: %q is not a decimal version", kind.Name, ErrInvalid, opts.ResourceVersion)
		}
	}
	w := &memWatcher{
		after:    from,
		selector: opts.LabelSelector,
		readOnly: opts.ReadOnly,
		limit:    m.watchBuffer,
		wake:     make(chan struct{}, 1),
	}
	if !kind.ClusterScoped {
		w.namespace = opts.Namespace
	}

	m.mu.Lock()
	var initial []memEvent
	switch {
	case opts.SendInitialEvents:
		for _, obj := range m.objects[kind.Name] {
			if Matches(obj, w.namespace, w.selector) {
				initial = append(initial, memEvent{typ: Added, obj: obj})
			}
		}
	case opts.ResourceVersion != "":
		if from < m.compacted {
			m.mu.Unlock()
			return nil, fmt.Errorf("%s watch from resourceVersion %d (oldest available %d): %w", kind.Name, from, m.compacted, ErrExpired)
		}
		for _, ev := range m.history.after(from) {
			if ev.kind != kind.Name {
				continue
			}
			if typ, ok := w.translate(ev); ok {
				ev.typ = typ
				initial = append(initial, ev)
			}
		}
	}
	if m.watchers[kind.Name] == nil {
		m.watchers[kind.Name] = newWatcherSet()
	}
	m.watchers[kind.Name].add(w)
	m.mu.Unlock()
	sortEventsByKey(initial, opts.SendInitialEvents)

	out := make(chan Event)
	go m.serve(ctx, kind.Name, w, initial, out)
	return out, nil
}

// sortEventsByKey orders initial Added events by key, like List.
func sortEventsByKey(evs []memEvent, needed bool) {
	if !needed {
		return
	}
	sortByKey(evs, func(e memEvent) string { return KeyOf(e.obj).String() })
}

// serve delivers events to out until ctx ends or the watcher expires.
func (m *Memory) serve(ctx context.Context, kind string, w *memWatcher, batch []memEvent, out chan<- Event) {
	defer close(out)
	defer func() {
		m.mu.Lock()
		if ws := m.watchers[kind]; ws != nil {
			ws.remove(w)
		}
		m.mu.Unlock()
	}()
	for {
		for _, ev := range batch {
			select {
			case out <- Event{Type: ev.typ, Object: m.eventObject(w, ev)}:
			case <-ctx.Done():
				return
			}
		}
		w.mu.Lock()
		batch, w.queue = w.queue, nil
		expired := w.expired
		w.mu.Unlock()
		if len(batch) > 0 {
			continue
		}
		if expired {
			err := fmt.Errorf("%s watcher fell more than %d events behind: %w", kind, w.limit, ErrExpired)
			select {
			case out <- Event{Type: Error, Err: err}:
			case <-ctx.Done():
			}
			return
		}
		select {
		case <-w.wake:
		case <-ctx.Done():
			return
		}
	}
}
