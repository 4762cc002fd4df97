package etcd

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// Watch implements store.Store with an etcd watch on the kind's (or
// namespace's) key prefix from the revision after opts.ResourceVersion.
func (s *Store) Watch(ctx context.Context, list virtkit.ObjectList, opts store.WatchOptions) (<-chan store.Event, error) {
	kind, err := s.scheme.ListKind(list)
	if err != nil {
		return nil, err
	}
	prefix := s.listPrefix(kind, opts.Namespace)
	sel := opts.LabelSelector

	var start int64
	var initial []store.Event
	switch {
	case opts.SendInitialEvents:
		if opts.ResourceVersion != "" {
			return nil, fmt.Errorf("%s watch: %w: resourceVersion: must be empty with sendInitialEvents", kind.Name, store.ErrInvalid)
		}
		objs, rev, err := s.list(ctx, kind, prefix, func(o virtkit.Object) bool { return store.Matches(o, "", sel) })
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			initial = append(initial, store.Event{Type: store.Added, Object: o})
		}
		start = rev + 1
	case opts.ResourceVersion != "":
		from, err := strconv.ParseInt(opts.ResourceVersion, 10, 64)
		if err != nil || from < 0 {
			return nil, fmt.Errorf("%s watch: %w: resourceVersion: %q is not a decimal version", kind.Name, store.ErrInvalid, opts.ResourceVersion)
		}
		// Reading one key at the revision tells whether etcd still has it,
		// so a compacted start fails here rather than inside the watch.
		_, err = s.client.Get(ctx, prefix, clientv3.WithRev(max(from, 1)), clientv3.WithCountOnly())
		switch {
		case errors.Is(err, rpctypes.ErrCompacted):
			return nil, fmt.Errorf("%s watch from resourceVersion %d: %w: %w", kind.Name, from, store.ErrExpired, err)
		case errors.Is(err, rpctypes.ErrFutureRev):
			// Not written yet; the watch waits for it.
		case err != nil:
			return nil, fmt.Errorf("%s watch: etcd get: %w", kind.Name, err)
		}
		start = from + 1
	default:
		resp, err := s.client.Get(ctx, prefix, clientv3.WithCountOnly())
		if err != nil {
			return nil, fmt.Errorf("%s watch: etcd get: %w", kind.Name, err)
		}
		start = resp.Header.Revision + 1
	}

	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	wopts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithRev(start)}
	w := &watcher{s: s, kind: kind, selector: sel, readOnly: opts.ReadOnly, prevKV: needsPrevKV(opts)}
	if w.prevKV {
		wopts = append(wopts, clientv3.WithPrevKV())
	} else {
		w.corrupt = s.knownCorrupt(s.kindPrefix(kind))
	}
	wch := s.client.Watch(wctx, prefix, wopts...)
	out := make(chan store.Event, s.watchBuffer)
	w.out = out
	go func() {
		defer close(out)
		defer cancel()
		w.run(wctx, initial, wch)
	}()
	return out, nil
}

type watcher struct {
	s        *Store
	kind     store.Kind
	selector labels.Selector
	// readOnly watchers receive the Store's shared decodings; the others a
	// deep copy of them.
	readOnly bool
	// prevKV: etcd sends previous values (needsPrevKV). Without them,
	// corrupt holds the keys whose last value this watcher saw corrupt.
	prevKV  bool
	corrupt map[string]bool
	out     chan store.Event
}

func (w *watcher) run(ctx context.Context, initial []store.Event, wch clientv3.WatchChan) {
	// Initial events are the start of the stream; they may wait for the
	// consumer. Live events must not (see below).
	for _, ev := range initial {
		select {
		case w.out <- ev:
		case <-ctx.Done():
			return
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case resp, ok := <-wch:
			switch {
			case !ok:
				if ctx.Err() == nil {
					w.fail(ctx, fmt.Errorf("%s watch: etcd watch channel closed", w.kind.Name))
				}
				return
			case resp.CompactRevision != 0:
				w.fail(ctx, fmt.Errorf("%s watch: etcd compacted to revision %d: %w: %w", w.kind.Name, resp.CompactRevision, store.ErrExpired, rpctypes.ErrCompacted))
				return
			case resp.Err() != nil:
				if ctx.Err() == nil {
					w.fail(ctx, fmt.Errorf("%s watch: etcd: %w", w.kind.Name, resp.Err()))
				}
				return
			}
			for _, e := range resp.Events {
				var ev store.Event
				var ok bool
				if w.prevKV {
					ev, ok = w.translate(e)
				} else {
					ev, ok = w.translateNoPrev(ctx, e)
				}
				if !ok {
					continue
				}
				if !w.readOnly {
					ev.Object = ev.Object.DeepCopyObject().(virtkit.Object)
				}
				select {
				case w.out <- ev:
				default:
					// The consumer is a full buffer behind: end the watch so
					// it relists instead of etcd's client buffering without
					// bound.
					w.s.log.Debug("watcher fell behind; expired", "kind", w.kind.Name, "buffer", cap(w.out))
					w.fail(ctx, fmt.Errorf("%s watcher fell more than %d events behind: %w", w.kind.Name, cap(w.out), store.ErrExpired))
					return
				}
			}
		}
	}
}

