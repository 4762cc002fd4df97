package etcd

import (
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// MaxTrackedCorrupt bounds how many corrupt keys a Store remembers for
// CorruptObjects. Further ones are still skipped, logged and passed to
// Options.OnCorrupt (each time they are read), but not listed.
const MaxTrackedCorrupt = 1000

// parseKey turns an etcd key under kind's prefix back into a store.Key. It
// is the exact inverse of etcdKey: a key it accepts maps back to itself,
// and one etcdKey cannot produce (no namespace segment on a namespaced kind,
// an extra '/', an empty, "." or ".." segment) is an error.
func (s *Store) parseKey(kind store.Kind, etcdKey string) (store.Key, error) {
	rest, ok := strings.CutPrefix(etcdKey, s.kindPrefix(kind))
	if !ok {
		return store.Key{}, fmt.Errorf("key is not under %q", s.kindPrefix(kind))
	}
	var key store.Key
	if kind.ClusterScoped {
		key.Name = rest
	} else {
		ns, name, found := strings.Cut(rest, "/")
		if !found {
			return store.Key{}, fmt.Errorf("key has no namespace segment")
		}
		key = store.Key{Namespace: ns, Name: name}
	}
	if err := store.CheckKey(kind, key); err != nil {
		return store.Key{}, err
	}
	return key, nil
}

// decode turns one etcd key-value of kind into an object whose
// resourceVersion is rev, or a *store.CorruptError. It records nothing:
// callers decide whether the value is current (see corruptSet).
func (s *Store) decode(kind store.Kind, kv *mvccpb.KeyValue, rev int64) (virtkit.Object, error) {
	etcdKey := string(kv.Key)
	key, err := s.parseKey(kind, etcdKey)
	if err != nil {
		return nil, &store.CorruptError{Kind: kind.Name, StorageKey: etcdKey,
			ResourceVersion: rvString(kv.ModRevision), Reason: store.CorruptKey, Err: err}
	}
	obj, err := s.scheme.DecodeStored(kind, store.StoredValue{
		Key: key, StorageKey: etcdKey, ResourceVersion: rvString(rev), Data: kv.Value,
	}, s.maxObjectBytes)
	var ce *store.CorruptError
	if errors.As(err, &ce) {
		ce.ResourceVersion = rvString(kv.ModRevision) // the corrupt value's own version
	}
	return obj, err
}

// CorruptObjects implements store.CorruptReporter: the corrupt values this
// Store has read (by List, Watch or Get) and not yet seen repaired, sorted
// by etcd key.
func (s *Store) CorruptObjects() []store.CorruptError { return s.corrupt.snapshot() }

var _ store.CorruptReporter = (*Store)(nil)

// corruptSet remembers the corrupt values a Store has read, each with the
// mod revision of the value, so that an older read never overrides newer
// news: a value is forgotten only when the key is seen valid or absent at
// a revision at least as new.
type corruptSet struct {
	log       *slog.Logger
	onCorrupt func(store.CorruptError)

	mu    sync.Mutex
	byKey map[string]corruptEntry // by etcd key
}

type corruptEntry struct {
	err store.CorruptError
	rev int64
}

// found records a corrupt value read at its mod revision rev. The first
// read of each (key, revision) is logged and passed to onCorrupt.
func (c *corruptSet) found(err error, rev int64) {
	var ce *store.CorruptError
	if !errors.As(err, &ce) {
		return
	}
	c.mu.Lock()
	old, known := c.byKey[ce.StorageKey]
	switch {
	case known && old.rev >= rev:
		c.mu.Unlock()
		return
	case known || len(c.byKey) < MaxTrackedCorrupt:
		c.byKey[ce.StorageKey] = corruptEntry{err: *ce, rev: rev}
	}
	c.mu.Unlock()
	c.log.Warn("skipping corrupt stored object; rewrite or delete the key to repair it",
		"kind", ce.Kind, "key", ce.Key.String(), "etcdKey", boundedKey(ce.StorageKey),
		"resourceVersion", ce.ResourceVersion, "reason", string(ce.Reason), "err", ce.Error())
	if c.onCorrupt != nil {
		c.onCorrupt(*ce)
	}
}

// healthy records that etcdKey held a valid value, or none, at rev.
func (c *corruptSet) healthy(etcdKey string, rev int64) {
	c.mu.Lock()
	old, known := c.byKey[etcdKey]
	if !known || old.rev > rev {
		c.mu.Unlock()
		return
	}
	delete(c.byKey, etcdKey)
	c.mu.Unlock()
	c.log.Info("corrupt stored object repaired", "kind", old.err.Kind, "etcdKey", boundedKey(etcdKey), "resourceVersion", rev)
}

// sweep records a complete read of every key under prefix at rev, in which
// the keys in corrupt were corrupt: every other remembered key under prefix
// was valid or absent then.
func (c *corruptSet) sweep(prefix string, corrupt map[string]bool, rev int64) {
	c.mu.Lock()
	var repaired []corruptEntry
	for k, e := range c.byKey {
		if strings.HasPrefix(k, prefix) && !corrupt[k] && e.rev <= rev {
			delete(c.byKey, k)
			repaired = append(repaired, e)
		}
	}
	c.mu.Unlock()
	for _, e := range repaired {
		c.log.Info("corrupt stored object repaired", "kind", e.err.Kind, "etcdKey", boundedKey(e.err.StorageKey), "resourceVersion", rev)
	}
}

func (c *corruptSet) snapshot() []store.CorruptError {
	c.mu.Lock()
	out := make([]store.CorruptError, 0, len(c.byKey))
	for _, e := range c.byKey {
		out = append(out, e.err)
	}
	c.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].StorageKey < out[j].StorageKey })
	return out
}

// boundedKey keeps log lines short whatever an etcd key holds.
func boundedKey(k string) string {
	const limit = 256
	if len(k) > limit {
		return k[:limit] + "..."
	}
	return k
}
