package main

import (
	"io"
	"strings"
	"time"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/get"
)

// printTable writes objects of a kind as `virtkit get` does
// (get.PrintObjects).
func printTable(w io.Writer, kind string, objs []virtkit.Object, withNamespace bool, now time.Time) error {
	return get.PrintObjects(w, kind, objs, withNamespace, now)
}

// printList writes a typed list as printTable does, with the namespace
// column.
func printList(w io.Writer, kind string, list virtkit.ObjectList, now time.Time) error {
	objs, err := get.ListItems(list)
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
