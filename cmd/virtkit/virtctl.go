package main

import (
	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit/cmd/virtkit/internal/virtctl"
)

// subresourcesPath is where the API serves virtctl's subresources.
const subresourcesPath = virtctl.SubresourcesPath

const virtctlLong = `

It calls the control plane's API (subresources.kubevirt.io/v1, as virtctl
does) with the kubeconfig from --kubeconfig, $KUBECONFIG or ~/.kube/config.
Errors are the server's, printed as kubectl prints them, with exit status 1.`

// dryRunUsage is virtctl's --dry-run.
const dryRunUsage = "ask the server to check the request without doing it"

// newVirtctlCmds returns virtctl's verbs as subcommands (package virtctl).
func newVirtctlCmds() []*cobra.Command {
	var cmds []*cobra.Command
	for _, v := range virtctl.Verbs() {
		cmds = append(cmds, newVirtctlCmd(v))
	}
	return append(cmds, newVirtctlCmd(virtctl.Stop()), newVirtctlCmd(virtctl.Restart()), newVirtctlCmd(virtctl.MigrateCancel()))
}

// virtctlHelp is a verb's long description.
func virtctlHelp(v virtctl.Verb) string {
	switch {
	case v.Kind == virtctl.Force:
		long := "Stop a virtual machine: its instance is shut down gracefully."
		if v.Sub == "restart" {
			long = "Restart a virtual machine: its instance is shut down gracefully and a new one started."
		}
		return long + ` --force with
--grace-period N overrides the instance's termination grace period (0 kills it
at once).` + virtctlLong
	case v.Kind == virtctl.Cancel:
		return `Cancel a virtual machine's live migration by deleting its migration object that
has not finished yet.` + virtctlLong
	}
	return v.Short + "." + virtctlLong
}

// newVirtctlCmd wires one verb's flags into its virtctl.Options.
func newVirtctlCmd(v virtctl.Verb) *cobra.Command {
	var (
		kf kubeFlags
		ns namespaceFlags
		o  = virtctl.Options{Verb: v}
	)
	cmd := &cobra.Command{
		Use:   v.Use,
		Short: v.Short,
		Long:  virtctlHelp(v),
		Args:  cobra.ExactArgs(v.NArgs()),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Out, o.GracePeriodSet = cmd.OutOrStdout(), cmd.Flags().Changed("grace-period")
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
			o.API = c.kube()
			return apiFail(cmd, o.Run(cmd.Context()))
		},
	}
	cmd.ValidArgsFunction = completeNames(&kf, v.CompletionKind())
	kf.register(cmd)
	ns.register(cmd, false)
	if v.Kind == virtctl.Force {
		cmd.Flags().BoolVar(&o.Force, "force", false, v.Sub+" with --grace-period instead of the instance's termination grace period")
		cmd.Flags().Int64Var(&o.GracePeriod, "grace-period", 0, "seconds the guest gets to shut down (with --force)")
	}
	if v.DryRun {
		cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, dryRunUsage)
	}
	switch v.Sub {
	case "start":
		cmd.Flags().BoolVar(&o.Paused, "paused", false, "start the virtual machine with its guest paused")
	case "migrate":
		cmd.Flags().StringToStringVar(&o.AddedNodeSelector, "addedNodeSelector", nil,
			"key=value,...: node labels the migration's target must also have (narrows the VM's own constraints for this migration)")
	}
	return cmd
}
