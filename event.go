package virtkit

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The Event kind mirrors Kubernetes' events.k8s.io/v1 Event field for field,
// with the same JSON names, so kubectl-style tools and Kubernetes-based
// callers read virtkit's events unchanged, without pulling k8s.io/api into
// the object model.

// EventsGroupName is the API group of the Event kind.
const EventsGroupName = "events.k8s.io"

// EventsSchemeGroupVersion is the group version of the Event kind.
var EventsSchemeGroupVersion = schema.GroupVersion{Group: EventsGroupName, Version: "v1"}

// KindEvent is the kind name of Event.
const KindEvent = "Event"

// Event types (Event.Type).
const (
	EventTypeNormal  = "Normal"
	EventTypeWarning = "Warning"
)

// Bounds of an Event's fields, as kube-apiserver enforces them.
const (
	// MaxEventNoteLength bounds Event.Note in bytes.
	MaxEventNoteLength = 1024
	// MaxEventReasonLength bounds Event.Reason and Event.Action.
	MaxEventReasonLength = 128
)

// Event reports something that happened to an object (events.k8s.io/v1,
// namespaced): a controller created a VMI, a node agent started a domain, a
// migration failed. Events are informative and short-lived: stores keep them
// for a bounded time (see the events package). Repeats of the same event are
// one object whose Series counts them.
//
// +kubebuilder:object:generate=false
type Event struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the object's name, namespace, labels, annotations and
	// the other fields every object has.
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// EventTime is when the event was first observed.
	EventTime metav1.MicroTime `json:"eventTime"`
	// Series is set when the event has been observed more than once; nil
	// for a singleton.
	Series *EventSeries `json:"series,omitempty"`
	// ReportingController names the component that emitted the event
	// ("virtkit.io/virt-controller").
	ReportingController string `json:"reportingController,omitempty"`
	// ReportingInstance identifies the emitting instance (a host name).
	ReportingInstance string `json:"reportingInstance,omitempty"`
	// Action is what was done or failed to be done ("Create", "Start").
	Action string `json:"action,omitempty"`
	// Reason is why, machine-readable CamelCase ("SuccessfulCreate").
	Reason string `json:"reason,omitempty"`
	// Regarding is the object this event is about.
	Regarding ObjectReference `json:"regarding,omitempty"`
	// Related is a secondary object (the VMI a VM created, say).
	Related *ObjectReference `json:"related,omitempty"`
	// Note is a human-readable description, at most 1 kB.
	Note string `json:"note,omitempty"`
	// Type is Normal or Warning.
	Type string `json:"type,omitempty"`
	// DeprecatedSource is the core/v1 source, kept for older clients. virtkit
	// keeps all the deprecated fields current, so either form reads the same.
	DeprecatedSource EventSource `json:"deprecatedSource,omitempty"`
	// DeprecatedFirstTimestamp is the core/v1 firstTimestamp, kept for older
	// clients.
	DeprecatedFirstTimestamp metav1.Time `json:"deprecatedFirstTimestamp,omitempty"`
	// DeprecatedLastTimestamp is the core/v1 lastTimestamp, kept for older
	// clients.
	DeprecatedLastTimestamp metav1.Time `json:"deprecatedLastTimestamp,omitempty"`
	// DeprecatedCount is the core/v1 count, kept for older clients.
	DeprecatedCount int32 `json:"deprecatedCount,omitempty"`
}

// EventSeries counts the repeats of an event.
//
// +kubebuilder:object:generate=false
type EventSeries struct {
	// Count is how many times the event has been observed.
	Count int32 `json:"count"`
	// LastObservedTime is when it was last observed.
	LastObservedTime metav1.MicroTime `json:"lastObservedTime"`
}

// EventSource is the core/v1 source of an event.
//
// +kubebuilder:object:generate=false
type EventSource struct {
	// Component is the component that reported the event.
	Component string `json:"component,omitempty"`
	// Host is the node the reporting component runs on.
	Host string `json:"host,omitempty"`
}

// ObjectReference points at an object of any kind (core/v1
// ObjectReference).
//
// +kubebuilder:object:generate=false
type ObjectReference struct {
	// Kind is the object's kind.
	Kind string `json:"kind,omitempty"`
	// Namespace is the object's namespace.
	Namespace string `json:"namespace,omitempty"`
	// Name is the object's name.
	Name string `json:"name,omitempty"`
	// UID is the object's UID.
	UID types.UID `json:"uid,omitempty"`
	// APIVersion is the object's API version.
	APIVersion string `json:"apiVersion,omitempty"`
	// ResourceVersion is the object's resource version when it was referenced.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// FieldPath points into the object, when the reference is about one part
	// of it.
	FieldPath string `json:"fieldPath,omitempty"`
}

