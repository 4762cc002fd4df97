package etcd

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// DefaultPrefix is the key prefix when Options.Prefix is empty.
const DefaultPrefix = "/virtkit"

// DefaultDialTimeout is the dial timeout when Options.DialTimeout is zero.
const DefaultDialTimeout = 5 * time.Second

// listPageSize bounds one etcd range response; lists are read in pages at
// one revision so a large kind never needs one huge gRPC message.
const listPageSize = 1000

// maxDeleteRetries bounds Delete's retries when the object keeps changing
// between its read and its conditional write.
const maxDeleteRetries = 16

// Options configures New. The zero value (plus Endpoints) is the default.
type Options struct {
	// Endpoints are the etcd client URLs ("http://10.0.0.1:2379").
	// Required unless Client is set.
	Endpoints []string
	// Prefix is the root of virtkit's keys; objects live at
	// <Prefix>/<Kind>/<namespace>/<name> (cluster-scoped:
	// <Prefix>/<Kind>/<name>). Empty means DefaultPrefix. Several stores
	// with different prefixes can share one etcd.
	Prefix string
	// TLS, Username and Password are passed to the etcd client unchanged.
	TLS      *tls.Config
	Username string
	Password string
	// DialTimeout bounds connecting; 0 means DefaultDialTimeout.
	DialTimeout time.Duration
	// Client, when set, is used instead of dialing (Endpoints, TLS, auth
	// and DialTimeout are then ignored) and is not closed by Close. Use it
	// to share one connection with, e.g., leader election.
	Client *clientv3.Client
	// Kinds are registered in addition to store.DefaultKinds.
	Kinds []store.Kind
	// Now is the clock for creationTimestamp and deletionTimestamp; nil
	// means time.Now.
	Now func() time.Time
	// WatchBuffer is how many events a watcher may be behind before it gets
	// an Error event wrapping store.ErrExpired; 0 means
	// store.DefaultWatchBuffer.
	WatchBuffer int
	// MaxObjectBytes bounds one stored object's encoding: a larger write
	// fails with store.ErrInvalid, a larger value found in etcd is corrupt.
	// 0 means store.DefaultMaxObjectBytes (etcd's default request limit).
	MaxObjectBytes int
	// OnCorrupt is called (besides a warning on Logger) the first time each
	// corrupt value is read: a value List, Watch and Get skip or refuse
	// because it is not a valid object for its key (see store.ErrCorrupt).
	// Wire it to alerting or an event recorder; CorruptObjects lists the
	// ones not yet repaired. It must not block; nil does nothing.
	OnCorrupt func(store.CorruptError)
	// Logger receives warnings about corrupt values and debug messages;
	// nil discards.
	Logger *slog.Logger
}

// Validate reports malformed options with the field name.
func (o Options) Validate() error {
	if o.Client == nil && len(o.Endpoints) == 0 {
		return fmt.Errorf("endpoints: %w: required unless client is set", store.ErrInvalid)
	}
	if o.DialTimeout < 0 {
		return fmt.Errorf("dialTimeout: %w: %v is negative", store.ErrInvalid, o.DialTimeout)
	}
	if o.WatchBuffer < 0 {
		return fmt.Errorf("watchBuffer: %w: %d is negative", store.ErrInvalid, o.WatchBuffer)
	}
	if o.MaxObjectBytes < 0 {
		return fmt.Errorf("maxObjectBytes: %w: %d is negative", store.ErrInvalid, o.MaxObjectBytes)
	}
	if strings.ContainsAny(o.Prefix, "\x00") {
		return fmt.Errorf("prefix: %w: contains NUL", store.ErrInvalid)
	}
	return nil
}

// Store is a store.Store on etcd v3. Objects are JSON values;
// resourceVersion is the etcd mod revision of the key (so it increases
// across the whole etcd keyspace); writes are transactions conditioned on
// the mod revision read; watches are etcd watches from a revision.
//
// History: a Watch from a revision etcd has compacted fails with an error
// wrapping store.ErrExpired (as an Error event if the compaction is noticed
// only once the watch runs). Callers relist and watch from the list's
// resourceVersion; with that, no change is lost. Configure etcd's
// auto-compaction retention longer than the longest expected watch outage.
//
// Corrupt values: etcd holds whatever any client wrote. A value under a
// kind's prefix that is not a valid object for its key (see
// store.ErrCorrupt) costs only itself: List and Watch skip it (a watcher
// that knew the object gets Deleted, and Added again once the key is
// rewritten with a valid object), Get, Update and Delete of its key fail
// with a *store.CorruptError naming the etcd key, each one is logged and
// passed to Options.OnCorrupt, and CorruptObjects lists those not yet seen
// repaired.
type Store struct {
	client      *clientv3.Client
	ownClient   bool
	prefix      string
	scheme      *store.Scheme
	now         func() time.Time
	watchBuffer int
	log         *slog.Logger
	// maxObjectBytes bounds values read and written.
	maxObjectBytes int
	corrupt        *corruptSet
	// decoded shares watch event decodings between this Store's watchers.
	decoded   *decodeCache
	closeOnce sync.Once
	closeErr  error
}

