package main

import (
	"context"
	"errors"
	"io"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	deletecmd "github.com/virtkit/virtkit/cmd/virtkit/internal/delete"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/manifest"
	"github.com/virtkit/virtkit/store"
)

func newDeleteCmd() *cobra.Command {
	var (
		sf      storeFlags
		kf      kubeFlags
		ns      namespaceFlags
		files   []string
		cascade string
	)
	cmd := &cobra.Command{
		Use:   "delete (<vms|vmis|migrations|nodes|replicasets|...> NAME... | -f FILE)",
		Short: "Delete objects from a running control plane",
		Long: `delete removes objects by name. Deletion is graceful: an object with finalizers
(a VMI whose guest is still running) gets a deletion timestamp and disappears
once its controllers and node agent have released it.

With a kubeconfig (--kubeconfig, $KUBECONFIG or ~/.kube/config) and no --store,
delete goes through the API and also takes -f (the objects of manifests); an
object that does not exist is an error (NotFound), as with kubectl. --store
wins over a kubeconfig.

--cascade says what happens to the deleted object's dependents (the VMIs of a
VM or ReplicaSet, a VM's DataVolumes), as with kubectl: background (the
default) deletes the object at once and its dependents after it, foreground
deletes the dependents first, orphan leaves them (running) without the owner
reference.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o := &deletecmd.Options{Out: cmd.OutOrStdout(), ErrOut: cmd.ErrOrStderr(), Namespace: ns.namespace,
				Files: files, Cascade: cascade, UseAPI: useAPI(cmd, &kf), Report: reportErr}
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
				return err
			}
			c, err := kf.connect(cmd)
			if err != nil {
				return apiFail(cmd, err)
			}
			o.API, o.Namespace = c.kube(), c.namespace
			if err := o.Validate(); err != nil {
				return apiFail(cmd, err)
			}
			if len(files) > 0 {
				if o.Objects, err = manifest.Read(cmd.InOrStdin(), files); err != nil {
					return apiFail(cmd, err)
				}
			}
			err = o.Run(cmd.Context())
			if errors.Is(err, deletecmd.ErrReported) {
				return errReported
			}
			return apiFail(cmd, err)
		},
	}
	cmd.ValidArgsFunction = completeKindThenName(&kf, 0)
	sf.register(cmd)
	kf.register(cmd)
	ns.register(cmd, false)
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "delete the objects of these manifests (API only; repeatable)")
	cmd.Flags().StringVar(&cascade, "cascade", "background", `what happens to dependents: "background", "foreground" or "orphan"`)
	return cmd
}

// parseCascade is deletecmd.ParseCascade.
func parseCascade(v string) (metav1.DeletionPropagation, error) { return deletecmd.ParseCascade(v) }

// runDelete deletes through the store as `virtkit delete --store` does,
// with the store's default propagation.
func runDelete(ctx context.Context, st store.Store, w io.Writer, res kindResource, namespace string, names []string) error {
	return runDeleteCascade(ctx, st, w, res, namespace, names, "")
}

// runDeleteCascade is runDelete with --cascade's value.
func runDeleteCascade(ctx context.Context, st store.Store, w io.Writer, res kindResource, namespace string, names []string, cascade string) error {
	o := &deletecmd.Options{Out: w, Namespace: namespace, Store: st, Cascade: cascade}
	if err := o.Complete(append([]string{res.Names[0]}, names...)); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return err
	}
	return o.Run(ctx)
}
