package main

import (
	"context"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit/cmd/virtkit/internal/get"
	"github.com/virtkit/virtkit/store"
)

// errUnknownResource: the KIND argument names no kind virtkit serves.
var errUnknownResource = get.ErrUnknownResource

// kindResource is one kind the get and delete commands serve through the
// store (get.Resource).
type kindResource = get.Resource

// lookupResource finds the kind a user typed (get.LookupResource).
func lookupResource(name string) (kindResource, error) { return get.LookupResource(name) }

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
virtkit knows, by the same names; -o table (default), wide, json or yaml. The
tables have the columns the API serves.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o := &get.Options{Out: cmd.OutOrStdout(), Namespace: ns.namespace, AllNamespaces: ns.allNamespaces,
				Output: output, Selector: selector, Watch: watch, UseAPI: useAPI(cmd, &kf)}
			if !o.UseAPI {
				if err := o.Complete(args); err != nil {
					return err
				}
				if err := o.Validate(); err != nil {
					return err
				}
				st, err := sf.openShared(cmd.Context(), nil)
				if err != nil {
					return err
				}
				defer st.Close()
				o.Store = st
				return o.Run(cmd.Context())
			}
			if err := o.Complete(args); err != nil {
				return apiFail(cmd, err)
			}
			if err := o.Validate(); err != nil {
				return apiFail(cmd, err)
			}
			c, err := kf.connect(cmd)
			if err != nil {
				return apiFail(cmd, err)
			}
			o.API, o.Namespace = c.kube(), c.namespace
			return apiFail(cmd, o.Run(cmd.Context()))
		},
	}
	cmd.ValidArgsFunction = completeKindThenName(&kf, 1)
	sf.register(cmd)
	kf.register(cmd)
	ns.register(cmd, true)
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table, wide, name, json, yaml or jsonpath=TEMPLATE (name and jsonpath through the API)")
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "label selector, e.g. app=web,tier!=db (API only)")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "after listing, print changes until interrupted (API only)")
	return cmd
}

// runGet prints through the store as `virtkit get --store` does.
func runGet(ctx context.Context, st store.Store, w io.Writer, res kindResource, name string, ns namespaceFlags, output string, now time.Time) error {
	o := &get.Options{Out: w, Namespace: ns.namespace, AllNamespaces: ns.allNamespaces, Output: output, Store: st,
		Now: func() time.Time { return now }}
	args := []string{res.Names[0]}
	if name != "" {
		args = append(args, name)
	}
	if err := o.Complete(args); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return err
	}
	return o.Run(ctx)
}
