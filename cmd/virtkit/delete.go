package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
			policy, err := parseCascade(cascade)
			if err != nil {
				return err
			}
			if useAPI(cmd, &kf) {
				return deleteAPICmd(cmd, &kf, args, files, policy)
			}
			if len(files) > 0 {
				return errors.New("-f: needs the API (a kubeconfig), not --store")
			}
			if len(args) < 2 {
				return fmt.Errorf("requires KIND and at least one NAME, received %d arg(s)", len(args))
			}
			res, err := lookupResource(args[0])
			if err != nil {
				return err
			}
			st, err := sf.openShared(cmd.Context(), nil)
			if err != nil {
				return err
			}
			defer st.Close()
			return runDeleteWith(cmd.Context(), st, cmd.OutOrStdout(), res, ns.namespace, args[1:], store.DeleteOptions{PropagationPolicy: &policy})
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

// parseCascade maps --cascade to a propagation policy, as kubectl does
// (including its deprecated true = background and false = orphan).
func parseCascade(v string) (metav1.DeletionPropagation, error) {
	switch strings.ToLower(v) {
	case "background", "true":
		return metav1.DeletePropagationBackground, nil
	case "foreground":
		return metav1.DeletePropagationForeground, nil
	case "orphan", "false":
		return metav1.DeletePropagationOrphan, nil
	}
	return "", fmt.Errorf("--cascade: %q: want background, foreground or orphan", v)
}

func runDelete(ctx context.Context, st store.Store, w io.Writer, res kindResource, namespace string, names []string) error {
	return runDeleteWith(ctx, st, w, res, namespace, names, store.DeleteOptions{})
}

func runDeleteWith(ctx context.Context, st store.Store, w io.Writer, res kindResource, namespace string, names []string, opts store.DeleteOptions) error {
	if !res.Namespaced {
		namespace = ""
	}
	for _, name := range names {
		obj := res.NewObject()
		obj.SetNamespace(namespace)
		obj.SetName(name)
		if err := st.Delete(ctx, obj, opts); err != nil {
			return fmt.Errorf("%s %s: %w", res.Kind, store.Key{Namespace: namespace, Name: name}, err)
		}
		fmt.Fprintf(w, "%s/%s deleted\n", strings.ToLower(res.Kind), name)
	}
	return nil
}
