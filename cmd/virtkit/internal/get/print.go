package get

import (
	"fmt"
	"io"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/term"
	"github.com/virtkit/virtkit/printers"
)

// ListItems returns the objects of a typed list.
func ListItems(list virtkit.ObjectList) ([]virtkit.Object, error) {
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, fmt.Errorf("%T: %w", list, err)
	}
	out := make([]virtkit.Object, 0, len(items))
	for i, it := range items {
		obj, ok := it.(virtkit.Object)
		if !ok {
			return nil, fmt.Errorf("list item %d of %T is not an object", i, list)
		}
		out = append(out, obj)
	}
	return out, nil
}

// PrintObjects writes objects of a kind as `kubectl get` prints them: the
// kind's printer columns (the API server's, package printers), a NAMESPACE
// column first with withNamespace. Objects are sorted by namespace and
// name, events by when they were last seen. It is for a process that holds
// the objects itself (the embedded demo); the get command prints the
// server's tables.
func PrintObjects(w io.Writer, kind string, objs []virtkit.Object, withNamespace bool, now time.Time) error {
	sort.SliceStable(objs, func(i, j int) bool {
		return objs[i].GetNamespace()+"/"+objs[i].GetName() < objs[j].GetNamespace()+"/"+objs[j].GetName()
	})
	if kind == virtkit.KindEvent {
		sort.SliceStable(objs, func(i, j int) bool {
			a, b := objs[i].(*virtkit.Event).LastSeen(), objs[j].(*virtkit.Event).LastSeen()
			return a.Before(&b)
		})
	}
	p := printers.Printer{W: w, WithNamespace: withNamespace, Escape: term.Esc}
	return p.Print(printers.NewTable(printers.Columns(kind), objs, printers.TableOptions{Now: now, Include: printers.IncludeObject}))
}