var (
	_ store.Store        = (*Store)(nil)
	_ store.StatusWriter = (*Store)(nil)
	_ store.Compacter    = (*Store)(nil)
)

// New connects to etcd and checks it answers within ctx.
func New(ctx context.Context, opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	scheme, err := store.NewScheme(append(store.DefaultKinds(), opts.Kinds...)...)
	if err != nil {
		return nil, err
	}
	s := &Store{
		client:      opts.Client,
		prefix:      strings.TrimRight(opts.Prefix, "/"),
		scheme:      scheme,
		now:         opts.Now,
		watchBuffer: opts.WatchBuffer,
		log:         opts.Logger,
	}
	if opts.Prefix == "" {
		s.prefix = DefaultPrefix
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.watchBuffer == 0 {
		s.watchBuffer = store.DefaultWatchBuffer
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s.maxObjectBytes = opts.MaxObjectBytes
	if s.maxObjectBytes == 0 {
		s.maxObjectBytes = store.DefaultMaxObjectBytes
	}
	s.corrupt = &corruptSet{log: s.log, onCorrupt: opts.OnCorrupt, byKey: map[string]corruptEntry{}}
	s.decoded = newDecodeCache(decodeCacheSize)
	if s.client == nil {
		timeout := opts.DialTimeout
		if timeout == 0 {
			timeout = DefaultDialTimeout
		}
		s.client, err = clientv3.New(clientv3.Config{
			Endpoints:   opts.Endpoints,
			DialTimeout: timeout,
			TLS:         opts.TLS,
			Username:    opts.Username,
			Password:    opts.Password,
			Logger:      zap.NewNop(),
			Context:     context.WithoutCancel(ctx),
			// gRPC's default reconnect backoff grows to two minutes: a
			// node agent cut off from etcd for a while would stay fenced
			// that long after the link is back.
			DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
				Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 3 * time.Second},
				MinConnectTimeout: timeout,
			})},
		})
		if err != nil {
			return nil, fmt.Errorf("etcd client %v: %w", opts.Endpoints, err)
		}
		s.ownClient = true
	}
	pingCtx, cancel := context.WithTimeout(ctx, DefaultDialTimeout)
	defer cancel()
	if _, err := s.client.Get(pingCtx, s.prefix+"/", clientv3.WithCountOnly()); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("etcd %v: %w", opts.Endpoints, err)
	}
	return s, nil
}

// Close closes the etcd client if New created it. Watches end with errors.
// Safe to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if s.ownClient {
			s.closeErr = s.client.Close()
		}
	})
	return s.closeErr
}

// Client returns the etcd client, e.g. for leader election on the same
// connection.
func (s *Store) Client() *clientv3.Client { return s.client }

// Scheme returns the store's kind registry.
func (s *Store) Scheme() *store.Scheme { return s.scheme }

func (s *Store) kindPrefix(kind store.Kind) string { return s.prefix + "/" + kind.Name + "/" }

func (s *Store) listPrefix(kind store.Kind, namespace string) string {
	if kind.ClusterScoped || namespace == "" {
		return s.kindPrefix(kind)
	}
	return s.kindPrefix(kind) + namespace + "/"
}

func (s *Store) etcdKey(kind store.Kind, key store.Key) string {
	if kind.ClusterScoped {
		return s.kindPrefix(kind) + key.Name
	}
	return s.kindPrefix(kind) + key.Namespace + "/" + key.Name
}

func rvString(rev int64) string { return strconv.FormatInt(rev, 10) }

// encode marshals obj without its resourceVersion, which etcd keeps as the
// mod revision. An encoding over the store's bound is store.ErrInvalid: the
// store never writes what it would refuse to read.
func (s *Store) encode(kind store.Kind, key store.Key, obj virtkit.Object) ([]byte, error) {
	rv := obj.GetResourceVersion()
	obj.SetResourceVersion("")
	defer obj.SetResourceVersion(rv)
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("%s %s: encoding: %w", kind.Name, key, err)
	}
	if len(data) > s.maxObjectBytes {
		return nil, fmt.Errorf("%s %s: %w: encoded object of %d bytes exceeds the store's bound of %d", kind.Name, key, store.ErrInvalid, len(data), s.maxObjectBytes)
	}
	return data, nil
}

