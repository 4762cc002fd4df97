package apiserver

import (
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/virtkit/virtkit"
)

// coreGV is the core API group's version, served under /api/v1.
var coreGV = schema.GroupVersion{Version: "v1"}

// readOnlyVerbs are the verbs of a read-only view.
var readOnlyVerbs = []string{"get", "list", "watch"}

// addCoreEvents adds a read-only core/v1 view of the events.k8s.io/v1
// Events, as kube-apiserver serves both: kubectl describe reads an object's
// events from /api/v1 by involvedObject field selectors, and kubectl get
// events prefers the core group.
func addCoreEvents(res map[schema.GroupVersionResource]*resource) {
	src, ok := res[virtkit.EventsSchemeGroupVersion.WithResource("events")]
	if !ok {
		return
	}
	r := &resource{
		kind:        src.kind,
		gvk:         coreGV.WithKind(virtkit.KindEvent),
		plural:      src.plural,
		singular:    src.singular,
		shortNames:  src.shortNames,
		namespaced:  src.namespaced,
		readOnly:    true,
		columns:     coreEventColumns(),
		view:        func(o virtkit.Object) runtime.Object { return coreEvent(o) },
		listView:    coreEventList,
		fieldLabels: map[string]func(virtkit.Object) string{},
	}
	for k, f := range src.fieldLabels {
		r.fieldLabels[k] = f
	}
	ref := func(f func(virtkit.ObjectReference) string) func(virtkit.Object) string {
		return func(o virtkit.Object) string {
			if e, ok := o.(*virtkit.Event); ok {
				return f(e.Regarding)
			}
			return ""
		}
	}
	ev := func(f func(*virtkit.Event) string) func(virtkit.Object) string {
		return func(o virtkit.Object) string {
			if e, ok := o.(*virtkit.Event); ok {
				return f(e)
			}
			return ""
		}
	}
	for k, f := range map[string]func(virtkit.Object) string{
		"involvedObject.kind":            ref(func(r virtkit.ObjectReference) string { return r.Kind }),
		"involvedObject.namespace":       ref(func(r virtkit.ObjectReference) string { return r.Namespace }),
		"involvedObject.name":            ref(func(r virtkit.ObjectReference) string { return r.Name }),
		"involvedObject.uid":             ref(func(r virtkit.ObjectReference) string { return string(r.UID) }),
		"involvedObject.apiVersion":      ref(func(r virtkit.ObjectReference) string { return r.APIVersion }),
		"involvedObject.resourceVersion": ref(func(r virtkit.ObjectReference) string { return r.ResourceVersion }),
		"involvedObject.fieldPath":       ref(func(r virtkit.ObjectReference) string { return r.FieldPath }),
		"reason":                         ev(func(e *virtkit.Event) string { return e.Reason }),
		"type":                           ev(func(e *virtkit.Event) string { return e.Type }),
		"source":                         ev(func(e *virtkit.Event) string { return eventSource(e) }),
		"reportingComponent":             ev(func(e *virtkit.Event) string { return e.ReportingController }),
	} {
		r.fieldLabels[k] = f
		// The events.k8s.io resource selects by the same fields under
		// their events.k8s.io names.
		if name, ok := strings.CutPrefix(k, "involvedObject."); ok {
			src.fieldLabels["regarding."+name] = f
		}
	}
	res[r.gvr()] = r
}

// eventSource is the component an event comes from: its core/v1 source,
// else its reporting controller.
func eventSource(e *virtkit.Event) string {
	if e.DeprecatedSource.Component != "" {
		return e.DeprecatedSource.Component
	}
	return e.ReportingController
}