// EventList is a list of events.
//
// +kubebuilder:object:generate=false
type EventList struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the list's resource version and continuation token.
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the events.
	Items []Event `json:"items"`
}

// LastSeen is when the event was last observed: its series' last
// observation, else its deprecated last timestamp, else its event time.
func (e *Event) LastSeen() metav1.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return metav1.NewTime(e.Series.LastObservedTime.Time)
	case !e.DeprecatedLastTimestamp.IsZero():
		return e.DeprecatedLastTimestamp
	}
	return metav1.NewTime(e.EventTime.Time)
}

// Count is how many times the event was observed (at least 1).
func (e *Event) Count() int32 {
	if e.Series != nil && e.Series.Count > 0 {
		return e.Series.Count
	}
	if e.DeprecatedCount > 0 {
		return e.DeprecatedCount
	}
	return 1
}

// ReferenceTo returns a reference to obj with its kind and apiVersion from
// its Go type (GVKOf) or, for foreign kinds, its TypeMeta.
func ReferenceTo(obj Object) ObjectReference {
	gvk, ok := GVKOf(obj)
	if !ok {
		gvk = obj.GetObjectKind().GroupVersionKind()
	}
	return ObjectReference{
		Kind:            gvk.Kind,
		APIVersion:      gvk.GroupVersion().String(),
		Namespace:       obj.GetNamespace(),
		Name:            obj.GetName(),
		UID:             obj.GetUID(),
		ResourceVersion: obj.GetResourceVersion(),
	}
}

func validateEvent(e *Event) field.ErrorList {
	errs := validateObjectMeta(&e.ObjectMeta, true, field.NewPath("metadata"))
	if e.EventTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
	}
	if e.ReportingController == "" {
		errs = append(errs, field.Required(field.NewPath("reportingController"), ""))
	}
	if e.Reason == "" {
		errs = append(errs, field.Required(field.NewPath("reason"), ""))
	} else if len(e.Reason) > MaxEventReasonLength {
		errs = append(errs, field.TooLong(field.NewPath("reason"), "", MaxEventReasonLength))
	}
	if len(e.Action) > MaxEventReasonLength {
		errs = append(errs, field.TooLong(field.NewPath("action"), "", MaxEventReasonLength))
	}
	if len(e.Note) > MaxEventNoteLength {
		errs = append(errs, field.TooLong(field.NewPath("note"), "", MaxEventNoteLength))
	}
	if e.Type != EventTypeNormal && e.Type != EventTypeWarning {
		errs = append(errs, field.NotSupported(field.NewPath("type"), e.Type, []string{EventTypeNormal, EventTypeWarning}))
	}
	if e.Regarding.Kind == "" {
		errs = append(errs, field.Required(field.NewPath("regarding", "kind"), ""))
	}
	if e.Regarding.Name == "" {
		errs = append(errs, field.Required(field.NewPath("regarding", "name"), ""))
	}
	if e.Series != nil && e.Series.Count < 2 {
		errs = append(errs, field.Invalid(field.NewPath("series", "count"), e.Series.Count, "must be at least 2 (a singleton has no series)"))
	}
	return errs
}

// DeepCopyInto copies the receiver into out.
func (in *Event) DeepCopyInto(out *Event) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.EventTime.DeepCopyInto(&out.EventTime)
	if in.Series != nil {
		s := *in.Series
		in.Series.LastObservedTime.DeepCopyInto(&s.LastObservedTime)
		out.Series = &s
	}
	if in.Related != nil {
		r := *in.Related
		out.Related = &r
	}
	in.DeprecatedFirstTimestamp.DeepCopyInto(&out.DeprecatedFirstTimestamp)
	in.DeprecatedLastTimestamp.DeepCopyInto(&out.DeprecatedLastTimestamp)
}

// DeepCopy returns a deep copy of the event.
func (in *Event) DeepCopy() *Event {
	if in == nil {
		return nil
	}
	out := new(Event)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *Event) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies the receiver into out.
func (in *EventList) DeepCopyInto(out *EventList) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]Event, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a deep copy of the list.
func (in *EventList) DeepCopy() *EventList {
	if in == nil {
		return nil
	}
	out := new(EventList)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *EventList) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}