// fail delivers the final Error event once the consumer has drained what
// was queued before it.
func (w *watcher) fail(ctx context.Context, err error) {
	select {
	case w.out <- store.Event{Type: store.Error, Err: err}:
	case <-ctx.Done():
	}
}

// prevRev is the resourceVersion the previous value is decoded with: a
// deletion's revision for the last state a Deleted event reports (so a
// watch resumes after it), else the value's own mod revision, which the
// previous event of the key already decoded (only its labels are read).
func (w *watcher) prevRev(e *clientv3.Event, rev int64) int64 {
	if e.Type == mvccpb.DELETE {
		return rev
	}
	return e.PrevKv.ModRevision
}

// translate turns an etcd event into a store event for this watcher,
// applying the label selector (an object whose labels stop matching is
// Deleted for this watcher, one that starts matching Added). Corrupt values
// never end the watch: a value that becomes corrupt is Deleted for a
// watcher that knew the object (as a relist would no longer show it), a
// valid rewrite of a corrupt value is Added, and the deletion of a corrupt
// value is not reported (the watcher never had the object).
func (w *watcher) translate(e *clientv3.Event) (store.Event, bool) {
	matches := func(o virtkit.Object) bool { return store.Matches(o, "", w.selector) }
	key := string(e.Kv.Key)
	rev := e.Kv.ModRevision
	var old virtkit.Object // the previous state, nil when gone or corrupt
	if e.PrevKv != nil {
		// Decoded once per process (see prevRev for its version).
		if o, err := w.s.decodeShared(w.kind, e.PrevKv, w.prevRev(e, rev)); err == nil {
			old = o
		}
	}
	if e.Type == mvccpb.DELETE {
		w.s.corrupt.healthy(key, rev)
		switch {
		case old != nil:
			return store.Event{Type: store.Deleted, Object: old}, matches(old)
		case e.PrevKv != nil:
			return store.Event{}, false // a corrupt value went away
		}
		// The previous value is gone (compacted): report the key.
		k, err := w.s.parseKey(w.kind, key)
		if err != nil {
			return store.Event{}, false
		}
		obj := w.kind.New()
		obj.SetNamespace(k.Namespace)
		obj.SetName(k.Name)
		obj.SetResourceVersion(rvString(rev))
		return store.Event{Type: store.Deleted, Object: obj}, true
	}
	obj, err := w.s.decodeShared(w.kind, e.Kv, rev)
	if err != nil {
		w.s.corrupt.found(err, rev)
		if old != nil && matches(old) {
			// The last valid state, at this write's version.
			if last, err := w.s.decodeShared(w.kind, e.PrevKv, rev); err == nil {
				return store.Event{Type: store.Deleted, Object: last}, true
			}
		}
		return store.Event{}, false
	}
	w.s.corrupt.healthy(key, rev)
	now := matches(obj)
	if e.IsCreate() {
		return store.Event{Type: store.Added, Object: obj}, now
	}
	before := now // without the previous value, assume labels did not change
	switch {
	case old != nil:
		before = matches(old)
	case e.PrevKv != nil:
		before = false // the previous value was corrupt: the watcher never had it
	}
	switch {
	case now && before:
		return store.Event{Type: store.Modified, Object: obj}, true
	case now:
		return store.Event{Type: store.Added, Object: obj}, true
	case before:
		return store.Event{Type: store.Deleted, Object: obj}, true
	}
	return store.Event{}, false
}
