package get

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/term"
	"github.com/virtkit/virtkit/printers"
	"github.com/virtkit/virtkit/store"
)

// ErrUnknownResource: the KIND argument names no kind virtkit serves.
var ErrUnknownResource = errors.New("unknown resource type")

// Resource is one kind served through a store: any kind virtkit knows, by
// the names of its kind table (virtkit.NamesOf).
type Resource struct {
	GVK  schema.GroupVersionKind
	Kind string
	// Names are what the user may type; the first is the plural.
	Names      []string
	Namespaced bool
}

// NewObject returns an empty object of the kind.
func (r Resource) NewObject() virtkit.Object {
	obj, _ := virtkit.NewObject(r.GVK) // r.GVK is a known kind
	return obj
}

// NewList returns an empty list of the kind.
func (r Resource) NewList() virtkit.ObjectList {
	l, _ := virtkit.NewObjectList(r.GVK)
	return l
}

// storeAliases are the names the CLI has always accepted through the store
// besides the kinds' own (virtkit.NamesOf).
var storeAliases = map[string]string{
	"migrations": virtkit.KindVirtualMachineInstanceMigration, "migration": virtkit.KindVirtualMachineInstanceMigration,
	"replicasets": virtkit.KindVirtualMachineInstanceReplicaSet, "replicaset": virtkit.KindVirtualMachineInstanceReplicaSet,
	"rs": virtkit.KindVirtualMachineInstanceReplicaSet, "no": virtkit.KindNode,
}

// LookupResource finds the kind a user typed (case-insensitive).
func LookupResource(name string) (Resource, error) {
	name = strings.ToLower(name)
	gvk, ok := virtkit.KindForName(name)
	var known []string
	for _, k := range virtkit.KnownKinds() {
		if kind, alias := storeAliases[name]; !ok && alias && k.Kind == kind {
			gvk, ok = k, true
		}
		known = append(known, virtkit.NamesOf(k.Kind).Plural)
	}
	if !ok {
		return Resource{}, fmt.Errorf("%w %q (known: %s)", ErrUnknownResource, name, strings.Join(known, ", "))
	}
	return Resource{GVK: gvk, Kind: gvk.Kind, Names: virtkit.NamesOf(gvk.Kind).Names(), Namespaced: virtkit.IsNamespaced(gvk)}, nil
}

// runStore prints the objects read from the store.
func (o *Options) runStore(ctx context.Context) error {
	res, w, st, now := o.resource, o.Out, o.Store, o.Now()
	if res.Kind == "" {
		return errors.New("get: Run before Validate")
	}
	namespace := o.Namespace
	if !res.Namespaced || o.AllNamespaces {
		namespace = ""
	}
	if o.Name != "" {
		obj := res.NewObject()
		if err := st.Get(ctx, store.Key{Namespace: namespace, Name: o.Name}, obj); err != nil {
			return fmt.Errorf("%s %s: %w", res.Kind, store.Key{Namespace: namespace, Name: o.Name}, err)
		}
		switch o.Output {
		case "json":
			return virtkit.EncodeFormat(term.JSONEscaper{W: w}, virtkit.FormatJSON, obj)
		case "yaml":
			return virtkit.Encode(w, obj)
		}
		return printObjects(printers.Printer{W: w, Wide: o.Output == "wide", Escape: term.Esc}, res.Kind, []virtkit.Object{obj}, now)
	}
	list := res.NewList()
	if err := st.List(ctx, list, store.ListOptions{Namespace: namespace}); err != nil {
		return fmt.Errorf("list %s: %w", res.Names[0], err)
	}
	switch o.Output {
	case "json", "yaml":
		return writeListObject(w, list, o.Output)
	}
	objs, err := ListItems(list)
	if err != nil {
		return err
	}
	if len(objs) == 0 {
		where := "in " + namespace + " namespace"
		if namespace == "" {
			where = ""
		}
		fmt.Fprintln(w, strings.TrimSpace("No resources found "+where+"."))
		return nil
	}
	return printObjects(printers.Printer{W: w, Wide: o.Output == "wide", WithNamespace: res.Namespaced && namespace == "", Escape: term.Esc},
		res.Kind, objs, now)
}

// listObject is kubectl's List: apiVersion v1, kind List, items with their
// own apiVersion and kind.
type listObject struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ListMeta   `json:"metadata"`
	Items      []json.RawMessage `json:"items"`
}

func writeListObject(w io.Writer, list virtkit.ObjectList, output string) error {
	out := listObject{APIVersion: "v1", Kind: "List", Metadata: metav1.ListMeta{ResourceVersion: list.GetResourceVersion()},
		Items: []json.RawMessage{}}
	objs, err := ListItems(list)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if gvk, ok := virtkit.GVKOf(obj); ok && obj.GetObjectKind().GroupVersionKind().Empty() {
			obj.GetObjectKind().SetGroupVersionKind(gvk)
		}
		data, err := json.Marshal(obj)
		if err != nil {
			return fmt.Errorf("encode %s: %w", obj.GetName(), err)
		}
		out.Items = append(out.Items, data)
	}
	var data []byte
	if output == "yaml" {
		data, err = term.YAML(out)
	} else {
		data, err = json.MarshalIndent(out, "", "  ")
		data = append(term.EscapeJSON(data), '\n')
	}
	if err != nil {
		return fmt.Errorf("encode list: %w", err)
	}
	_, err = w.Write(data)
	return err
}

// ListItems returns the objects of a typed list.
func ListItems(list virtkit.ObjectList) ([]virtkit.Object, error) {
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, fmt.Errorf("%T: %w", list, err)
	}
	out := make([]virtkit.Object, 0, len(items))
	for i, it := range items {
		obj, ok := it.(virtkit.Object)
		if !ok {
			return nil, fmt.Errorf("list item %d of %T is not an object", i, list)
		}
		out = append(out, obj)
	}
	return out, nil
}

// PrintObjects writes objects of a kind as `kubectl get` prints them: the
// kind's printer columns (the API server's, package printers), a NAMESPACE
// column first with withNamespace. Objects are sorted by namespace and
// name, events by when they were last seen.
func PrintObjects(w io.Writer, kind string, objs []virtkit.Object, withNamespace bool, now time.Time) error {
	return printObjects(printers.Printer{W: w, WithNamespace: withNamespace, Escape: term.Esc}, kind, objs, now)
}

// printObjects prints objects of a kind with p, sorted as PrintObjects
// says.
func printObjects(p printers.Printer, kind string, objs []virtkit.Object, now time.Time) error {
	sort.SliceStable(objs, func(i, j int) bool {
		return objs[i].GetNamespace()+"/"+objs[i].GetName() < objs[j].GetNamespace()+"/"+objs[j].GetName()
	})
	if kind == virtkit.KindEvent {
		sort.SliceStable(objs, func(i, j int) bool {
			a, b := objs[i].(*virtkit.Event).LastSeen(), objs[j].(*virtkit.Event).LastSeen()
			return a.Before(&b)
		})
	}
	return p.Print(printers.NewTable(printers.Columns(kind), objs, printers.TableOptions{Now: now, Include: printers.IncludeObject}))
}
