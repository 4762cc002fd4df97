package main

import (
	"errors"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	deletecmd "github.com/virtkit/virtkit/cmd/virtkit/internal/delete"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/manifest"
)

func newDeleteCmd() *cobra.Command {
	var (
		cf      clientFlags
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

It talks to the control plane's API, through a kubeconfig (--kubeconfig,
$KUBECONFIG or ~/.kube/config) or, with --store etcd://..., which wins, through
the API served inside this process over that store. -f deletes the objects of
manifests; an object that does not exist is an error (NotFound), as with
kubectl.

--cascade says what happens to the deleted object's dependents (the VMIs of a
VM or ReplicaSet, a VM's DataVolumes), as with kubectl: background (the
default) deletes the object at once and its dependents after it, foreground
deletes the dependents first, orphan leaves them (running) without the owner
reference.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o := &deletecmd.Options{Out: cmd.OutOrStdout(), ErrOut: cmd.ErrOrStderr(), Namespace: ns.namespace,
				Files: files, Cascade: cascade, Report: reportErr}
			if err := o.Complete(args); err != nil {
				return err
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
	cmd.ValidArgsFunction = completeKindThenName(&cf.kf, 0)
	cf.register(cmd)
	ns.register(cmd, false)
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "delete the objects of these manifests (repeatable)")
	cmd.Flags().StringVar(&cascade, "cascade", "background", `what happens to dependents: "background", "foreground" or "orphan"`)
	return cmd
}

// parseCascade is deletecmd.ParseCascade.
func parseCascade(v string) (metav1.DeletionPropagation, error) { return deletecmd.ParseCascade(v) }
