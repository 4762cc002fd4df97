package etcd

import (
	"context"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

var _ store.Raw = (*Store)(nil)

// Prefix returns the root of the store's keys (Options.Prefix, or
// DefaultPrefix).
func (s *Store) Prefix() string { return s.prefix }

// parseRV parses a resourceVersion a Raw write is conditioned on.
func parseRV(kind store.Kind, key store.Key, rv string) (int64, error) {
	rev, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || rev <= 0 {
		return 0, fmt.Errorf("%s %s: %w: metadata.resourceVersion: %q is not a positive decimal version", kind.Name, key, store.ErrInvalid, rv)
	}
	return rev, nil
}

// CreateRaw implements store.Raw: a put conditioned on the key not existing.
func (s *Store) CreateRaw(ctx context.Context, obj virtkit.Object) error {
	next, kind, key, err := s.scheme.PrepareRaw(obj)
	if err != nil {
		return err
	}
	if obj.GetResourceVersion() != "" {
		return fmt.Errorf("%s %s: %w: metadata.resourceVersion: must not be set on create", kind.Name, key, store.ErrInvalid)
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
		return fmt.Errorf("%s %s: %w", kind.Name, key, store.ErrAlreadyExists)
	}
	next.SetResourceVersion(rvString(resp.Header.Revision))
	store.Into(obj, next)
	return nil
}

// ReplaceRaw implements store.Raw: a put conditioned on the key's mod
// revision.
func (s *Store) ReplaceRaw(ctx context.Context, obj virtkit.Object) error {
	next, kind, key, err := s.scheme.PrepareRaw(obj)
	if err != nil {
		return err
	}
	rev, err := parseRV(kind, key, obj.GetResourceVersion())
	if err != nil {
		return err
	}
	data, err := s.encode(kind, key, next)
	if err != nil {
		return err
	}
	k := s.etcdKey(kind, key)
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(k), "=", rev)).
		Then(clientv3.OpPut(k, string(data))).
		Else(clientv3.OpGet(k, clientv3.WithKeysOnly())).
		Commit()
	if err != nil {
		return etcdErr(kind.Name, key, "txn", err)
	}
	if !resp.Succeeded {
		return s.casFailure(kind, key, obj.GetResourceVersion(), resp)
	}
	next.SetResourceVersion(rvString(resp.Header.Revision))
	store.Into(obj, next)
	return nil
}

// casFailure says why a conditional write whose Else branch read the key
// failed: the key is gone (ErrNotFound) or has another revision
// (ErrConflict).
func (s *Store) casFailure(kind store.Kind, key store.Key, rv string, resp *clientv3.TxnResponse) error {
	if len(resp.Responses) == 0 || len(resp.Responses[0].GetResponseRange().Kvs) == 0 {
		return fmt.Errorf("%s %s: %w", kind.Name, key, store.ErrNotFound)
	}
	stored := rvString(resp.Responses[0].GetResponseRange().Kvs[0].ModRevision)
	return fmt.Errorf("%s %s: %w (resourceVersion %q, stored %q)", kind.Name, key, store.ErrConflict, rv, stored)
}

// DeleteRaw implements store.Raw: a delete conditioned on the key's mod
// revision (none for an empty resourceVersion).
func (s *Store) DeleteRaw(ctx context.Context, obj virtkit.Object) error {
	kind, key, err := s.scheme.ObjectKey(obj, false)
	if err != nil {
		return err
	}
	k := s.etcdKey(kind, key)
	txn := s.client.Txn(ctx)
	if rv := obj.GetResourceVersion(); rv != "" {
		rev, err := parseRV(kind, key, rv)
		if err != nil {
			return err
		}
		txn = txn.If(clientv3.Compare(clientv3.ModRevision(k), "=", rev))
	}
	resp, err := txn.
		Then(clientv3.OpDelete(k, clientv3.WithPrevKV())).
		Else(clientv3.OpGet(k, clientv3.WithKeysOnly())).
		Commit()
	if err != nil {
		return etcdErr(kind.Name, key, "txn", err)
	}
	if !resp.Succeeded {
		return s.casFailure(kind, key, obj.GetResourceVersion(), resp)
	}
	del := resp.Responses[0].GetResponseDeleteRange()
	if len(del.PrevKvs) == 0 {
		return fmt.Errorf("%s %s: %w", kind.Name, key, store.ErrNotFound)
	}
	// The last state, with the deletion's revision as its resourceVersion.
	last, err := s.decode(kind, del.PrevKvs[0], resp.Header.Revision)
	if err != nil {
		// The key is gone; its value was not an object.
		s.corrupt.healthy(k, resp.Header.Revision)
		return err
	}
	store.Into(obj, last)
	return nil
}

// ListAt implements store.Raw with an etcd range read at the revision.
func (s *Store) ListAt(ctx context.Context, list virtkit.ObjectList, opts store.ListOptions, resourceVersion string) error {
	kind, err := s.scheme.ListKind(list)
	if err != nil {
		return err
	}
	at, err := strconv.ParseInt(resourceVersion, 10, 64)
	if err != nil || at <= 0 {
		return fmt.Errorf("%s list: %w: resourceVersion: %q is not a positive decimal version", kind.Name, store.ErrInvalid, resourceVersion)
	}
	objs, _, err := s.listAt(ctx, kind, s.listPrefix(kind, opts.Namespace), opts.LabelSelector, at)
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
	list.SetResourceVersion(resourceVersion)
	list.SetContinue("")
	return nil
}

// ResourceVersion implements store.Raw: etcd's current revision.
func (s *Store) ResourceVersion(ctx context.Context) (string, error) {
	resp, err := s.client.Get(ctx, s.prefix+"/", clientv3.WithCountOnly())
	if err != nil {
		return "", fmt.Errorf("etcd get: %w", err)
	}
	return rvString(resp.Header.Revision), nil
}
