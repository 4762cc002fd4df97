package etcd

import (
	"context"
	"errors"
	"fmt"
	"strconv"

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

	w := &watcher{s: s, kind: kind, selector: sel, readOnly: opts.ReadOnly}
	selective := sel != nil && !sel.Empty()
	if selective {
		w.needles = selectorNeedles(sel)
	}
	var start int64
	var initial []store.Event
	switch {
	case opts.SendInitialEvents:
		if opts.ResourceVersion != "" {
			return nil, fmt.Errorf("%s watch: %w: resourceVersion: must be empty with sendInitialEvents", kind.Name, store.ErrInvalid)
		}
		objs, rev, err := s.list(ctx, kind, prefix, sel)
		if err != nil {
			return nil, err
		}
		if selective {
			w.matched = make(map[string]virtkit.Object, len(objs))
		}
		for _, o := range objs {
			initial = append(initial, store.Event{Type: store.Added, Object: o})
			if selective {
				w.matched[s.etcdKey(kind, store.Key{Namespace: o.GetNamespace(), Name: o.GetName()})] = o
			}
		}
		start = rev + 1
	case opts.ResourceVersion != "":
		from, err := strconv.ParseInt(opts.ResourceVersion, 10, 64)
		if err != nil || from < 0 {
			return nil, fmt.Errorf("%s watch: %w: resourceVersion: %q is not a decimal version", kind.Name, store.ErrInvalid, opts.ResourceVersion)
		}
		if selective {
			// What matched at from: read (and checked for compaction) there.
			if start, err = s.seedWatch(ctx, w, prefix, max(from, 1)); err != nil {
				return nil, err
			}
			break
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
	case selective:
		if start, err = s.seedWatch(ctx, w, prefix, 0); err != nil {
			return nil, err
		}
	default:
		resp, err := s.client.Get(ctx, prefix, clientv3.WithCountOnly())
		if err != nil {
			return nil, fmt.Errorf("%s watch: etcd get: %w", kind.Name, err)
		}
		start = resp.Header.Revision + 1
	}

	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	wopts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithRev(start)}
	if !selective {
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
	// corrupt holds the keys whose last value this watcher (without a
	// selector) saw corrupt.
	corrupt map[string]bool
	// matched are the objects a selector watch has reported as matching,
	// by etcd key, and needles what a value must contain to match (see
	// translateSelected).
	matched map[string]virtkit.Object
	needles [][][]byte
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
				if w.matched != nil {
					ev, ok = w.translateSelected(e)
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