// coreEvent is the core/v1 form of an events.k8s.io/v1 Event, as
// kube-apiserver converts between the two.
func coreEvent(o virtkit.Object) *corev1.Event {
	e, ok := o.(*virtkit.Event)
	if !ok {
		return &corev1.Event{}
	}
	out := &corev1.Event{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta: *e.ObjectMeta.DeepCopy(),
		InvolvedObject: corev1.ObjectReference{
			Kind: e.Regarding.Kind, Namespace: e.Regarding.Namespace, Name: e.Regarding.Name, UID: e.Regarding.UID,
			APIVersion: e.Regarding.APIVersion, ResourceVersion: e.Regarding.ResourceVersion, FieldPath: e.Regarding.FieldPath,
		},
		Reason:              e.Reason,
		Message:             e.Note,
		Source:              corev1.EventSource{Component: eventSource(e), Host: e.DeprecatedSource.Host},
		FirstTimestamp:      e.DeprecatedFirstTimestamp,
		LastTimestamp:       e.LastSeen(),
		Count:               e.Count(),
		Type:                e.Type,
		EventTime:           e.EventTime,
		Action:              e.Action,
		ReportingController: e.ReportingController,
		ReportingInstance:   e.ReportingInstance,
	}
	if out.FirstTimestamp.IsZero() {
		out.FirstTimestamp = metav1.NewTime(e.EventTime.Time)
	}
	if e.Series != nil {
		out.Series = &corev1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	if r := e.Related; r != nil {
		out.Related = &corev1.ObjectReference{
			Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, UID: r.UID,
			APIVersion: r.APIVersion, ResourceVersion: r.ResourceVersion, FieldPath: r.FieldPath,
		}
	}
	return out
}

func coreEventList(objs []virtkit.Object, rv, next string, remaining *int64) runtime.Object {
	l := &corev1.EventList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "EventList"}, Items: []corev1.Event{}}
	l.ResourceVersion, l.Continue, l.RemainingItemCount = rv, next, remaining
	for _, o := range objs {
		l.Items = append(l.Items, *coreEvent(o))
	}
	return l
}

// out is what a client gets for obj: the resource's view of it, else obj.
func (r *resource) out(obj virtkit.Object) runtime.Object {
	if r.view != nil {
		return r.view(obj)
	}
	return obj
}

// coreEventColumns are kube-apiserver's printer columns of core/v1 Events
// (kubectl get events): LAST SEEN, TYPE, REASON, OBJECT, MESSAGE, and with
// -o wide SUBOBJECT, SOURCE, FIRST SEEN, COUNT, NAME.
func coreEventColumns() []column {
	ev := func(o virtkit.Object) *virtkit.Event {
		if e, ok := o.(*virtkit.Event); ok {
			return e
		}
		return &virtkit.Event{}
	}
	since := func(t metav1.Time, now time.Time) string {
		if t.IsZero() {
			return "<unknown>"
		}
		return duration.HumanDuration(now.Sub(t.Time))
	}
	first := func(e *virtkit.Event) metav1.Time {
		if !e.DeprecatedFirstTimestamp.IsZero() {
			return e.DeprecatedFirstTimestamp
		}
		return metav1.NewTime(e.EventTime.Time)
	}
	return []column{
		{def: metav1.TableColumnDefinition{Name: "Last Seen", Type: "string"}, cell: func(o virtkit.Object, now time.Time) any {
			e := ev(o)
			seen := since(e.LastSeen(), now)
			if n := e.Count(); n > 1 {
				seen += " (x" + strconv.Itoa(int(n)) + " over " + since(first(e), now) + ")"
			}
			return seen
		}},
		col("Type", "string", 0, func(o virtkit.Object) any { return ev(o).Type }),
		col("Reason", "string", 0, func(o virtkit.Object) any { return ev(o).Reason }),
		col("Object", "string", 0, func(o virtkit.Object) any {
			r := ev(o).Regarding
			return strings.ToLower(r.Kind) + "/" + r.Name
		}),
		col("Subobject", "string", 1, func(o virtkit.Object) any { return ev(o).Regarding.FieldPath }),
		col("Source", "string", 1, func(o virtkit.Object) any {
			e := ev(o)
			if h := e.DeprecatedSource.Host; h != "" {
				return eventSource(e) + ", " + h
			}
			return eventSource(e)
		}),
		col("Message", "string", 0, func(o virtkit.Object) any { return ev(o).Note }),
		{def: metav1.TableColumnDefinition{Name: "First Seen", Type: "string", Priority: 1}, cell: func(o virtkit.Object, now time.Time) any {
			return since(first(ev(o)), now)
		}},
		col("Count", "string", 1, func(o virtkit.Object) any { return strconv.Itoa(int(ev(o).Count())) }),
		{def: metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Priority: 1},
			cell: func(o virtkit.Object, _ time.Time) any { return o.GetName() }},
	}
}

// servesCore reports whether the server has a core (/api/v1) resource.
func (s *Server) servesCore() bool {
	for gvr := range s.resources {
		if gvr.Group == "" {
			return true
		}
	}
	return false
}
