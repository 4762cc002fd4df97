package metrics

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// VMIRanger visits VMIs without copying them, in namespace/name order.
// [VMIIndex] is one; a shared informer cache can be another. The
// collector never modifies what it visits.
type VMIRanger interface {
	// RangeVMIs calls fn for every VMI, in namespace/name order, until fn
	// returns false. It returns false (and calls nothing) while the
	// ranger has no complete view yet; the collector then lists.
	RangeVMIs(fn func(*virtkit.VirtualMachineInstance) bool) bool
}

// ListWatcher lists and watches objects; store.Store satisfies it.
type ListWatcher interface {
	ObjectLister
	Watcher
}

// VMIIndex keeps the VMIs of a store, as one read-only watch delivers
// them, for scrapes that must not copy every VMI each time
// ([DomainSources.VMIs]). The objects are shared with the store's other
// read-only watchers and never modified. Start it; until its first list
// is in, RangeVMIs reports no view.
type VMIIndex struct {
	src      ListWatcher
	selector labels.Selector
	log      interface {
		Warn(msg string, args ...any)
	}

	mu     sync.RWMutex
	synced bool
	byKey  map[string]*virtkit.VirtualMachineInstance
	keys   []string // sorted; nil when a key was added or removed since
}

// NewVMIIndex returns an index of src's VMIs matching selector (nil: all).
func NewVMIIndex(src ListWatcher, selector labels.Selector, opts Options) (*VMIIndex, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if src == nil {
		return nil, fmt.Errorf("%w: NewVMIIndex: nil source", errInvalidOptions)
	}
	return &VMIIndex{src: src, selector: selector, log: opts.Logger, byKey: map[string]*virtkit.VirtualMachineInstance{}}, nil
}

var _ VMIRanger = (*VMIIndex)(nil)

func vmiKey(namespace, name string) string { return namespace + "/" + name }

// Start lists the VMIs and follows their changes until ctx ends, listing
// again when the watch ends (an expired resourceVersion, a store
// restart). It returns nil when ctx ends.
func (x *VMIIndex) Start(ctx context.Context) error {
	for ctx.Err() == nil {
		rv, err := x.relist(ctx)
		if err == nil {
			err = x.follow(ctx, rv)
		}
		if err != nil && ctx.Err() == nil {
			x.log.Warn("metrics: VMI index", "error", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(rewatchDelay):
		}
	}
	return nil
}

// relist replaces the index with a fresh listing and returns its
// resourceVersion.
func (x *VMIIndex) relist(ctx context.Context) (string, error) {
	var list virtkit.VirtualMachineInstanceList
	if err := x.src.List(ctx, &list, store.ListOptions{LabelSelector: x.selector}); err != nil {
		return "", err
	}
	byKey := make(map[string]*virtkit.VirtualMachineInstance, len(list.Items))
	for i := range list.Items {
		v := &list.Items[i]
		byKey[vmiKey(v.Namespace, v.Name)] = v
	}
	x.mu.Lock()
	x.byKey, x.keys, x.synced = byKey, nil, true
	x.mu.Unlock()
	return list.ResourceVersion, nil
}

// follow applies the changes after rv until the watch ends.
func (x *VMIIndex) follow(ctx context.Context, rv string) error {
	events, err := x.src.Watch(ctx, &virtkit.VirtualMachineInstanceList{},
		store.WatchOptions{ResourceVersion: rv, LabelSelector: x.selector, ReadOnly: true})
	if err != nil {
		return err
	}
	for ev := range events {
		if ev.Type == store.Error {
			return cmp.Or(ev.Err, errors.New("watch error"))
		}
		vmi, ok := ev.Object.(*virtkit.VirtualMachineInstance)
		if !ok {
			continue
		}
		k := vmiKey(vmi.Namespace, vmi.Name)
		x.mu.Lock()
		_, had := x.byKey[k]
		if ev.Type == store.Deleted {
			delete(x.byKey, k)
		} else {
			x.byKey[k] = vmi
		}
		if had != (ev.Type != store.Deleted) {
			x.keys = nil
		}
		x.mu.Unlock()
	}
	return nil
}

// RangeVMIs implements [VMIRanger]. fn runs without the index's lock: it
// sees the VMIs as they were when the visit began.
func (x *VMIIndex) RangeVMIs(fn func(*virtkit.VirtualMachineInstance) bool) bool {
	vmis, ok := x.snapshot()
	if !ok {
		return false
	}
	for _, v := range vmis {
		if !fn(v) {
			break
		}
	}
	return true
}

// snapshot returns the VMIs in key order, sorting the keys again only
// after one was added or removed.
func (x *VMIIndex) snapshot() ([]*virtkit.VirtualMachineInstance, bool) {
	x.mu.RLock()
	if x.synced && x.keys != nil {
		defer x.mu.RUnlock()
		return x.pointers(), true
	}
	x.mu.RUnlock()
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.synced {
		return nil, false
	}
	if x.keys == nil {
		ks := make([]string, 0, len(x.byKey))
		for k := range x.byKey {
			ks = append(ks, k)
		}
		slices.SortFunc(ks, compareKeys)
		x.keys = ks
	}
	return x.pointers(), true
}

// pointers lists the indexed VMIs in key order (mu held).
func (x *VMIIndex) pointers() []*virtkit.VirtualMachineInstance {
	vmis := make([]*virtkit.VirtualMachineInstance, 0, len(x.keys))
	for _, k := range x.keys {
		if v := x.byKey[k]; v != nil {
			vmis = append(vmis, v)
		}
	}
	return vmis
}

// compareKeys orders "namespace/name" keys by namespace, then name.
func compareKeys(a, b string) int {
	an, aname, _ := strings.Cut(a, "/")
	bn, bname, _ := strings.Cut(b, "/")
	return cmp.Or(strings.Compare(an, bn), strings.Compare(aname, bname))
}
