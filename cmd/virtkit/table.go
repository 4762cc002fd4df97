package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/get"
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
