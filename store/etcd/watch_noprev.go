package etcd

import (
	"context"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// lastStateTimeout bounds the read of a deleted object's last state.
const lastStateTimeout = 5 * time.Second

// knownCorrupt is the keys under prefix the Store has seen corrupt (a List
// before the watch records them): a watch without previous values starts
// with them so that a valid rewrite of one is Added.
func (s *Store) knownCorrupt(prefix string) map[string]bool {
	out := map[string]bool{}
	for _, ce := range s.corrupt.snapshot() {
		if strings.HasPrefix(ce.StorageKey, prefix) {
			out[ce.StorageKey] = true
		}
	}
	return out
}

// translateNoPrev translates an etcd event for a watch without a selector
// (etcd sends no previous values: every write with them costs etcd a read
// of the previous revision per watcher, and the client its transfer and
// decoding). The watcher remembers the keys whose last value it saw
// corrupt: a corrupt write of a known object is Deleted, a valid rewrite of
// a corrupt value Added, the deletion of a corrupt value not reported.
func (w *watcher) translateNoPrev(ctx context.Context, e *clientv3.Event) (store.Event, bool) {
	key := string(e.Kv.Key)
	rev := e.Kv.ModRevision
	if e.Type == mvccpb.DELETE {
		w.s.corrupt.healthy(key, rev)
		if w.corrupt[key] {
			delete(w.corrupt, key)
			return store.Event{}, false // a corrupt value went away
		}
		obj, ok := w.lastState(ctx, key, rev)
		return store.Event{Type: store.Deleted, Object: obj}, ok
	}
	obj, err := w.s.decodeShared(w.kind, e.Kv, rev)
	if err != nil {
		w.s.corrupt.found(err, rev)
		if w.corrupt[key] || e.IsCreate() {
			w.corrupt[key] = true
			return store.Event{}, false
		}
		w.corrupt[key] = true
		last, ok := w.lastState(ctx, key, rev)
		return store.Event{Type: store.Deleted, Object: last}, ok
	}
	w.s.corrupt.healthy(key, rev)
	if w.corrupt[key] || e.IsCreate() {
		delete(w.corrupt, key)
		return store.Event{Type: store.Added, Object: obj}, true
	}
	return store.Event{Type: store.Modified, Object: obj}, true
}

// lastState is the value key held just before revision rev, at version
// rev (so a watch resumes after it): read from etcd's history and decoded
// once per Store. When that history is compacted (or unreadable) the
// object carries only its key.
func (w *watcher) lastState(ctx context.Context, key string, rev int64) (virtkit.Object, bool) {
	rctx, cancel := context.WithTimeout(ctx, lastStateTimeout)
	defer cancel()
	resp, err := w.s.client.Get(rctx, key, clientv3.WithRev(rev-1))
	if err == nil && len(resp.Kvs) == 1 {
		if obj, err := w.s.decodeShared(w.kind, resp.Kvs[0], rev); err == nil {
			return obj, true
		}
		return nil, false // it was corrupt: the watcher never had it
	}
	k, err := w.s.parseKey(w.kind, key)
	if err != nil {
		return nil, false
	}
	obj := w.kind.New()
	obj.SetNamespace(k.Namespace)
	obj.SetName(k.Name)
	obj.SetResourceVersion(rvString(rev))
	return obj, true
}
