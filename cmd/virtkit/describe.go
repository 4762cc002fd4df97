package main

import (
	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit/cmd/virtkit/internal/describe"
)

func newDescribeCmd() *cobra.Command {
	var (
		kf       kubeFlags
		ns       namespaceFlags
		selector string
	)
	cmd := &cobra.Command{
		Use:   "describe <vm|vmi|vmim|dv|node|...> [NAME...]",
		Short: "Show the details of objects and their events, kubectl-style",
		Long: `describe prints each named object as kubectl describe prints a custom
resource: name, namespace, labels and annotations, then its metadata, spec and
status (conditions and migration state included) field by field, then the
events that regard it, oldest first. Without a NAME it describes every object
of the kind in the namespace (-l narrows them by label).

It talks to the control plane's API with the kubeconfig from --kubeconfig,
$KUBECONFIG or ~/.kube/config. Errors are the server's, printed as kubectl
prints them, with exit status 1.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o := &describe.Options{Out: cmd.OutOrStdout(), ErrOut: cmd.ErrOrStderr(), Selector: selector}
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
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "describe the objects with these labels, e.g. app=web")
	cmd.ValidArgsFunction = completeKindThenName(&kf, 0)
	kf.register(cmd)
	ns.register(cmd, false)
	return cmd
}
