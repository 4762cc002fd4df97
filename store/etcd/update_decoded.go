package etcd

import (
	"context"
	"strconv"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// updateFromDecoded is the fast path of an update: the caller read obj at
// its resourceVersion, and this process has most often decoded that very
// value already (a watch event, a get). Then the update needs no read: it
// is prepared against that decoding and written if the key's mod revision
// is still obj's resourceVersion. done is false when the path does not
// apply or the write found the key changed; the caller then takes the
// read-then-write path, which reports a conflict or a deletion exactly as
// before.
func (s *Store) updateFromDecoded(ctx context.Context, kind store.Kind, key store.Key, obj virtkit.Object,
	prepare func(stored, obj virtkit.Object) (virtkit.Object, store.WriteOp, error)) (done bool, err error) {
	rev, err := strconv.ParseInt(obj.GetResourceVersion(), 10, 64)
	if err != nil || rev <= 0 {
		return false, nil
	}
	d, ok := s.decoded.get(decodeKey{key: s.etcdKey(kind, key), mod: rev, rev: rev})
	if !ok || d.err != nil {
		return false, nil
	}
	// The decoding is shared and prepare's result may share memory with
	// stored: work on a copy.
	stored := d.obj.DeepCopyObject().(virtkit.Object)
	next, op, err := prepare(stored, obj)
	if err != nil || op == store.WriteNone {
		// Whether obj is stale (a conflict) or a no-op is up to date is
		// for the current value to say.
		return false, nil
	}
	written, err := s.write(ctx, kind, key, rev, next, op)
	if err != nil {
		return true, err
	}
	if !written {
		return false, nil
	}
	store.Into(obj, next)
	return true, nil
}
