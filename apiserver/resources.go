package apiserver

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// resource is one kind the server serves: its REST names and how to make
// its objects and lists.
type resource struct {
	kind       store.Kind
	gvk        schema.GroupVersionKind
	plural     string
	singular   string
	shortNames []string
	namespaced bool
	hasStatus  bool
	// fieldLabels are the field selector labels this kind supports.
	fieldLabels map[string]func(virtkit.Object) string
	// readOnly views serve get, list and watch only.
	readOnly bool
	// view and listView, when set, turn stored objects into what clients
	// get (a core/v1 view of events.k8s.io Events).
	view     func(virtkit.Object) runtime.Object
	listView func(objs []virtkit.Object, rv, next string, remaining *int64) runtime.Object
	// columns, when set, are the printer columns instead of the kind's.
	columns []column
}

func (r *resource) gvr() schema.GroupVersionResource {
	return r.gvk.GroupVersion().WithResource(r.plural)
}

func (r *resource) groupResource() schema.GroupResource { return r.gvr().GroupResource() }

func (r *resource) newObject() virtkit.Object {
	obj := r.kind.New()
	obj.GetObjectKind().SetGroupVersionKind(r.gvk)
	return obj
}

func (r *resource) newList() virtkit.ObjectList {
	l := reflect.New(reflect.TypeOf(r.kind.List).Elem()).Interface().(virtkit.ObjectList)
	l.GetObjectKind().SetGroupVersionKind(r.gvk.GroupVersion().WithKind(r.gvk.Kind + "List"))
	return l
}

// shortNamesOf returns KubeVirt's and CDI's short names, as their CRDs
// declare them.
func shortNamesOf(kind string) []string {
	switch kind {
	case virtkit.KindVirtualMachine:
		return []string{"vm", "vms"}
	case virtkit.KindVirtualMachineInstance:
		return []string{"vmi", "vmis"}
	case virtkit.KindVirtualMachineInstanceMigration:
		return []string{"vmim", "vmims"}
	case virtkit.KindVirtualMachineInstanceReplicaSet:
		return []string{"vmirs", "vmirss"}
	case virtkit.KindDataVolume:
		return []string{"dv", "dvs"}
	case virtkit.KindEvent:
		return []string{"ev"}
	}
	return nil
}

// pluralOf lower-cases the kind and adds the English plural ending.
func pluralOf(kind string) string {
	l := strings.ToLower(kind)
	switch {
	case strings.HasSuffix(l, "y") && !strings.HasSuffix(l, "ey"):
		return l[:len(l)-1] + "ies"
	case strings.HasSuffix(l, "s"):
		return l + "es"
	}
	return l + "s"
}

// newResources builds the resource table from the store's kinds. Kinds
// without an apiVersion cannot be addressed over REST and are skipped.
func newResources(kinds []store.Kind) (map[schema.GroupVersionResource]*resource, error) {
	out := map[schema.GroupVersionResource]*resource{}
	for _, k := range kinds {
		if k.APIVersion == "" {
			continue
		}
		gv, err := schema.ParseGroupVersion(k.APIVersion)
		if err != nil {
			return nil, fmt.Errorf("kind %s: apiVersion %q: %w", k.Name, k.APIVersion, err)
		}
		_, hasStatus := reflect.TypeOf(k.Object).Elem().FieldByName("Status")
		r := &resource{
			kind:       k,
			gvk:        gv.WithKind(k.Name),
			plural:     pluralOf(k.Name),
			singular:   strings.ToLower(k.Name),
			shortNames: shortNamesOf(k.Name),
			namespaced: !k.ClusterScoped,
			hasStatus:  hasStatus,
			fieldLabels: map[string]func(virtkit.Object) string{
				"metadata.name":      func(o virtkit.Object) string { return o.GetName() },
				"metadata.namespace": func(o virtkit.Object) string { return o.GetNamespace() },
			},
		}
		if k.Name == virtkit.KindVirtualMachineInstance {
			r.fieldLabels["status.nodeName"] = func(o virtkit.Object) string {
				if vmi, ok := o.(*virtkit.VirtualMachineInstance); ok {
					return vmi.Status.NodeName
				}
				return ""
			}
			r.fieldLabels["status.phase"] = func(o virtkit.Object) string {
				if vmi, ok := o.(*virtkit.VirtualMachineInstance); ok {
					return string(vmi.Status.Phase)
				}
				return ""
			}
		}
		if _, dup := out[r.gvr()]; dup {
			return nil, fmt.Errorf("kind %s: resource %s served twice", k.Name, r.gvr())
		}
		out[r.gvr()] = r
	}
	return out, nil
}

// fieldSet returns the values of the kind's field selector labels for obj.
func (r *resource) fieldSet(obj virtkit.Object) fields.Set {
	s := make(fields.Set, len(r.fieldLabels))
	for k, f := range r.fieldLabels {
		s[k] = f(obj)
	}
	return s
}

// parseFieldSelector parses sel and checks every label it names is one the
// kind supports.
func (r *resource) parseFieldSelector(sel string) (fields.Selector, error) {
	if sel == "" {
		return nil, nil
	}
	fs, err := fields.ParseSelector(sel)
	if err != nil {
		return nil, err
	}
	for _, req := range fs.Requirements() {
		if _, ok := r.fieldLabels[req.Field]; !ok {
			names := make([]string, 0, len(r.fieldLabels))
			for n := range r.fieldLabels {
				names = append(names, n)
			}
			sort.Strings(names)
			return nil, fmt.Errorf("field label not supported: %q (supported: %s)", req.Field, strings.Join(names, ", "))
		}
	}
	return fs, nil
}
