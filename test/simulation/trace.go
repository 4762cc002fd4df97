package simulation

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// Change is one store change a [Recorder] saw.
type Change struct {
	RV uint64
	// At is the virtual time the change was seen at (the instant of the
	// write: virtual time does not move while anything is in flight).
	At     time.Time
	Type   store.EventType
	Kind   string
	Object virtkit.Object
}

// Recorder watches every kind of a store and keeps every change, so a run
// can be compared byte for byte with another and the invariants can look
// at the history (a VMI that was Running once, a Started event that has
// expired since).
type Recorder struct {
	now     func() time.Time
	mu      sync.Mutex
	changes []Change
	errs    []error
	wg      sync.WaitGroup
}

// Record starts watching every default kind of st until ctx ends.
func Record(ctx context.Context, st store.Store, now func() time.Time) (*Recorder, error) {
	r := &Recorder{now: now}
	for _, k := range store.DefaultKinds() {
		list := k.List.DeepCopyObject().(virtkit.ObjectList)
		ch, err := st.Watch(ctx, list, store.WatchOptions{})
		if err != nil {
			return nil, fmt.Errorf("watch %s: %w", k.Name, err)
		}
		kind := k.Name
		r.wg.Go(func() {
			for ev := range ch {
				r.add(kind, ev)
			}
		})
	}
	return r, nil
}

func (r *Recorder) add(kind string, ev store.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ev.Err != nil {
		r.errs = append(r.errs, fmt.Errorf("watch %s: %w", kind, ev.Err))
		return
	}
	rv, _ := strconv.ParseUint(ev.Object.GetResourceVersion(), 10, 64)
	r.changes = append(r.changes, Change{RV: rv, At: r.now(), Type: ev.Type, Kind: kind, Object: ev.Object})
}

// Changes returns the changes seen so far in resourceVersion order, and
// the watch errors (a watcher that fell behind).
func (r *Recorder) Changes() ([]Change, []error) {
	r.mu.Lock()
	out := append([]Change(nil), r.changes...)
	errs := append([]error(nil), r.errs...)
	r.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].RV < out[j].RV })
	return out, errs
}

// ChangesSince returns the changes that arrived after the first n (in
// arrival order), sorted by resourceVersion, with how many have arrived
// and the watch errors. Each kind has its own watch: on real time a
// change of one kind can arrive after a later change of another, so a
// reader that goes on from where it stopped counts arrivals, not
// positions in resourceVersion order.
func (r *Recorder) ChangesSince(n int) (changes []Change, total int, errs []error) {
	r.mu.Lock()
	if n < len(r.changes) {
		changes = append([]Change(nil), r.changes[n:]...)
	}
	total = len(r.changes)
	errs = append([]error(nil), r.errs...)
	r.mu.Unlock()
	sort.SliceStable(changes, func(i, j int) bool { return changes[i].RV < changes[j].RV })
	return changes, total, errs
}

// Trace renders the run as the state every changed object settled in at
// each virtual instant, one line per object and instant: the instant,
// kind, key, "deleted" or "stored", and the object as JSON without
// resourceVersions. Components woken at the same instant run concurrently,
// so the order of their writes within the instant (and with it every
// resourceVersion and the intermediate states) is the one thing a seeded
// run on virtual time does not repeat; where each object ends up at each
// instant it does.
func (r *Recorder) Trace() (string, error) {
	changes, errs := r.Changes()
	if len(errs) > 0 {
		return "", errs[0]
	}
	type settled struct {
		at   time.Time
		id   string
		last Change
	}
	var out []settled
	index := map[string]int{} // instant+id -> position in out
	for _, c := range changes {
		id := c.Kind + " " + c.Object.GetNamespace() + "/" + c.Object.GetName()
		k := c.At.Format(time.RFC3339Nano) + " " + id
		if i, ok := index[k]; ok {
			out[i].last = c
			continue
		}
		index[k] = len(out)
		out = append(out, settled{at: c.At, id: id, last: c})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].at.Equal(out[j].at) {
			return out[i].at.Before(out[j].at)
		}
		return out[i].id < out[j].id
	})
	var b strings.Builder
	for _, s := range out {
		js, err := canonicalJSON(s.last.Object)
		if err != nil {
			return "", err
		}
		state := "stored"
		if s.last.Type == store.Deleted {
			state = "deleted"
		}
		fmt.Fprintf(&b, "%s %s %s %s\n", s.at.Format(time.RFC3339Nano), s.id, state, js)
	}
	return b.String(), nil
}

// canonicalJSON is obj as JSON without any resourceVersion (its own and
// those of the objects it refers to).
func canonicalJSON(obj virtkit.Object) (string, error) {
	js, err := json.Marshal(obj)
	if err != nil {
		return "", err
	}
	var v any
	if err := json.Unmarshal(js, &v); err != nil {
		return "", err
	}
	dropResourceVersions(v)
	js, err = json.Marshal(v)
	return string(js), err
}

func dropResourceVersions(v any) {
	switch t := v.(type) {
	case map[string]any:
		delete(t, "resourceVersion")
		for _, e := range t {
			dropResourceVersions(e)
		}
	case []any:
		for _, e := range t {
			dropResourceVersions(e)
		}
	}
}

// Snapshot renders every object of every default kind in st, sorted by
// kind and key, one JSON line each, without resourceVersions (see Trace).
func Snapshot(ctx context.Context, st store.Store) (string, error) {
	var b strings.Builder
	for _, k := range store.DefaultKinds() {
		list := k.List.DeepCopyObject().(virtkit.ObjectList)
		if err := st.List(ctx, list, store.ListOptions{}); err != nil {
			return "", fmt.Errorf("list %s: %w", k.Name, err)
		}
		objs, err := items(list)
		if err != nil {
			return "", err
		}
		sort.Slice(objs, func(i, j int) bool {
			return objs[i].GetNamespace()+"/"+objs[i].GetName() < objs[j].GetNamespace()+"/"+objs[j].GetName()
		})
		for _, o := range objs {
			js, err := canonicalJSON(o)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&b, "%s %s/%s %s\n", k.Name, o.GetNamespace(), o.GetName(), js)
		}
	}
	return b.String(), nil
}

// items returns the objects of a list.
func items(list virtkit.ObjectList) ([]virtkit.Object, error) {
	raw, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make([]virtkit.Object, 0, len(raw))
	for _, o := range raw {
		obj, ok := o.(virtkit.Object)
		if !ok {
			return nil, fmt.Errorf("%T is not a virtkit.Object", o)
		}
		out = append(out, obj)
	}
	return out, nil
}
