package storetest

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/virtkit/virtkit/store"
)

// Widget is the suite's namespaced test kind. Its spec holds a map and a
// slice so deep-copy mistakes show.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetSpec   `json:"spec,omitempty"`
	Status            WidgetStatus `json:"status,omitempty"`
}

// WidgetSpec is Widget's desired state.
type WidgetSpec struct {
	Size  int               `json:"size,omitempty"`
	Tags  []string          `json:"tags,omitempty"`
	Attrs map[string]string `json:"attrs,omitempty"`
}

// WidgetStatus is Widget's observed state.
type WidgetStatus struct {
	Phase string   `json:"phase,omitempty"`
	Count int      `json:"count,omitempty"`
	Notes []string `json:"notes,omitempty"`
}

// WidgetList is a list of Widgets.
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

// Gadget is the suite's cluster-scoped test kind.
type Gadget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetSpec   `json:"spec,omitempty"`
	Status            WidgetStatus `json:"status,omitempty"`
}

// GadgetList is a list of Gadgets.
type GadgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Gadget `json:"items"`
}

// Kinds returns the suite's test kinds; the store under test must register
// them (store.Options{Kinds: storetest.Kinds()}).
func Kinds() []store.Kind {
	return []store.Kind{
		{Name: "Widget", APIVersion: "test.virtkit.io/v1", Object: &Widget{}, List: &WidgetList{}},
		{Name: "Gadget", APIVersion: "test.virtkit.io/v1", Object: &Gadget{}, List: &GadgetList{}, ClusterScoped: true},
	}
}

func (in *WidgetSpec) deepCopyInto(out *WidgetSpec) {
	*out = *in
	if in.Tags != nil {
		out.Tags = append([]string(nil), in.Tags...)
	}
	if in.Attrs != nil {
		out.Attrs = make(map[string]string, len(in.Attrs))
		for k, v := range in.Attrs {
			out.Attrs[k] = v
		}
	}
}

func (in *WidgetStatus) deepCopyInto(out *WidgetStatus) {
	*out = *in
	if in.Notes != nil {
		out.Notes = append([]string(nil), in.Notes...)
	}
}

// DeepCopyInto copies in into out deeply.
func (in *Widget) DeepCopyInto(out *Widget) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.deepCopyInto(&out.Spec)
	in.Status.deepCopyInto(&out.Status)
}

// DeepCopy returns a deep copy.
func (in *Widget) DeepCopy() *Widget {
	if in == nil {
		return nil
	}
	out := new(Widget)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *Widget) DeepCopyObject() runtime.Object { return in.DeepCopy() }

// DeepCopyObject implements runtime.Object.
func (in *WidgetList) DeepCopyObject() runtime.Object {
	if in == nil {
		return nil
	}
	out := &WidgetList{TypeMeta: in.TypeMeta}
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]Widget, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}

// DeepCopyInto copies in into out deeply.
func (in *Gadget) DeepCopyInto(out *Gadget) {
	*out = *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.deepCopyInto(&out.Spec)
	in.Status.deepCopyInto(&out.Status)
}

// DeepCopyObject implements runtime.Object.
func (in *Gadget) DeepCopyObject() runtime.Object {
	if in == nil {
		return nil
	}
	out := new(Gadget)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *GadgetList) DeepCopyObject() runtime.Object {
	if in == nil {
		return nil
	}
	out := &GadgetList{TypeMeta: in.TypeMeta}
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]Gadget, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}
