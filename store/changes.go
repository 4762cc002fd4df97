package store

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/virtkit/virtkit"
)

// Change is one change of an object as [WatchChanges] hands it over: the
// state before (Old) and after (New). Old is nil for Added, New is nil for
// Deleted. The objects are the consumer's own copies.
type Change struct {
	Type     EventType
	Old, New virtkit.Object
	// ResourceVersion is the store's version of this change; pass it as
	// ChangeOptions.ResourceVersion to resume after it. The Added changes
	// of the initial objects all carry the version of the list they came
	// from: a consumer stopped before it saw all of them starts over.
	ResourceVersion string
}

// ChangeOptions restrict and position [WatchChanges].
type ChangeOptions struct {
	// Namespace limits the changes to one namespace; "" means all.
	Namespace string
	// LabelSelector keeps objects whose labels match; nil keeps
	// everything. An object that stops matching is a Deleted change, one
	// that starts matching an Added change.
	LabelSelector labels.Selector
	// ResourceVersion "" starts with the current objects, each handed over
	// as an Added change (Old nil). Otherwise the changes after that
	// version are handed over (typically the ResourceVersion of the last
	// Change a consumer processed), and Known supplies the states the
	// consumer had seen then, so the first change of each object after
	// the version has its Old too (nil for objects not in Known).
	ResourceVersion string
	Known           []virtkit.Object
}

// WatchChanges hands fn every change of list's kind, in the store's order,
// with the object's previous and new state, until ctx ends (it returns nil)
// or fn returns an error (it returns that error). Every write the store
// makes is one change: a consumer that keeps an audit log of, say, a VMI's
// phases sees each phase the store recorded, which a level-triggered
// reconciler that re-reads by key cannot.
//
// The store's watch may expire when fn is too slow or the history from
// opts.ResourceVersion was compacted: WatchChanges then returns an error
// wrapping ErrExpired rather than skip changes silently; the consumer
// decides whether to start again from the current state (a gap it can
// record). list is used as the kind's prototype and scratch space.
func WatchChanges(ctx context.Context, st Store, list virtkit.ObjectList, opts ChangeOptions, fn func(Change) error) error {
	last := map[Key]virtkit.Object{}
	rv := opts.ResourceVersion
	if rv == "" {
		if err := st.List(ctx, list, ListOptions{Namespace: opts.Namespace, LabelSelector: opts.LabelSelector}); err != nil {
			return fmt.Errorf("watch changes: %w", err)
		}
		rv = list.GetResourceVersion()
		items, err := meta.ExtractList(list)
		if err != nil {
			return fmt.Errorf("watch changes: %w: %w", ErrUnknownKind, err)
		}
		for _, it := range items {
			obj, ok := it.(virtkit.Object)
			if !ok {
				return fmt.Errorf("watch changes: %w: %T is not an object", ErrUnknownKind, it)
			}
			last[KeyOf(obj)] = obj.DeepCopyObject().(virtkit.Object)
			if err := fn(Change{Type: Added, New: obj, ResourceVersion: rv}); err != nil {
				return ignoreStop(err)
			}
		}
	} else {
		for _, obj := range opts.Known {
			last[KeyOf(obj)] = obj.DeepCopyObject().(virtkit.Object)
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := st.Watch(wctx, list, WatchOptions{Namespace: opts.Namespace, LabelSelector: opts.LabelSelector, ResourceVersion: rv})
	if err != nil {
		return fmt.Errorf("watch changes from %q: %w", rv, err)
	}
	for {
		var ev Event
		var ok bool
		select {
		case <-ctx.Done():
			return nil
		case ev, ok = <-ch:
		}
		if !ok {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("watch changes: %w: the store closed the watch", ErrExpired)
		}
		if ev.Type == Error {
			if ev.Err == nil {
				ev.Err = ErrExpired
			}
			return fmt.Errorf("watch changes: %w", ev.Err)
		}
		key := KeyOf(ev.Object)
		c := Change{Type: ev.Type, Old: last[key], ResourceVersion: ev.Object.GetResourceVersion()}
		switch ev.Type {
		case Deleted:
			delete(last, key)
			if c.Old == nil {
				c.Old = ev.Object
			}
		default:
			c.New = ev.Object
			last[key] = ev.Object.DeepCopyObject().(virtkit.Object)
		}
		if err := fn(c); err != nil {
			return ignoreStop(err)
		}
	}
}

func ignoreStop(err error) error {
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

// errStop is returned by a consumer that is done; see [StopWatching].
var errStop = errors.New("stop watching")

// StopWatching is what fn returns to end [WatchChanges] without an error:
// WatchChanges returns nil when fn returns it (or an error wrapping it).
func StopWatching() error { return errStop }
