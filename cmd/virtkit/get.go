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
		"namespace of the objects; when not given, the kubeconfig context's namespace (else default)")
	if withAll {
		cmd.Flags().BoolVarP(&n.allNamespaces, "all-namespaces", "A", false, "list the objects of every namespace")
	}
}

// storeTransportHelp is what every verb's help says of its transport.
const storeTransportHelp = `It talks to the control plane's API: the one a kubeconfig names
(--kubeconfig, $KUBECONFIG or ~/.kube/config, as virtkit controller
--write-kubeconfig writes it) or, with --store etcd://HOST:PORT (which wins
over a kubeconfig), an API server this command starts over that etcd for
its own use. Errors are the server's, printed as kubectl prints them, with
exit status 1.`

func newGetCmd() *cobra.Command {
	var (
		cf       connFlags
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
or in all namespaces (-A). Any kind the server serves, by its resource name,
singular or short name; -o wide|name|json|yaml|jsonpath=TEMPLATE, the default
and wide tables being the server's (KubeVirt's printer columns); -l selects by
label; -w keeps printing changes until interrupted.

` + storeTransportHelp,
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
			c, done, err := cf.connect(cmd)
			if err != nil {
				return apiFail(cmd, err)
			}
			defer done()
			o.API, o.Namespace = c, c.Namespace
			return apiFail(cmd, o.Run(cmd.Context()))
		},
	}
	cmd.ValidArgsFunction = completeKindThenName(&cf.kf, 1)
	cf.register(cmd)
	ns.register(cmd, true)
	cmd.Flags().StringVarP(&output, "output", "o", "", "wide, name, json, yaml or jsonpath=TEMPLATE (default: the server's table)")
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "label selector, e.g. app=web,tier!=db")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "after listing, print changes until interrupted")
	return cmd
}
