package corev1

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// historyLength bounds the changes a history keeps: a watch resumed from
// a resourceVersion older than the oldest change kept that needs it is
// told its version is too old (410 Gone), and relists, as with
// kube-apiserver's watch cache.
const historyLength = 4096

// errHistory is why a resumed watch ends with 410 Gone.
var errHistory = fmt.Errorf("%w: the view's history does not reach back that far", store.ErrExpired)

// history remembers, for the latest changes of a view's source objects
// (the VMIs of the pods, the Nodes, DataVolumes and Events of the core
// Nodes, claims and Events), what the view derived from each object
// before the change.
// A watch resumed from a resourceVersion R gets the source objects'
// changes after R from the store, each with its new state only; the
// objects derived from the state at R, which the client holds, are
// derived from the object before its first change after R, which the
// history has. Without it, a pod that was derived at R and is not any
// more (the source pod of a migration that completed after R) would never
// be reported deleted, nor an object that matched the watch's selector
// at R and stopped matching since (a Node cordoned after R, watched with
// spec.unschedulable=false; a claim bound after R, watched with
// status.phase=Pending).
type history struct {
	st     store.Store
	view   *view
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	started bool
	// floor: the history knows the derived objects at every version from
	// floor on; at: the last version it has processed.
	floor, at uint64
	// advanced is closed, and replaced, whenever at moves or the history
	// restarts.
	advanced chan struct{}
	// last holds the objects derived from each source object's latest
	// state, by source key.
	last map[string][]runtime.Object
	// log holds the latest changes in version order.
	log []change
}

// change is one change of a source object: its version, its key and what
// it derived before.
type change struct {
	rv     uint64
	key    string
	before []runtime.Object
}

func newHistory(st store.Store, v *view) *history {
	ctx, cancel := context.WithCancel(context.Background())
	return &history{st: st, view: v, ctx: ctx, cancel: cancel, advanced: make(chan struct{})}
}

// stop ends the history's watch.
func (h *history) stop() { h.cancel() }

// ensure starts the history if it has not started: it lists the source
// objects (with ctx, the request's) and watches from that list on (with
// the history's own context, until stop). A list or watch served after
// ensure returns has a version the history covers.
func (h *history) ensure(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.started {
		return nil
	}
	events, err := h.restart(ctx)
	if err != nil {
		return err
	}
	h.started = true
	go h.run(events)
	return nil
}

// restart lists the source objects and watches from there; h.mu is held.
func (h *history) restart(ctx context.Context) (<-chan store.Event, error) {
	list := h.view.newSourceList()
	if err := h.st.List(ctx, list, store.ListOptions{}); err != nil {
		return nil, err
	}
	rv, err := strconv.ParseUint(list.GetResourceVersion(), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: list resourceVersion %q: %w", store.ErrInvalid, list.GetResourceVersion(), err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	events, err := h.st.Watch(h.ctx, h.view.newSourceList(), store.WatchOptions{ResourceVersion: list.GetResourceVersion(), ReadOnly: true})
	if err != nil {
		return nil, err
	}
	h.last = map[string][]runtime.Object{}
	for _, it := range items {
		if o, ok := it.(virtkit.Object); ok {
			if d := h.view.derive(o); len(d) > 0 {
				h.last[o.GetNamespace()+"/"+o.GetName()] = d
			}
		}
	}
	h.floor, h.at, h.log = rv, rv, nil
	h.wake()
	return events, nil
}

// wake tells the waiters that the history moved; h.mu is held.
func (h *history) wake() {
	close(h.advanced)
	h.advanced = make(chan struct{})
}

// run records the changes until the history stops; a watch the store ends
// (a slow consumer, a compaction) restarts the history from a new list.
func (h *history) run(events <-chan store.Event) {
	for {
		for e := range events {
			if e.Type == store.Error {
				break
			}
			h.record(e)
		}
		for {
			if h.ctx.Err() != nil {
				return
			}
			h.mu.Lock()
			var err error
			events, err = h.restart(h.ctx)
			h.mu.Unlock()
			if err == nil {
				break
			}
			select { // the store is unavailable: try again shortly
			case <-h.ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

func (h *history) record(e store.Event) {
	rv, err := strconv.ParseUint(e.Object.GetResourceVersion(), 10, 64)
	if err != nil {
		return
	}
	k := e.Object.GetNamespace() + "/" + e.Object.GetName()
	var now []runtime.Object
	if e.Type != store.Deleted {
		now = h.view.derive(e.Object)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if rv <= h.at {
		return
	}
	h.log = append(h.log, change{rv: rv, key: k, before: h.last[k]})
	if n := len(h.log) - historyLength; n > 0 {
		h.floor = h.log[n-1].rv
		h.log = append(h.log[:0:0], h.log[n:]...)
	}
	if len(now) > 0 {
		h.last[k] = now
	} else {
		delete(h.last, k)
	}
	h.at = rv
	h.wake()
}

// before returns what the source object of key derived before its change
// at version rv: what a client watching from a version before rv, when
// that change is the first it sees of the object, holds of it. It waits
// for the history to reach rv; an error wrapping store.ErrExpired when
// the history no longer has the change.
func (h *history) before(ctx context.Context, key string, rv uint64) ([]runtime.Object, error) {
	for {
		h.mu.Lock()
		if !h.started {
			h.mu.Unlock()
			return nil, errHistory
		}
		if h.at >= rv {
			defer h.mu.Unlock()
			if rv <= h.floor {
				return nil, errHistory
			}
			for i := len(h.log) - 1; i >= 0 && h.log[i].rv >= rv; i-- {
				if c := h.log[i]; c.rv == rv && c.key == key {
					return c.before, nil
				}
			}
			return nil, errHistory
		}
		wait := h.advanced
		h.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-h.ctx.Done():
			return nil, errors.Join(errHistory, h.ctx.Err())
		}
	}
}
