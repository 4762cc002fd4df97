package describe

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/term"
)

// esc escapes untrusted text for the terminal.
func esc(s string) string { return term.Esc(s) }

// Object writes obj kubectl describe's way; evs are its events, ages are
// as of now.
func Object(w io.Writer, obj *unstructured.Unstructured, evs []virtkit.Event, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "Name:\t%s\n", esc(obj.GetName()))
	if obj.GetNamespace() != "" {
		fmt.Fprintf(tw, "Namespace:\t%s\n", esc(obj.GetNamespace()))
	}
	describeMap(tw, "Labels", obj.GetLabels(), "=")
	describeMap(tw, "Annotations", obj.GetAnnotations(), ": ")
	fmt.Fprintf(tw, "API Version:\t%s\n", esc(obj.GetAPIVersion()))
	fmt.Fprintf(tw, "Kind:\t%s\n", esc(obj.GetKind()))
	content := obj.UnstructuredContent()
	if md, ok := content["metadata"].(map[string]any); ok {
		rest := map[string]any{}
		for k, v := range md {
			switch k {
			case "name", "namespace", "labels", "annotations", "managedFields":
				continue
			}
			rest[k] = v
		}
		if len(rest) > 0 {
			fmt.Fprintln(tw, "Metadata:")
			describeFields(tw, rest, 1, false)
		}
	}
	top := map[string]any{}
	for k, v := range content {
		switch k {
		case "apiVersion", "kind", "metadata":
			continue
		}
		top[k] = v
	}
	describeFields(tw, top, 0, false)
	describeEvents(tw, evs, now)
	tw.Flush()
}

// describeMap writes labels or annotations, one per line, or <none>.
func describeMap(w io.Writer, title string, m map[string]string, sep string) {
	if len(m) == 0 {
		fmt.Fprintf(w, "%s:\t<none>\n", title)
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		label := ""
		if i == 0 {
			label = title + ":"
		}
		fmt.Fprintf(w, "%s\t%s%s%s\n", label, esc(k), sep, esc(m[k]))
	}
}

// describeFields writes a JSON object's fields, sorted, with readable
// labels ("runStrategy" as "Run Strategy"), nested objects and lists
// indented two spaces per level. With item set, the first field is marked
// "- " (the start of a list item).
func describeFields(w io.Writer, m map[string]any, level int, item bool) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		indent := strings.Repeat("  ", level)
		if item && i == 0 && level > 0 {
			indent = indent[:len(indent)-2] + "- "
		}
		label := labelFor(k)
		switch v := m[k].(type) {
		case map[string]any:
			if len(v) == 0 {
				fmt.Fprintf(w, "%s%s:\t<none>\n", indent, label)
				continue
			}
			fmt.Fprintf(w, "%s%s:\n", indent, label)
			describeFields(w, v, level+1, false)
		case []any:
			if len(v) == 0 {
				fmt.Fprintf(w, "%s%s:\t<none>\n", indent, label)
				continue
			}
			fmt.Fprintf(w, "%s%s:\n", indent, label)
			describeList(w, v, level+1)
		default:
			fmt.Fprintf(w, "%s%s:\t%s\n", indent, label, scalar(v))
		}
	}
}

// describeList writes a list's items: objects field by field, each item's
// first field marked "- "; scalars one a line.
func describeList(w io.Writer, items []any, level int) {
	indent := strings.Repeat("  ", level)
	for _, it := range items {
		switch v := it.(type) {
		case map[string]any:
			describeFields(w, v, level, true)
		case []any:
			describeList(w, v, level+1)
		default:
			fmt.Fprintf(w, "%s%s\n", indent, scalar(v))
		}
	}
}

func scalar(v any) string {
	switch x := v.(type) {
	case nil:
		return "<nil>"
	case string:
		return esc(x)
	case float64:
		if x == float64(int64(x)) {
			return fmt.Sprintf("%d", int64(x))
		}
		return fmt.Sprint(x)
	}
	return esc(fmt.Sprint(v))
}

// initialisms are written in capitals in labels.
var initialisms = map[string]string{
	"api": "API", "cpu": "CPU", "dns": "DNS", "http": "HTTP", "id": "ID", "ip": "IP", "ips": "IPs", "mac": "MAC",
	"os": "OS", "pci": "PCI", "pvc": "PVC", "uid": "UID", "url": "URL", "uuid": "UUID", "vmi": "VMI", "vnc": "VNC",
}

// labelFor turns a camelCase JSON name into words: "migrationState" is
// "Migration State", "apiVersion" "API Version".
func labelFor(name string) string {
	var words []string
	start := 0
	rs := []rune(name)
	for i := 1; i < len(rs); i++ {
		// Binary units stay one word: "PerGiB" is "Per GiB".
		if rs[i] == 'B' && i >= 2 && rs[i-1] == 'i' && strings.ContainsRune("KMGTPE", rs[i-2]) {
			continue
		}
		if unicode.IsUpper(rs[i]) && (!unicode.IsUpper(rs[i-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]))) {
			words = append(words, string(rs[start:i]))
			start = i
		}
	}
	words = append(words, string(rs[start:]))
	for i, wd := range words {
		if up, ok := initialisms[strings.ToLower(wd)]; ok {
			words[i] = up
			continue
		}
		r := []rune(wd)
		r[0] = unicode.ToUpper(r[0])
		words[i] = string(r)
	}
	return esc(strings.Join(words, " "))
}

// describeEvents writes the events table, oldest last observation first,
// or "Events: <none>".
func describeEvents(w io.Writer, evs []virtkit.Event, now time.Time) {
	if len(evs) == 0 {
		fmt.Fprintln(w, "Events:\t<none>")
		return
	}
	sort.SliceStable(evs, func(i, j int) bool {
		a, b := evs[i].LastSeen(), evs[j].LastSeen()
		return a.Before(&b)
	})
	fmt.Fprintln(w, "Events:")
	// The events get their own columns, independent of the fields above.
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  Type\tReason\tAge\tFrom\tMessage")
	fmt.Fprintln(tw, "  ----\t------\t----\t----\t-------")
	for i := range evs {
		e := &evs[i]
		seen := age(e.LastSeen(), now)
		if n := e.Count(); n > 1 {
			seen = fmt.Sprintf("%s (x%d over %s)", seen, n, age(metav1.NewTime(e.EventTime.Time), now))
		}
		from := e.DeprecatedSource.Component
		if from == "" {
			from = e.ReportingController
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", esc(e.Type), esc(e.Reason), seen, esc(from), esc(e.Note))
	}
	tw.Flush()
	fmt.Fprint(w, b.String())
}

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
