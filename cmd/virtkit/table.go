package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/term"
	"github.com/virtkit/virtkit/printers"
)

// printTable writes objects of a kind as `virtkit get` prints them, for
// the demo, which holds its cluster's objects: the kind's printer columns
// (the API server's, package printers), a NAMESPACE column first with
// withNamespace. Objects are sorted by namespace and name, events by when
// they were last seen.
func printTable(w io.Writer, kind string, objs []virtkit.Object, withNamespace bool, now time.Time) error {
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

// printList writes a typed list as printTable does, with the namespace
// column.
func printList(w io.Writer, kind string, list virtkit.ObjectList, now time.Time) error {
	items, err := meta.ExtractList(list)
	if err != nil {
		return fmt.Errorf("%T: %w", list, err)
	}
	objs := make([]virtkit.Object, 0, len(items))
	for i, it := range items {
		obj, ok := it.(virtkit.Object)
		if !ok {
			return fmt.Errorf("list item %d of %T is not an object", i, list)
		}
		objs = append(objs, obj)
	}
	return printTable(w, kind, objs, true, now)
}

// indent prefixes every line of s.
func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		if lines[i] != "" {
			lines[i] = prefix + lines[i]
		}
	}
	return strings.Join(lines, "\n") + "\n"
}
