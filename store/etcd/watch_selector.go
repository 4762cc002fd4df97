package etcd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// A watch with a label selector reports an object whose labels stop
// matching as Deleted, one that starts matching as Added. Rather than ask
// etcd for every event's previous value (a read of the previous revision
// per event and per watcher in etcd, and its transfer and decoding in the
// client), the watcher remembers the objects it has reported as matching:
// their keys and last states. The set is seeded by a read at the revision
// the watch starts from.
//
// Most events of a selective watch are about objects it does not want (a
// node agent watches its own node's VMIs among all of them). Before it
// decodes a value, the watcher looks in its bytes for the quoted values of
// the selector's equality terms: an object whose stored JSON does not
// contain one cannot match, and when the watcher did not report it as
// matching either, the event is dropped undecoded.

// selectorNeedles are, per equality (=, ==, in) term of sel, the quoted
// values one of which a matching object's JSON must contain. nil when sel
// has no such term (nothing can be ruled out without decoding).
func selectorNeedles(sel labels.Selector) [][][]byte {
	if sel == nil {
		return nil
	}
	reqs, selectable := sel.Requirements()
	if !selectable {
		return nil
	}
	var out [][][]byte
	for _, r := range reqs {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
		default:
			continue
		}
		var alts [][]byte
		for _, v := range r.ValuesUnsorted() {
			// Label values ([A-Za-z0-9_.-]) are never escaped in JSON.
			alts = append(alts, []byte(strconv.Quote(v)))
		}
		if len(alts) > 0 {
			out = append(out, alts)
		}
	}
	return out
}

// candidate reports whether a stored value may match the selector: it
// holds, for every equality term, one of the term's quoted values.
func candidate(needles [][][]byte, value []byte) bool {
	for _, alts := range needles {
		found := false
		for _, n := range alts {
			if bytes.Contains(value, n) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// seedSelected reads, at revision rev (0: the current one), the objects
// under prefix that match sel, keyed by etcd key, and the revision read.
// Values that cannot match are not decoded; corrupt ones are skipped.
func (s *Store) seedSelected(ctx context.Context, kind store.Kind, prefix string, sel labels.Selector, rev int64) (map[string]virtkit.Object, int64, error) {
	needles := selectorNeedles(sel)
	end := clientv3.GetPrefixRangeEnd(prefix)
	start := prefix
	out := map[string]virtkit.Object{}
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(listPageSize)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := s.client.Get(ctx, start, opts...)
		if err != nil {
			return nil, 0, err
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			if !candidate(needles, kv.Value) {
				continue
			}
			obj, err := s.decodeShared(kind, kv, kv.ModRevision)
			if err == nil && store.Matches(obj, "", sel) {
				out[string(kv.Key)] = obj
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return out, rev, nil
		}
		start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// seedWatch seeds a selector watch that starts after revision from (0:
// now) and returns the revision to start at.
func (s *Store) seedWatch(ctx context.Context, w *watcher, prefix string, from int64) (int64, error) {
	matched, rev, err := s.seedSelected(ctx, w.kind, prefix, w.selector, from)
	switch {
	case errors.Is(err, rpctypes.ErrCompacted):
		return 0, fmt.Errorf("%s watch from resourceVersion %d: %w: %w", w.kind.Name, from, store.ErrExpired, err)
	case errors.Is(err, rpctypes.ErrFutureRev):
		// Not written yet: what matches now is what matched then.
		if matched, _, err = s.seedSelected(ctx, w.kind, prefix, w.selector, 0); err != nil {
			return 0, fmt.Errorf("%s watch: etcd range: %w", w.kind.Name, err)
		}
		rev = from
	case err != nil:
		return 0, fmt.Errorf("%s watch: etcd range: %w", w.kind.Name, err)
	}
	w.matched = matched
	return rev + 1, nil
}

// translateSelected is translate for a selector watch without previous
// values (see the comment at the top of this file). The events are those
// translate reports.
func (w *watcher) translateSelected(e *clientv3.Event) (store.Event, bool) {
	key := string(e.Kv.Key)
	rev := e.Kv.ModRevision
	last, had := w.matched[key]
	if e.Type == mvccpb.DELETE {
		w.s.corrupt.healthy(key, rev)
		if !had {
			return store.Event{}, false
		}
		delete(w.matched, key)
		return store.Event{Type: store.Deleted, Object: atVersion(last, rev)}, true
	}
	if !had && !candidate(w.needles, e.Kv.Value) {
		return store.Event{}, false
	}
	obj, err := w.s.decodeShared(w.kind, e.Kv, rev)
	if err != nil {
		w.s.corrupt.found(err, rev)
		if !had {
			return store.Event{}, false
		}
		// The last valid state, at this write's version.
		delete(w.matched, key)
		return store.Event{Type: store.Deleted, Object: atVersion(last, rev)}, true
	}
	w.s.corrupt.healthy(key, rev)
	now := store.Matches(obj, "", w.selector)
	switch {
	case now && had:
		w.matched[key] = obj
		return store.Event{Type: store.Modified, Object: obj}, true
	case now:
		w.matched[key] = obj
		return store.Event{Type: store.Added, Object: obj}, true
	case had:
		delete(w.matched, key)
		return store.Event{Type: store.Deleted, Object: obj}, true
	}
	return store.Event{}, false
}

// atVersion is a copy of a shared object with resourceVersion rev.
func atVersion(obj virtkit.Object, rev int64) virtkit.Object {
	c := obj.DeepCopyObject().(virtkit.Object)
	c.SetResourceVersion(rvString(rev))
	return c
}
