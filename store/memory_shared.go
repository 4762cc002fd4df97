package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/virtkit/virtkit"
)

// ErrReadOnlyViolated is wrapped by [Memory.ReadOnlyViolations] when a
// read-only watcher changed an object it shares with the others.
var ErrReadOnlyViolated = errors.New("shared watch event object was modified")

// sharedCopy is the one deep copy of a committed object handed to every
// read-only watcher of the event, made by the first one to deliver it.
type sharedCopy struct {
	once sync.Once
	obj  virtkit.Object
}

// eventObject is what watcher w delivers for ev: the event's shared copy
// for a read-only watcher, its own deep copy otherwise (and for events
// replayed from history or initial state, which carry no shared copy).
func (m *Memory) eventObject(w *memWatcher, ev memEvent) virtkit.Object {
	if !w.readOnly || ev.shared == nil {
		return copyObject(ev.obj)
	}
	sc := ev.shared
	sc.once.Do(func() {
		sc.obj = copyObject(ev.obj)
		if m.guard != nil {
			m.guard.record(sc.obj)
		}
	})
	return sc.obj
}

// sharedGuard remembers an encoding of every shared event object as it was
// handed out.
type sharedGuard struct {
	mu      sync.Mutex
	entries []guardEntry
}

type guardEntry struct {
	obj  virtkit.Object
	data []byte
}

func (g *sharedGuard) record(obj virtkit.Object) {
	data, err := json.Marshal(obj)
	if err != nil {
		return // every registered kind encodes; nothing to compare against
	}
	g.mu.Lock()
	g.entries = append(g.entries, guardEntry{obj: obj, data: data})
	g.mu.Unlock()
}

// ReadOnlyViolations reports, with Options.CheckReadOnlyEvents, the shared
// watch event objects that differ from what the store handed out: a
// read-only watcher modified them. The error wraps ErrReadOnlyViolated and
// names up to five objects; nil when none changed or the check is off.
func (m *Memory) ReadOnlyViolations() error {
	if m.guard == nil {
		return nil
	}
	m.guard.mu.Lock()
	entries := m.guard.entries
	m.guard.mu.Unlock()
	var bad []string
	n := 0
	for _, e := range entries {
		data, err := json.Marshal(e.obj)
		if err == nil && bytes.Equal(data, e.data) {
			continue
		}
		n++
		if len(bad) < 5 {
			bad = append(bad, fmt.Sprintf("%T %s at resourceVersion %s", e.obj, KeyOf(e.obj), e.obj.GetResourceVersion()))
		}
	}
	if n == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d shared objects (%s): %w", n, len(entries), strings.Join(bad, ", "), ErrReadOnlyViolated)
}