func etcdErr(kind string, key store.Key, op string, err error) error {
	return fmt.Errorf("%s %s: etcd %s: %w", kind, key, op, err)
}

// get reads the object at key; ok is false when there is none. A corrupt
// value is an error wrapping store.ErrCorrupt.
func (s *Store) get(ctx context.Context, kind store.Kind, key store.Key) (obj virtkit.Object, rev int64, ok bool, err error) {
	k := s.etcdKey(kind, key)
	resp, err := s.client.Get(ctx, k)
	if err != nil {
		return nil, 0, false, etcdErr(kind.Name, key, "get", err)
	}
	if len(resp.Kvs) == 0 {
		s.corrupt.healthy(k, resp.Header.Revision)
		return nil, 0, false, nil
	}
	kv := resp.Kvs[0]
	// The value read is most often one this process's watchers have just
	// decoded (a reconcile reads what its watch event announced): take
	// their decoding and copy it, cheaper than decoding again.
	obj, err = s.decodeShared(kind, kv, kv.ModRevision)
	if err != nil {
		s.corrupt.found(err, kv.ModRevision)
		return nil, 0, false, err
	}
	s.corrupt.healthy(k, kv.ModRevision)
	return obj.DeepCopyObject().(virtkit.Object), kv.ModRevision, true, nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key store.Key, obj virtkit.Object) error {
	kind, err := s.scheme.KindOf(obj)
	if err != nil {
		return err
	}
	if err := store.CheckKey(kind, key); err != nil {
		return err
	}
	stored, _, ok, err := s.get(ctx, kind, key)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s %s: %w", kind.Name, key, store.ErrNotFound)
	}
	store.Into(obj, stored)
	return nil
}

// list reads every object under prefix at one revision, in pages. Corrupt
// values are skipped (and recorded); they never fail the list.
func (s *Store) list(ctx context.Context, kind store.Kind, prefix string, sel labels.Selector) ([]virtkit.Object, int64, error) {
	return s.listAt(ctx, kind, prefix, sel, 0)
}

