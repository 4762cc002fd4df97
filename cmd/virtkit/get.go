package main

import (
	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit/cmd/virtkit/internal/get"
)

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
		cf       clientFlags
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

It talks to the control plane's API, through a kubeconfig (--kubeconfig,
$KUBECONFIG or ~/.kube/config) or, with --store etcd://..., which wins, through
the API served inside this process over that store. Any kind the server
serves, by its resource name, singular or short name; -o
wide|name|json|yaml|jsonpath=TEMPLATE, the default and wide tables being the
server's (KubeVirt's printer columns); -l selects by label; -w keeps printing
changes until interrupted.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o := &get.Options{Out: cmd.OutOrStdout(), Namespace: ns.namespace, AllNamespaces: ns.allNamespaces,
				Output: output, Selector: selector, Watch: watch}
			if err := o.Complete(args); err != nil {
				return apiFail(cmd, err)
			}
			if err := o.Validate(); err != nil {
				return apiFail(cmd, err)
			}
			c, release, err := cf.connect(cmd)
			if err != nil {
				return apiFail(cmd, err)
			}
			defer release()
			o.API, o.Namespace = c.kube(), c.namespace
			return apiFail(cmd, o.Run(cmd.Context()))
		},
	}
	cmd.ValidArgsFunction = completeKindThenName(&cf.kf, 1)
	cf.register(cmd)
	ns.register(cmd, true)
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table, wide, name, json, yaml or jsonpath=TEMPLATE")
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "label selector, e.g. app=web,tier!=db")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "after listing, print changes until interrupted")
	return cmd
}
