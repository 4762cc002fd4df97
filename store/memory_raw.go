package store

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/virtkit/virtkit"
)

var _ Raw = (*Memory)(nil)

// CreateRaw implements Raw.
func (m *Memory) CreateRaw(ctx context.Context, obj virtkit.Object) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	next, kind, key, err := m.scheme.PrepareRaw(obj)
	if err != nil {
		return err
	}
	if obj.GetResourceVersion() != "" {
		return fmt.Errorf("%s %s: %w: metadata.resourceVersion: must not be set on create", kind.Name, key, ErrInvalid)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, exists := m.objects[kind.Name][key]; exists {
		return fmt.Errorf("%s %s: %w", kind.Name, key, ErrAlreadyExists)
	}
	m.commit(kind.Name, key, Added, next, nil)
	Into(obj, copyObject(next))
	return nil
}

// ReplaceRaw implements Raw.
func (m *Memory) ReplaceRaw(ctx context.Context, obj virtkit.Object) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	next, kind, key, err := m.scheme.PrepareRaw(obj)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	stored, ok := m.objects[kind.Name][key]
	if !ok {
		return fmt.Errorf("%s %s: %w", kind.Name, key, ErrNotFound)
	}
	if stored.GetResourceVersion() != obj.GetResourceVersion() {
		return conflict(kind.Name, key, obj.GetResourceVersion(), stored.GetResourceVersion())
	}
	m.commit(kind.Name, key, Modified, next, stored)
	Into(obj, copyObject(next))
	return nil
}

// DeleteRaw implements Raw.
func (m *Memory) DeleteRaw(ctx context.Context, obj virtkit.Object) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	kind, key, err := m.scheme.ObjectKey(obj, false)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	stored, ok := m.objects[kind.Name][key]
	if !ok {
		return fmt.Errorf("%s %s: %w", kind.Name, key, ErrNotFound)
	}
	if rv := obj.GetResourceVersion(); rv != "" && stored.GetResourceVersion() != rv {
		return conflict(kind.Name, key, rv, stored.GetResourceVersion())
	}
	next := copyObject(stored) // the Deleted event carries the deletion's version
	m.commit(kind.Name, key, Deleted, next, stored)
	Into(obj, copyObject(next))
	return nil
}

// ListAt implements Raw: the state at resourceVersion is the current one
// with the kind's later events of the history undone.
func (m *Memory) ListAt(ctx context.Context, list virtkit.ObjectList, opts ListOptions, resourceVersion string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	kind, err := m.scheme.ListKind(list)
	if err != nil {
		return err
	}
	at, err := strconv.ParseUint(resourceVersion, 10, 64)
	if err != nil {
		return fmt.Errorf("%s list: %w: resourceVersion: %q is not a decimal version", kind.Name, ErrInvalid, resourceVersion)
	}
	ns := opts.Namespace
	if kind.ClusterScoped {
		ns = ""
	}
	m.mu.RLock()
	if at > m.rv {
		rv := m.rv
		m.mu.RUnlock()
		return fmt.Errorf("%s list: %w: resourceVersion: %d is newer than the store's %d", kind.Name, ErrInvalid, at, rv)
	}
	if at < m.compacted {
		compacted := m.compacted
		m.mu.RUnlock()
		return fmt.Errorf("%s list at resourceVersion %d (oldest available %d): %w", kind.Name, at, compacted, ErrExpired)
	}
	state := make(map[Key]virtkit.Object, len(m.objects[kind.Name]))
	for key, obj := range m.objects[kind.Name] {
		state[key] = obj
	}
	later := m.history.after(at)
	m.mu.RUnlock()
	for i := len(later) - 1; i >= 0; i-- {
		ev := later[i]
		if ev.kind != kind.Name {
			continue
		}
		key := KeyOf(ev.obj)
		if ev.typ == Added {
			delete(state, key)
		} else {
			state[key] = ev.old
		}
	}
	keys := make([]Key, 0, len(state))
	for key, obj := range state {
		if Matches(obj, ns, opts.LabelSelector) {
			keys = append(keys, key)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	objs := make([]runtime.Object, len(keys))
	for i, key := range keys {
		objs[i] = copyObject(state[key])
	}
	if err := SetList(list, objs); err != nil {
		return fmt.Errorf("%s list: %w", kind.Name, err)
	}
	list.SetResourceVersion(strconv.FormatUint(at, 10))
	list.SetContinue("")
	return nil
}

// ResourceVersion implements Raw.
func (m *Memory) ResourceVersion(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return strconv.FormatUint(m.rv, 10), nil
}
