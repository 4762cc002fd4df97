package main

import (
	"context"
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit"
	applycmd "github.com/virtkit/virtkit/cmd/virtkit/internal/apply"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/manifest"
	"github.com/virtkit/virtkit/store"
)

func newApplyCmd() *cobra.Command {
	var (
		sf    storeFlags
		kf    kubeFlags
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

With a kubeconfig (--kubeconfig, $KUBECONFIG or ~/.kube/config) and no --store,
apply goes through the API as kubectl apply does for custom resources: each
object is created, or patched with a three-way JSON merge patch against the
manifest last applied (kept in the kubectl.kubernetes.io/last-applied-configuration
annotation), and reported as created, configured or unchanged; objects without
a namespace go to -n or the kubeconfig context's namespace; the server decodes,
defaults and validates. --store wins over a kubeconfig.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o := &applycmd.Options{Out: cmd.OutOrStdout(), ErrOut: cmd.ErrOrStderr(), Files: files,
				NamespaceSet: cmd.Flags().Changed("namespace"), UseAPI: useAPI(cmd, &kf), Report: reportErr}
			if err := o.Complete(args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			if !o.UseAPI {
				objs, err := manifest.Decode(cmd.InOrStdin(), files)
				if err != nil {
					return err
				}
				st, err := sf.openShared(cmd.Context(), nil)
				if err != nil {
					return err
				}
				defer st.Close()
				o.StoreObjects, o.Store = objs, st
				return o.Run(cmd.Context())
			}
			objs, err := manifest.Read(cmd.InOrStdin(), files)
			if err != nil {
				return apiFail(cmd, err)
			}
			c, err := kf.connect(cmd)
			if err != nil {
				return apiFail(cmd, err)
			}
			o.Objects, o.API, o.Namespace = objs, c.kube(), c.namespace
			err = o.Run(cmd.Context())
			if errors.Is(err, applycmd.ErrReported) {
				return errReported
			}
			return apiFail(cmd, err)
		},
	}
	sf.register(cmd)
	kf.register(cmd)
	ns.register(cmd, false)
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "manifest file, directory or - (repeatable)")
	return cmd
}

// runApply applies objs through the store as `virtkit apply --store`
// does (applycmd.Options).
func runApply(ctx context.Context, st store.Store, w io.Writer, objs []virtkit.Object) error {
	o := &applycmd.Options{Out: w, Files: []string{"-"}, Store: st, StoreObjects: objs}
	if err := o.Complete(nil); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return err
	}
	return o.Run(ctx)
}
