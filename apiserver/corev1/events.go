package corev1

import (
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// newEventREST serves a read-only core v1 view of the events.k8s.io/v1
// Events, as kube-apiserver serves both: kubectl describe reads an
// object's events from /api/v1 by involvedObject field selectors, and
// kubectl get events prefers the core group.
func newEventREST(st store.Store, clk clock.PassiveClock) *view {
	v := &view{
		st: st, resource: "events", singular: "event", shortNames: []string{"ev"}, namespaced: true,
		newObj:         func() runtime.Object { return &corev1.Event{} },
		newList:        func() runtime.Object { return &corev1.EventList{} },
		newSource:      func() virtkit.Object { return &virtkit.Event{} },
		newSourceList:  func() virtkit.ObjectList { return &virtkit.EventList{} },
		convert:        func(o virtkit.Object) runtime.Object { return CoreEvent(o.(*virtkit.Event)) },
		fields:         eventFields,
		TableConvertor: table{clock: clk, columns: eventColumns()},
	}
	return v.withHistory(st)
}

// eventFields are kube-apiserver's selectable fields of core v1 Events.
func eventFields(obj runtime.Object) fields.Set {
	e := obj.(*corev1.Event)
	r := e.InvolvedObject
	return fields.Set{
		"involvedObject.kind":            r.Kind,
		"involvedObject.namespace":       r.Namespace,
		"involvedObject.name":            r.Name,
		"involvedObject.uid":             string(r.UID),
		"involvedObject.apiVersion":      r.APIVersion,
		"involvedObject.resourceVersion": r.ResourceVersion,
		"involvedObject.fieldPath":       r.FieldPath,
		"reason":                         e.Reason,
		"reportingComponent":             e.ReportingController,
		"source":                         e.Source.Component,
		"type":                           e.Type,
	}
}

// eventSource is the component an event comes from: its core/v1 source,
// else its reporting controller.
func eventSource(e *virtkit.Event) string {
	if e.DeprecatedSource.Component != "" {
		return e.DeprecatedSource.Component
	}
	return e.ReportingController
}

// CoreEvent is the core/v1 form of an events.k8s.io/v1 Event, as
// kube-apiserver converts between the two.
func CoreEvent(e *virtkit.Event) *corev1.Event {
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

// eventColumns are kube-apiserver's printer columns of core/v1 Events
// (kubectl get events): LAST SEEN, TYPE, REASON, OBJECT, MESSAGE, and with
// -o wide SUBOBJECT, SOURCE, FIRST SEEN, COUNT, NAME.
func eventColumns() []column {
	ev := func(o runtime.Object) *corev1.Event { return o.(*corev1.Event) }
	str := func(name string, priority int32, f func(*corev1.Event) string) column {
		return column{def: metav1.TableColumnDefinition{Name: name, Type: "string", Priority: priority},
			cell: func(o runtime.Object, _ time.Time) any { return f(ev(o)) }}
	}
	return []column{
		{def: metav1.TableColumnDefinition{Name: "Last Seen", Type: "string"}, cell: func(o runtime.Object, now time.Time) any {
			e := ev(o)
			seen := age(e.LastTimestamp, now)
			if e.Count > 1 {
				seen += " (x" + strconv.Itoa(int(e.Count)) + " over " + age(e.FirstTimestamp, now) + ")"
			}
			return seen
		}},
		str("Type", 0, func(e *corev1.Event) string { return e.Type }),
		str("Reason", 0, func(e *corev1.Event) string { return e.Reason }),
		str("Object", 0, func(e *corev1.Event) string {
			return strings.ToLower(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name
		}),
		str("Subobject", 1, func(e *corev1.Event) string { return e.InvolvedObject.FieldPath }),
		str("Source", 1, func(e *corev1.Event) string {
			if h := e.Source.Host; h != "" {
				return e.Source.Component + ", " + h
			}
			return e.Source.Component
		}),
		str("Message", 0, func(e *corev1.Event) string { return e.Message }),
		{def: metav1.TableColumnDefinition{Name: "First Seen", Type: "string", Priority: 1}, cell: func(o runtime.Object, now time.Time) any {
			return age(ev(o).FirstTimestamp, now)
		}},
		str("Count", 1, func(e *corev1.Event) string { return strconv.Itoa(int(e.Count)) }),
		{def: metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Priority: 1},
			cell: func(o runtime.Object, _ time.Time) any { return ev(o).Name }},
	}
}
