package main

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/printers"
)

// age renders a duration for describe: 45s, 3m12s, 2h5m, 3d.
func age(created metav1.Time, now time.Time) string {
	if created.IsZero() {
		return "<unknown>"
	}
	d := now.Sub(created.Time)
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + "s"
	case d < time.Hour:
		m := int(d.Minutes())
		if s := int(d.Seconds()) % 60; s != 0 && m < 10 {
			return fmt.Sprintf("%dm%ds", m, s)
		}
		return fmt.Sprintf("%dm", m)
	case d < 48*time.Hour:
		h := int(d.Hours())
		if m := int(d.Minutes()) % 60; m != 0 && h < 8 {
			return fmt.Sprintf("%dh%dm", h, m)
		}
		return fmt.Sprintf("%dh", h)
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// listItems returns the objects of a typed list.
func listItems(list virtkit.ObjectList) ([]virtkit.Object, error) {
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

// printTable writes objects of a kind as `kubectl get` prints them: the
// kind's printer columns (the API server's, package printers), a NAMESPACE
// column first with withNamespace. Objects are sorted by namespace and
// name, events by when they were last seen.
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
	t := printers.NewTable(printers.Columns(kind), objs, printers.TableOptions{Now: now, Include: printers.IncludeObject})
	p := printers.Printer{W: w, WithNamespace: withNamespace, Escape: esc}
	return p.Print(t)
}

// printList writes a typed list as printTable does, with the namespace
// column.
func printList(w io.Writer, kind string, list virtkit.ObjectList, now time.Time) error {
	objs, err := listItems(list)
	if err != nil {
		return err
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
