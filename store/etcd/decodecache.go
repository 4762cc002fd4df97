package etcd

import (
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// decodeCacheSize bounds how many decoded watch values a Store keeps. Every
// watcher of a kind receives the same etcd event; the first one to
// translate it decodes, the others (and the next event of the key, which
// needs it as the previous value) find it here.
const decodeCacheSize = 4096

// decodeKey names one decoding: the etcd key, the value's mod revision and
// the resourceVersion given to the object (the mod revision, or a
// deletion's revision for the last state of a deleted object).
type decodeKey struct {
	key      string
	mod, rev int64
}

type decoded struct {
	obj virtkit.Object
	err error
}

// decodeCache holds the most recent decodings, first in first out. Its
// objects are shared and never modified.
type decodeCache struct {
	mu    sync.Mutex
	byKey map[decodeKey]decoded
	ring  []decodeKey
	next  int
}

func newDecodeCache(size int) *decodeCache {
	return &decodeCache{byKey: make(map[decodeKey]decoded, size), ring: make([]decodeKey, 0, size)}
}

func (c *decodeCache) get(k decodeKey) (decoded, bool) {
	c.mu.Lock()
	d, ok := c.byKey[k]
	c.mu.Unlock()
	return d, ok
}

// put keeps d under k and returns what is kept: a decoding another watcher
// stored first wins, so every watcher of an event gets the same object even
// when two of them decoded it at once.
func (c *decodeCache) put(k decodeKey, d decoded) decoded {
	c.mu.Lock()
	defer c.mu.Unlock()
	if kept, ok := c.byKey[k]; ok {
		return kept
	}
	if len(c.ring) < cap(c.ring) {
		c.ring = append(c.ring, k)
	} else {
		delete(c.byKey, c.ring[c.next])
		c.ring[c.next] = k
		c.next = (c.next + 1) % len(c.ring)
	}
	c.byKey[k] = d
	return d
}

// decodeShared is decode through the Store's cache: the object returned
// may be shared with other watchers and must not be modified.
func (s *Store) decodeShared(kind store.Kind, kv *mvccpb.KeyValue, rev int64) (virtkit.Object, error) {
	k := decodeKey{key: string(kv.Key), mod: kv.ModRevision, rev: rev}
	if d, ok := s.decoded.get(k); ok {
		return d.obj, d.err
	}
	obj, err := s.decode(kind, kv, rev)
	d := s.decoded.put(k, decoded{obj: obj, err: err})
	return d.obj, d.err
}
