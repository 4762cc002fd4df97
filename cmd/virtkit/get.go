package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// errUnknownResource: the KIND argument names no kind virtkit serves.
var errUnknownResource = errors.New("unknown resource type")

// kindResource is one kind the get and delete commands serve through the
// store: any kind virtkit knows, by the names of its kind table
// (virtkit.NamesOf).
type kindResource struct {
	gvk  schema.GroupVersionKind
	kind string
	// names are what the user may type; the first is the plural.
	names      []string
	namespaced bool
}

func (r kindResource) newObject() virtkit.Object {
	obj, _ := virtkit.NewObject(r.gvk) // r.gvk is a known kind
	return obj
}

func (r kindResource) newList() virtkit.ObjectList {
	l, _ := virtkit.NewObjectList(r.gvk)
	return l
}

// storeAliases are the names the CLI has always accepted through the store
// besides the kinds' own (virtkit.NamesOf).
var storeAliases = map[string]string{
	"migrations": virtkit.KindVirtualMachineInstanceMigration, "migration": virtkit.KindVirtualMachineInstanceMigration,
	"replicasets": virtkit.KindVirtualMachineInstanceReplicaSet, "replicaset": virtkit.KindVirtualMachineInstanceReplicaSet,
	"rs": virtkit.KindVirtualMachineInstanceReplicaSet, "no": virtkit.KindNode,
}

// lookupResource finds the kind a user typed (case-insensitive).
func lookupResource(name string) (kindResource, error) {
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
		return kindResource{}, fmt.Errorf("%w %q (known: %s)", errUnknownResource, name, strings.Join(known, ", "))
	}
	return kindResource{gvk: gvk, kind: gvk.Kind, names: virtkit.NamesOf(gvk.Kind).Names(), namespaced: virtkit.IsNamespaced(gvk)}, nil
}

// namespaceFlags are -n and -A.
type namespaceFlags struct {
	namespace     string
	allNamespaces bool
}

func (n *namespaceFlags) register(cmd *cobra.Command, withAll bool) {
	cmd.Flags().StringVarP(&n.namespace, "namespace", "n", "default",
		"namespace of the objects; through the API, when not given, the kubeconfig context's namespace (else default)")
	if withAll {
		cmd.Flags().BoolVarP(&n.allNamespaces, "all-namespaces", "A", false, "list the objects of every namespace")
	}
}

func newGetCmd() *cobra.Command {
	var (
		sf       storeFlags
		kf       kubeFlags
		ns       namespaceFlags
		output   string
		selector string
		watch    bool
	)
	cmd := &cobra.Command{
		Use:   "get <vms|vmis|migrations|nodes|replicasets|events|...> [NAME]",
		Short: "Show objects of a running control plane, kubectl-style",
		Long: `get prints objects of the control plane: one object by NAME, or every object of
the kind in the namespace (-n, default the kubeconfig context's or "default")
or in all namespaces (-A).

Through the API (a kubeconfig from --kubeconfig, $KUBECONFIG or ~/.kube/config,
used unless --store is given): any kind the server serves, by its resource
name, singular or short name; -o wide|name|json|yaml|jsonpath=TEMPLATE, the
default and wide tables being the server's (KubeVirt's printer columns);
-l selects by label; -w keeps printing changes until interrupted.

Through the store (--store etcd://..., which wins over a kubeconfig): any kind
virtkit knows, by the same names; -o table (default), json or yaml. The table
has the columns the API serves.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if useAPI(cmd, &kf) {
				return getAPICmd(cmd, &kf, args, ns.allNamespaces, output, selector, watch)
			}
			if selector != "" || watch {
				return errors.New("-l, -w: need the API (a kubeconfig), not --store")
			}
			res, err := lookupResource(args[0])
			if err != nil {
				return err
			}
			name := ""
			if len(args) == 2 {
				name = args[1]
			}
			if output != "table" && output != "json" && output != "yaml" {
				return fmt.Errorf("--output: want table, json or yaml, got %q", output)
			}
			if name != "" && ns.allNamespaces {
				return errors.New("-A: cannot be combined with a NAME")
			}
			st, err := sf.openShared(cmd.Context(), nil)
			if err != nil {
				return err
			}
			defer st.Close()
			return runGet(cmd.Context(), st, cmd.OutOrStdout(), res, name, ns, output, time.Now())
		},
	}
	cmd.ValidArgsFunction = completeKindThenName(&kf, 1)
	sf.register(cmd)
	kf.register(cmd)
	ns.register(cmd, true)
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table, wide, name, json, yaml or jsonpath=TEMPLATE (wide, name and jsonpath through the API)")
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "label selector, e.g. app=web,tier!=db (API only)")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "after listing, print changes until interrupted (API only)")
	return cmd
}

func runGet(ctx context.Context, st store.Store, w io.Writer, res kindResource, name string, ns namespaceFlags, output string, now time.Time) error {
	namespace := ns.namespace
	if !res.namespaced || ns.allNamespaces {
		namespace = ""
	}
	if name != "" {
		obj := res.newObject()
		if err := st.Get(ctx, store.Key{Namespace: namespace, Name: name}, obj); err != nil {
			return fmt.Errorf("%s %s: %w", res.kind, store.Key{Namespace: namespace, Name: name}, err)
		}
		switch output {
		case "json":
			return virtkit.EncodeFormat(jsonEscaper{W: w}, virtkit.FormatJSON, obj)
		case "yaml":
			return virtkit.Encode(w, obj)
		}
		return printTable(w, res.kind, []virtkit.Object{obj}, false, now)
	}
	list := res.newList()
	if err := st.List(ctx, list, store.ListOptions{Namespace: namespace}); err != nil {
		return fmt.Errorf("list %s: %w", res.names[0], err)
	}
	switch output {
	case "json", "yaml":
		return writeListObject(w, list, output)
	}
	objs, err := listItems(list)
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
	return printTable(w, res.kind, objs, res.namespaced && namespace == "", now)
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
	items := reflect.ValueOf(list).Elem().FieldByName("Items")
	for i := range items.Len() {
		obj, ok := items.Index(i).Addr().Interface().(virtkit.Object)
		if !ok {
			return fmt.Errorf("list item %d of %T is not an object", i, list)
		}
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
	var err error
	if output == "yaml" {
		data, err = yamlOut(out)
	} else {
		data, err = json.MarshalIndent(out, "", "  ")
		data = append(escapeJSON(data), '\n')
	}
	if err != nil {
		return fmt.Errorf("encode list: %w", err)
	}
	_, err = w.Write(data)
	return err
}
