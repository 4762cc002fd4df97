package main

import (
	"errors"

	"github.com/spf13/cobra"

	applycmd "github.com/virtkit/virtkit/cmd/virtkit/internal/apply"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/manifest"
)

func newApplyCmd() *cobra.Command {
	var (
		cf    clientFlags
		ns    namespaceFlags
		files []string
	)
	cmd := &cobra.Command{
		Use:   "apply -f PATH [-f PATH...]",
		Short: "Create or update objects from manifests in a running control plane",
		Long: `apply reads kubevirt.io/v1 manifests (YAML or JSON files, directories of them, or
- for standard input), applies defaults, validates them, and creates each
object or, if it exists, replaces its spec, labels and annotations (its status
is kept). A status in a manifest is ignored; reserved kubevirt.io/ labels
(kubevirt.io/nodeName and the like) are refused; a VMI's or a migration's
spec cannot change after creation. Objects without a namespace go to
"default". An object that fails is reported and the others are still applied.

It talks to the control plane's API, through a kubeconfig (--kubeconfig,
$KUBECONFIG or ~/.kube/config) or, with --store etcd://..., which wins, through
the API served inside this process over that store, as kubectl apply does for
custom resources: each object is created, or patched with a three-way JSON
merge patch against the manifest last applied (kept in the
kubectl.kubernetes.io/last-applied-configuration annotation), and reported as
created, configured or unchanged; objects without a namespace go to -n or the
kubeconfig context's namespace (else default); the server decodes, defaults
and validates.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o := &applycmd.Options{Out: cmd.OutOrStdout(), ErrOut: cmd.ErrOrStderr(), Files: files, Report: reportErr}
			if err := o.Complete(args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			objs, err := manifest.Read(cmd.InOrStdin(), files)
			if err != nil {
				return apiFail(cmd, err)
			}
			c, release, err := cf.connect(cmd)
			if err != nil {
				return apiFail(cmd, err)
			}
			defer release()
			o.Objects, o.API, o.Namespace = objs, c.kube(), c.namespace
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
