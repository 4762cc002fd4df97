package apiserver

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/virtkit/virtkit"
)

// genericKind is one of virtkit's kinds as the generic server serves it:
// a registry.Store over the store, with its REST names, whether it has a
// status subresource and the fields a field selector may name.
type genericKind struct {
	gvk        schema.GroupVersionKind
	plural     string
	singular   string
	shortNames []string
	categories []string
	namespaced bool
	hasStatus  bool
	newObj     func() runtime.Object
	newList    func() runtime.Object
	// fields are the selectable fields besides metadata.name and
	// metadata.namespace.
	fields map[string]func(virtkit.Object) string
}

// fieldSet returns the selectable fields of obj.
func (k *genericKind) fieldSet(obj virtkit.Object) map[string]string {
	f := map[string]string{"metadata.name": obj.GetName()}
	if k.namespaced {
		f["metadata.namespace"] = obj.GetNamespace()
	}
	for name, get := range k.fields {
		f[name] = get(obj)
	}
	return f
}

// fieldLabels lists the selectable fields, sorted.
func (k *genericKind) fieldLabels() []string {
	out := []string{"metadata.name", "metadata.namespace"}
	for name := range k.fields {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// genericKinds are the kinds of virtkit.KnownKinds but those of the core
// group (served by package corev1 under /api/v1): every kind served from the
// store.
func genericKinds() ([]*genericKind, error) {
	var out []*genericKind
	for _, gvk := range virtkit.KnownKinds() {
		if gvk.Group == "" {
			continue
		}
		obj, err := virtkit.NewObject(gvk)
		if err != nil {
			return nil, err
		}
		list, err := virtkit.NewObjectList(gvk)
		if err != nil {
			return nil, err
		}
		objType, listType := reflect.TypeOf(obj).Elem(), reflect.TypeOf(list).Elem()
		_, hasStatus := objType.FieldByName("Status")
		names := virtkit.NamesOf(gvk.Kind)
		k := &genericKind{
			gvk:        gvk,
			plural:     names.Plural,
			singular:   names.Singular,
			shortNames: names.ShortNames,
			categories: names.Categories,
			namespaced: virtkit.IsNamespaced(gvk),
			hasStatus:  hasStatus,
			newObj:     func() runtime.Object { return reflect.New(objType).Interface().(runtime.Object) },
			newList:    func() runtime.Object { return reflect.New(listType).Interface().(runtime.Object) },
		}
		if gvk.Kind == virtkit.KindVirtualMachineInstance {
			k.fields = map[string]func(virtkit.Object) string{
				"status.nodeName": func(o virtkit.Object) string { return o.(*virtkit.VirtualMachineInstance).Status.NodeName },
				"status.phase":    func(o virtkit.Object) string { return string(o.(*virtkit.VirtualMachineInstance).Status.Phase) },
			}
		}
		if gvk.Kind == virtkit.KindEvent {
			k.fields = eventFields()
		}
		out = append(out, k)
	}
	return out, nil
}

// eventFields are the selectable fields of events.k8s.io Events: what they
// regard (virtkit describe selects by it), reason, type and reporting
// controller.
func eventFields() map[string]func(virtkit.Object) string {
	ref := func(f func(virtkit.ObjectReference) string) func(virtkit.Object) string {
		return func(o virtkit.Object) string { return f(o.(*virtkit.Event).Regarding) }
	}
	ev := func(f func(*virtkit.Event) string) func(virtkit.Object) string {
		return func(o virtkit.Object) string { return f(o.(*virtkit.Event)) }
	}
	return map[string]func(virtkit.Object) string{
		"regarding.kind":            ref(func(r virtkit.ObjectReference) string { return r.Kind }),
		"regarding.namespace":       ref(func(r virtkit.ObjectReference) string { return r.Namespace }),
		"regarding.name":            ref(func(r virtkit.ObjectReference) string { return r.Name }),
		"regarding.uid":             ref(func(r virtkit.ObjectReference) string { return string(r.UID) }),
		"regarding.apiVersion":      ref(func(r virtkit.ObjectReference) string { return r.APIVersion }),
		"regarding.resourceVersion": ref(func(r virtkit.ObjectReference) string { return r.ResourceVersion }),
		"regarding.fieldPath":       ref(func(r virtkit.ObjectReference) string { return r.FieldPath }),
		"reason":                    ev(func(e *virtkit.Event) string { return e.Reason }),
		"type":                      ev(func(e *virtkit.Event) string { return e.Type }),
		"reportingController":       ev(func(e *virtkit.Event) string { return e.ReportingController }),
	}
}

// newGenericScheme registers the kinds under their version and, as the
// same Go types, under their group's internal version (virtkit has no
// internal types: the library's conversions are copies), with autoscaling/v1
// Scale (the scale subresource), the meta types of every group version
// and the field selectors of each kind. Version priorities are set group by
// group: a scheme takes one group per SetVersionPriority call.
func newGenericScheme(kinds []*genericKind) (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	gvs := map[schema.GroupVersion]bool{}
	for _, k := range kinds {
		gv := k.gvk.GroupVersion()
		internal := schema.GroupVersion{Group: gv.Group, Version: runtime.APIVersionInternal}
		s.AddKnownTypeWithName(k.gvk, k.newObj())
		s.AddKnownTypeWithName(gv.WithKind(k.gvk.Kind+"List"), k.newList())
		s.AddKnownTypeWithName(internal.WithKind(k.gvk.Kind), k.newObj())
		s.AddKnownTypeWithName(internal.WithKind(k.gvk.Kind+"List"), k.newList())
		gvs[gv] = true
		allowed := map[string]bool{}
		for _, f := range k.fieldLabels() {
			allowed[f] = true
		}
		labels := strings.Join(k.fieldLabels(), ", ")
		if err := s.AddFieldLabelConversionFunc(k.gvk, func(label, value string) (string, string, error) {
			if !allowed[label] {
				return "", "", fmt.Errorf("field label not supported: %q (supported: %s)", label, labels)
			}
			return label, value, nil
		}); err != nil {
			return nil, err
		}
	}
	scale := autoscalingv1.SchemeGroupVersion
	s.AddKnownTypes(scale, &autoscalingv1.Scale{})
	s.AddKnownTypes(schema.GroupVersion{Group: scale.Group, Version: runtime.APIVersionInternal}, &autoscalingv1.Scale{})
	gvs[scale] = true
	ordered := make([]schema.GroupVersion, 0, len(gvs))
	for gv := range gvs {
		ordered = append(ordered, gv)
	}
	sort.Slice(ordered, func(i, j int) bool { return ordered[i].String() < ordered[j].String() })
	for _, gv := range ordered {
		metav1.AddToGroupVersion(s, gv)
		if err := s.SetVersionPriority(gv); err != nil {
			return nil, fmt.Errorf("scheme: %w", err)
		}
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s, nil
}

// groupsOf returns the group versions of the kinds, sorted.
func groupsOf(kinds []*genericKind) []schema.GroupVersion {
	seen := map[schema.GroupVersion]bool{}
	var out []schema.GroupVersion
	for _, k := range kinds {
		if gv := k.gvk.GroupVersion(); !seen[gv] {
			seen[gv] = true
			out = append(out, gv)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
