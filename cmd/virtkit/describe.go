package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/virtkit/virtkit"
)

// eventsGVR is where the API serves events.
var eventsGVR = schema.GroupVersionResource{Group: virtkit.EventsGroupName, Version: "v1", Resource: "events"}

// maxDescribeEvents bounds the events describe reads for one object.
const maxDescribeEvents = 500

func newDescribeCmd() *cobra.Command {
	var (
		kf       kubeFlags
		ns       namespaceFlags
		selector string
	)
	cmd := &cobra.Command{
		Use:   "describe <vm|vmi|vmim|dv|node|...> [NAME...]",
		Short: "Show the details of objects and their events, kubectl-style",
		Long: `describe prints each named object as kubectl describe prints a custom
resource: name, namespace, labels and annotations, then its metadata, spec and
status (conditions and migration state included) field by field, then the
events that regard it, oldest first. Without a NAME it describes every object
of the kind in the namespace (-l narrows them by label).

It talks to the control plane's API with the kubeconfig from --kubeconfig,
$KUBECONFIG or ~/.kube/config. Errors are the server's, printed as kubectl
prints them, with exit status 1.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if selector != "" && len(args) > 1 {
				return apiFail(cmd, errors.New("name cannot be provided when a selector is specified"))
			}
			c, err := kf.connect(cmd)
			if err != nil {
				return apiFail(cmd, err)
			}
			return apiFail(cmd, runDescribe(cmd.Context(), c, cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], args[1:], selector, time.Now()))
		},
	}
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "describe the objects with these labels, e.g. app=web")
	cmd.ValidArgsFunction = completeKindThenName(&kf, 0)
	kf.register(cmd)
	ns.register(cmd, false)
	return cmd
}

// runDescribe describes the named objects of one kind, or without names
// those the label selector picks, a blank line between two.
func runDescribe(ctx context.Context, c *apiClient, w, errOut io.Writer, typed string, names []string, selector string, now time.Time) error {
	m, err := c.mapping(typed)
	if err != nil {
		return err
	}
	ri := c.resourceFor(m, c.namespace)
	var objs []*unstructured.Unstructured
	if len(names) == 0 {
		list, err := ri.List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err
		}
		if len(list.Items) == 0 {
			// As kubectl: a note on standard error, not a failure.
			if m.Scope.Name() == meta.RESTScopeNameNamespace {
				fmt.Fprintf(errOut, "No resources found in %s namespace.\n", esc(c.namespace))
			} else {
				fmt.Fprintln(errOut, "No resources found")
			}
			return nil
		}
		for i := range list.Items {
			objs = append(objs, &list.Items[i])
		}
	}
	for _, name := range names {
		obj, err := ri.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		objs = append(objs, obj)
	}
	for i, obj := range objs {
		evs, err := eventsRegarding(ctx, c, obj)
		if err != nil {
			return err
		}
		if i > 0 {
			fmt.Fprintln(w)
		}
		describeObject(w, obj, evs, now)
	}
	return nil
}

// eventsRegarding lists the events that regard obj (by kind, name and
// UID), at most maxDescribeEvents. A user who may not read events gets the
// object without them, as kubectl describe does.
func eventsRegarding(ctx context.Context, c *apiClient, obj *unstructured.Unstructured) ([]virtkit.Event, error) {
	m, err := c.mapper.RESTMapping(schema.GroupKind{Group: eventsGVR.Group, Kind: virtkit.KindEvent}, eventsGVR.Version)
	if err != nil {
		return nil, nil // the server serves no events
	}
	sel := fields.Set{"regarding.kind": obj.GetKind(), "regarding.name": obj.GetName()}
	if uid := obj.GetUID(); uid != "" {
		sel["regarding.uid"] = string(uid)
	}
	list, err := c.resourceFor(m, obj.GetNamespace()).List(ctx, metav1.ListOptions{
		Limit: maxDescribeEvents, FieldSelector: sel.AsSelector().String(),
	})
	if err != nil {
		return nil, nil
	}
	var out []virtkit.Event
	for _, it := range list.Items {
		data, err := json.Marshal(it.Object)
		if err != nil {
			continue
		}
		var e virtkit.Event
		if json.Unmarshal(data, &e) != nil {
			continue
		}
		out = append(out, e)
	}
	return out, nil
}

// describeObject writes obj kubectl describe's way; evs are its events.
func describeObject(w io.Writer, obj *unstructured.Unstructured, evs []virtkit.Event, now time.Time) {
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