// listAt is list at revision at (0: the current one). Only a current list
// sweeps the record of corrupt values.
func (s *Store) listAt(ctx context.Context, kind store.Kind, prefix string, sel labels.Selector, at int64) ([]virtkit.Object, int64, error) {
	needles := selectorNeedles(sel)
	end := clientv3.GetPrefixRangeEnd(prefix)
	start := prefix
	rev := at
	var out []virtkit.Object
	corrupt := map[string]bool{}
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(listPageSize)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := s.client.Get(ctx, start, opts...)
		if err != nil {
			switch {
			case errors.Is(err, rpctypes.ErrCompacted):
				err = fmt.Errorf("%w: %w", store.ErrExpired, err)
			case errors.Is(err, rpctypes.ErrFutureRev):
				err = fmt.Errorf("%w: resourceVersion: %w", store.ErrInvalid, err)
			}
			return nil, 0, fmt.Errorf("%s list: etcd range %s: %w", kind.Name, prefix, err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			if !candidate(needles, kv.Value) {
				// Cannot match the selector: not decoded. Whether it is
				// corrupt is not known, so the sweep leaves its record.
				corrupt[string(kv.Key)] = true
				continue
			}
			obj, err := s.decode(kind, kv, kv.ModRevision)
			if err != nil {
				s.corrupt.found(err, kv.ModRevision)
				corrupt[string(kv.Key)] = true
				continue
			}
			if store.Matches(obj, "", sel) {
				out = append(out, obj)
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			if at == 0 {
				s.corrupt.sweep(prefix, corrupt, rev)
			}
			return out, rev, nil
		}
		start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, list virtkit.ObjectList, opts store.ListOptions) error {
	kind, err := s.scheme.ListKind(list)
	if err != nil {
		return err
	}
	objs, rev, err := s.list(ctx, kind, s.listPrefix(kind, opts.Namespace), opts.LabelSelector)
	if err != nil {
		return err
	}
	items := make([]runtime.Object, len(objs))
	for i, o := range objs {
		items[i] = o
	}
	if err := store.SetList(list, items); err != nil {
		return fmt.Errorf("%s list: %w", kind.Name, err)
	}
	list.SetResourceVersion(rvString(rev))
	list.SetContinue("")
	return nil
}

// Create implements store.Store.
func (s *Store) Create(ctx context.Context, obj virtkit.Object) error {
	for attempt := 0; ; attempt++ {
		next, kind, key, err := s.scheme.PrepareCreate(obj, s.now())
		if err != nil {
			return err
		}
		data, err := s.encode(kind, key, next)
		if err != nil {
			return err
		}
		k := s.etcdKey(kind, key)
		resp, err := s.client.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
			Then(clientv3.OpPut(k, string(data))).
			Commit()
		if err != nil {
			return etcdErr(kind.Name, key, "txn", err)
		}
		if !resp.Succeeded {
			if obj.GetName() == "" && attempt < 8 {
				continue // generated name collided; draw another
			}
			return fmt.Errorf("%s %s: %w", kind.Name, key, store.ErrAlreadyExists)
		}
		next.SetResourceVersion(rvString(resp.Header.Revision))
		store.Into(obj, next)
		return nil
	}
}

// Update implements store.Store.
func (s *Store) Update(ctx context.Context, obj virtkit.Object) error {
	return s.update(ctx, obj, s.scheme.PrepareUpdate)
}

// UpdateStatus implements store.Store.
func (s *Store) UpdateStatus(ctx context.Context, obj virtkit.Object) error {
	return s.update(ctx, obj, s.scheme.PrepareUpdateStatus)
}

// UpdateWithStatus implements store.StatusWriter: metadata, spec and
// status in one transaction.
func (s *Store) UpdateWithStatus(ctx context.Context, obj virtkit.Object) error {
	return s.update(ctx, obj, s.scheme.PrepareUpdateWithStatus)
}

func (s *Store) update(ctx context.Context, obj virtkit.Object, prepare func(stored, obj virtkit.Object) (virtkit.Object, store.WriteOp, error)) error {
	kind, key, err := s.scheme.ObjectKey(obj, false)
	if err != nil {
		return err
	}
	if done, err := s.updateFromDecoded(ctx, kind, key, obj, prepare); done {
		return err
	}
	stored, rev, ok, err := s.get(ctx, kind, key)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s %s: %w", kind.Name, key, store.ErrNotFound)
	}
	next, op, err := prepare(stored, obj)
	if err != nil {
		return err
	}
	written, err := s.write(ctx, kind, key, rev, next, op)
	if err != nil {
		return err
	}
	if !written {
		return fmt.Errorf("%s %s: %w (changed concurrently)", kind.Name, key, store.ErrConflict)
	}
	store.Into(obj, next)
	return nil
}

// write applies op to key if its mod revision is still rev and sets next's
// resourceVersion. written is false when the key changed meanwhile.
func (s *Store) write(ctx context.Context, kind store.Kind, key store.Key, rev int64, next virtkit.Object, op store.WriteOp) (written bool, err error) {
	k := s.etcdKey(kind, key)
	var then clientv3.Op
	switch op {
	case store.WriteNone:
		return true, nil
	case store.WritePut:
		data, err := s.encode(kind, key, next)
		if err != nil {
			return false, err
		}
		then = clientv3.OpPut(k, string(data))
	case store.WriteRemove:
		then = clientv3.OpDelete(k)
	}
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(k), "=", rev)).
		Then(then).
		Commit()
	if err != nil {
		return false, etcdErr(kind.Name, key, "txn", err)
	}
	if resp.Succeeded {
		next.SetResourceVersion(rvString(resp.Header.Revision))
	}
	return resp.Succeeded, nil
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, obj virtkit.Object, opts store.DeleteOptions) error {
	kind, key, err := s.scheme.ObjectKey(obj, false)
	if err != nil {
		return err
	}
	for range maxDeleteRetries {
		stored, rev, ok, err := s.get(ctx, kind, key)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%s %s: %w", kind.Name, key, store.ErrNotFound)
		}
		next, op, err := s.scheme.PrepareDelete(stored, opts, s.now())
		if err != nil {
			return err
		}
		written, err := s.write(ctx, kind, key, rev, next, op)
		if err != nil {
			return err
		}
		if written {
			store.Into(obj, next)
			return nil
		}
		// Changed between read and write: decide again on the new state.
	}
	return fmt.Errorf("%s %s: %w (kept changing during delete)", kind.Name, key, store.ErrConflict)
}

// Compact compacts etcd's history up to the current revision (for the whole
// etcd keyspace, not just this store's prefix). Watches from older
// resourceVersions then fail with store.ErrExpired.
func (s *Store) Compact(ctx context.Context) error {
	resp, err := s.client.Get(ctx, s.prefix+"/", clientv3.WithCountOnly())
	if err != nil {
		return fmt.Errorf("etcd compact: %w", err)
	}
	if _, err := s.client.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		return fmt.Errorf("etcd compact at %d: %w", resp.Header.Revision, err)
	}
	return nil
}
