package store

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/virtkit/virtkit"
)

// watcherSet holds one kind's watchers. Watchers whose selector is a single
// label equality (key=value, the node agents' "this node's VMIs") are
// indexed by that label, so a write is offered to the watchers whose value
// its object (or its previous state) carries instead of to every watcher:
// with a thousand nodes each write would otherwise run two thousand
// selector matches that all but a few fail. Which watchers receive an
// event is unchanged: an indexed watcher not offered it would have
// filtered it out.
type watcherSet struct {
	all map[*memWatcher]struct{}
	// byLabel[key][value] are the watchers selecting key=value; unindexed
	// are the rest (no selector or any other selector).
	byLabel   map[string]map[string]map[*memWatcher]struct{}
	unindexed map[*memWatcher]struct{}
}

func newWatcherSet() *watcherSet {
	return &watcherSet{
		all:       map[*memWatcher]struct{}{},
		byLabel:   map[string]map[string]map[*memWatcher]struct{}{},
		unindexed: map[*memWatcher]struct{}{},
	}
}

// equalityLabel returns the label key and value sel selects on when it is a
// single equality requirement.
func equalityLabel(sel labels.Selector) (key, value string, ok bool) {
	if sel == nil {
		return "", "", false
	}
	reqs, selectable := sel.Requirements()
	if !selectable || len(reqs) != 1 {
		return "", "", false
	}
	r := reqs[0]
	switch r.Operator() {
	case selection.Equals, selection.DoubleEquals:
	case selection.In:
		if r.Values().Len() != 1 {
			return "", "", false
		}
	default:
		return "", "", false
	}
	vals := r.Values().UnsortedList()
	if len(vals) != 1 {
		return "", "", false
	}
	return r.Key(), vals[0], true
}

func (s *watcherSet) add(w *memWatcher) {
	s.all[w] = struct{}{}
	key, value, ok := equalityLabel(w.selector)
	if !ok {
		s.unindexed[w] = struct{}{}
		return
	}
	w.indexKey, w.indexValue, w.indexed = key, value, true
	byValue := s.byLabel[key]
	if byValue == nil {
		byValue = map[string]map[*memWatcher]struct{}{}
		s.byLabel[key] = byValue
	}
	set := byValue[value]
	if set == nil {
		set = map[*memWatcher]struct{}{}
		byValue[value] = set
	}
	set[w] = struct{}{}
}

func (s *watcherSet) remove(w *memWatcher) {
	if _, ok := s.all[w]; !ok {
		return
	}
	delete(s.all, w)
	if !w.indexed {
		delete(s.unindexed, w)
		return
	}
	byValue := s.byLabel[w.indexKey]
	delete(byValue[w.indexValue], w)
	if len(byValue[w.indexValue]) == 0 {
		delete(byValue, w.indexValue)
	}
	if len(byValue) == 0 {
		delete(s.byLabel, w.indexKey)
	}
}

// each calls fn with every watcher that may want ev: the unindexed ones and
// the indexed ones whose label value ev's object or previous state carries.
// fn returns false to drop the watcher.
func (s *watcherSet) each(ev memEvent, fn func(*memWatcher) bool) {
	offer := func(set map[*memWatcher]struct{}) {
		for w := range set {
			if !fn(w) {
				s.remove(w)
			}
		}
	}
	offer(s.unindexed)
	for key, byValue := range s.byLabel {
		now, hasNow := labelOf(ev.obj, key)
		if hasNow {
			offer(byValue[now])
		}
		if old, hasOld := labelOf(ev.old, key); hasOld && (!hasNow || old != now) {
			offer(byValue[old])
		}
	}
}

func labelOf(obj virtkit.Object, key string) (string, bool) {
	if obj == nil {
		return "", false
	}
	v, ok := obj.GetLabels()[key]
	return v, ok
}
