package main

import (
	"errors"

	"github.com/spf13/cobra"

	applycmd "github.com/virtkit/virtkit/cmd/virtkit/internal/apply"
)

func newApplyCmd() *cobra.Command {
	var (
		cf    connFlags
		ns    namespaceFlags
		files []string
	)
	cmd := &cobra.Command{
		Use:   "apply -f PATH [-f PATH...]",
		Short: "Create or update objects from manifests in a running control plane",
		Long: `apply reads kubevirt.io/v1 manifests (YAML or JSON files, directories of them, or
- for standard input) and applies them as kubectl apply does for custom
resources: each object is created, or patched with a three-way JSON merge patch
against the manifest last applied (kept in the kubectl.kubernetes.io/last-applied-configuration
annotation), and reported as created, configured or unchanged. The server
decodes, defaults and validates them: a status in a manifest is ignored;
reserved kubevirt.io/ labels (kubevirt.io/nodeName and the like) are refused; a
VMI's or a migration's spec cannot change after creation. Objects without a
namespace go to -n or the kubeconfig context's namespace (else "default"). An
object that fails is reported and the others are still applied.

` + storeTransportHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o := &applycmd.Options{Out: cmd.OutOrStdout(), ErrOut: cmd.ErrOrStderr(), Files: files, Report: reportErr}
			if err := o.Complete(args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			objs, err := readManifests(cmd.InOrStdin(), files)
			if err != nil {
				return apiFail(cmd, err)
			}
			c, done, err := cf.connect(cmd)
			if err != nil {
				return apiFail(cmd, err)
			}
			defer done()
			o.Objects, o.API, o.Namespace = objs, c, c.Namespace
			err = o.Run(cmd.Context())
			if errors.Is(err, applycmd.ErrReported) {
				return errReported
			}
			return apiFail(cmd, err)
		},
	}
	cf.register(cmd)
	ns.register(cmd, false)
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "manifest file, directory or - (repeatable)")
	return cmd
}
