package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return errors.New("-f: required (a file, a directory or - for standard input)")
			}
			if useAPI(cmd, &kf) {
				return applyAPICmd(cmd, &kf, files)
			}
			if cmd.Flags().Changed("namespace") {
				return errors.New("-n: needs the API (a kubeconfig); with --store a manifest's namespace, else default, is used")
			}
			objs, err := decodeFilesFrom(cmd.InOrStdin(), files)
			if err != nil {
				return err
			}
			st, err := sf.openShared(cmd.Context(), nil)
			if err != nil {
				return err
			}
			defer st.Close()
			return runApply(cmd.Context(), st, cmd.OutOrStdout(), objs)
		},
	}
	sf.register(cmd)
	kf.register(cmd)
	ns.register(cmd, false)
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "manifest file, directory or - (repeatable)")
	return cmd
}

// runApply applies objs one by one and reports each kubectl-style
// ("virtualmachine/vm1 created"). An object that fails is reported and the
// rest are still applied; the returned error joins every failure.
func runApply(ctx context.Context, st store.Store, w io.Writer, objs []virtkit.Object) error {
	var errs []error
	for _, obj := range objs {
		gvk, _ := virtkit.GVKOf(obj)
		ns := obj.GetNamespace()
		if ns == "" && virtkit.IsNamespaced(gvk) {
			ns = "default"
		}
		existing, err := virtkit.NewObject(gvk)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		verb := "configured"
		if err := st.Get(ctx, store.Key{Namespace: ns, Name: obj.GetName()}, existing); errors.Is(err, store.ErrNotFound) {
			verb = "created"
		} else if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := cluster.ApplyOne(ctx, st, obj); err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		fmt.Fprintf(w, "%s/%s %s\n", strings.ToLower(gvk.Kind), obj.GetName(), verb)
	}
	return errors.Join(errs...)
}
