package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// errUnknownResource: the KIND argument names no kind virtkit serves.
var errUnknownResource = errors.New("unknown resource type")

// kindResource is one kind the get and delete commands serve.
type kindResource struct {
	// names are what the user may type; the first is the canonical plural.
	names      []string
	kind       string
	namespaced bool
	newObject  func() virtkit.Object
	newList    func() virtkit.ObjectList
	// table prints a list's items kubectl-style.
	table func(w io.Writer, list virtkit.ObjectList, now time.Time)
}

func resources() []kindResource {
	return []kindResource{
		{names: []string{"vms", "vm", "virtualmachine", "virtualmachines"}, kind: virtkit.KindVirtualMachine, namespaced: true,
			newObject: func() virtkit.Object { return &virtkit.VirtualMachine{} },
			newList:   func() virtkit.ObjectList { return &virtkit.VirtualMachineList{} },
			table: func(w io.Writer, l virtkit.ObjectList, now time.Time) {
				printVMs(w, l.(*virtkit.VirtualMachineList).Items, now)
			}},
		{names: []string{"vmis", "vmi", "virtualmachineinstance", "virtualmachineinstances"}, kind: virtkit.KindVirtualMachineInstance, namespaced: true,
			newObject: func() virtkit.Object { return &virtkit.VirtualMachineInstance{} },
			newList:   func() virtkit.ObjectList { return &virtkit.VirtualMachineInstanceList{} },
			table: func(w io.Writer, l virtkit.ObjectList, now time.Time) {
				printVMIs(w, l.(*virtkit.VirtualMachineInstanceList).Items, now)
			}},
		{names: []string{"migrations", "migration", "vmim", "vmims", "virtualmachineinstancemigration", "virtualmachineinstancemigrations"},
			kind: virtkit.KindVirtualMachineInstanceMigration, namespaced: true,
			newObject: func() virtkit.Object { return &virtkit.VirtualMachineInstanceMigration{} },
			newList:   func() virtkit.ObjectList { return &virtkit.VirtualMachineInstanceMigrationList{} },
			table: func(w io.Writer, l virtkit.ObjectList, now time.Time) {
				printMigrations(w, l.(*virtkit.VirtualMachineInstanceMigrationList).Items, now)
			}},
		{names: []string{"nodes", "node", "no"}, kind: virtkit.KindNode,
			newObject: func() virtkit.Object { return &virtkit.Node{} },
			newList:   func() virtkit.ObjectList { return &virtkit.NodeList{} },
			table: func(w io.Writer, l virtkit.ObjectList, now time.Time) {
				printNodes(w, l.(*virtkit.NodeList).Items, now)
			}},
		{names: []string{"replicasets", "replicaset", "vmirs", "rs", "virtualmachineinstancereplicaset", "virtualmachineinstancereplicasets"},
			kind: virtkit.KindVirtualMachineInstanceReplicaSet, namespaced: true,
			newObject: func() virtkit.Object { return &virtkit.VirtualMachineInstanceReplicaSet{} },
			newList:   func() virtkit.ObjectList { return &virtkit.VirtualMachineInstanceReplicaSetList{} },
			table: func(w io.Writer, l virtkit.ObjectList, now time.Time) {
				printReplicaSets(w, l.(*virtkit.VirtualMachineInstanceReplicaSetList).Items, now)
			}},
		{names: []string{"datavolumes", "datavolume", "dv", "dvs"}, kind: virtkit.KindDataVolume, namespaced: true,
			newObject: func() virtkit.Object { return &virtkit.DataVolume{} },
			newList:   func() virtkit.ObjectList { return &virtkit.DataVolumeList{} },
			table: func(w io.Writer, l virtkit.ObjectList, now time.Time) {
				printDataVolumes(w, l.(*virtkit.DataVolumeList).Items, now)
			}},
		{names: []string{"events", "event", "ev"}, kind: virtkit.KindEvent, namespaced: true,
			newObject: func() virtkit.Object { return &virtkit.Event{} },
			newList:   func() virtkit.ObjectList { return &virtkit.EventList{} },
			table: func(w io.Writer, l virtkit.ObjectList, now time.Time) {
				printEvents(w, l.(*virtkit.EventList).Items, now)
			}},
	}
}

// lookupResource finds the kind a user typed (case-insensitive).
func lookupResource(name string) (kindResource, error) {
	name = strings.ToLower(name)
	var known []string
	for _, r := range resources() {
		if slices.Contains(r.names, name) {
			return r, nil
		}
		known = append(known, r.names[0])
	}
	return kindResource{}, fmt.Errorf("%w %q (known: %s)", errUnknownResource, name, strings.Join(known, ", "))
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

Through the store (--store etcd://..., which wins over a kubeconfig): -o table
(default), json or yaml.`,
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
			return virtkit.EncodeFormat(jsonEscaper{w}, virtkit.FormatJSON, obj)
		case "yaml":
			return virtkit.Encode(w, obj)
		}
		list := res.newList()
		if err := setItems(list, []virtkit.Object{obj}); err != nil {
			return err
		}
		res.table(w, list, now)
		return nil
	}
	list := res.newList()
	if err := st.List(ctx, list, store.ListOptions{Namespace: namespace}); err != nil {
		return fmt.Errorf("list %s: %w", res.names[0], err)
	}
	switch output {
	case "json", "yaml":
		return writeListObject(w, list, output)
	}
	if reflect.ValueOf(list).Elem().FieldByName("Items").Len() == 0 {
		where := "in " + namespace + " namespace"
		if namespace == "" {
			where = ""
		}
		fmt.Fprintln(w, strings.TrimSpace("No resources found "+where+"."))
		return nil
	}
	res.table(w, list, now)
	return nil
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

// setItems puts objects into a typed list's Items.
func setItems(list virtkit.ObjectList, objs []virtkit.Object) error {
	items := reflect.ValueOf(list).Elem().FieldByName("Items")
	if !items.IsValid() {
		return fmt.Errorf("%T has no Items", list)
	}
	out := reflect.MakeSlice(items.Type(), 0, len(objs))
	for _, o := range objs {
		v := reflect.ValueOf(o)
		if v.Type() == items.Type().Elem() {
			out = reflect.Append(out, v)
		} else {
			out = reflect.Append(out, v.Elem())
		}
	}
	items.Set(out)
	return nil
}

// printMigrations writes `kubectl get vmim`.
func printMigrations(w io.Writer, migs []virtkit.VirtualMachineInstanceMigration, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tNAME\tPHASE\tVMI\tAGE")
	for _, m := range migs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", esc(m.Namespace), esc(m.Name), esc(string(m.Status.Phase)), esc(m.Spec.VMIName), age(m.CreationTimestamp, now))
	}
	tw.Flush()
}
