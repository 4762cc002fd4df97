package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit/store"
)

func newDeleteCmd() *cobra.Command {
	var (
		sf    storeFlags
		kf    kubeFlags
		ns    namespaceFlags
		files []string
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
wins over a kubeconfig.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if useAPI(cmd, &kf) {
				return deleteAPICmd(cmd, &kf, args, files)
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
			return runDelete(cmd.Context(), st, cmd.OutOrStdout(), res, ns.namespace, args[1:])
		},
	}
	cmd.ValidArgsFunction = completeKindThenName(&kf, 0)
	sf.register(cmd)
	kf.register(cmd)
	ns.register(cmd, false)
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "delete the objects of these manifests (API only; repeatable)")
	return cmd
}

func runDelete(ctx context.Context, st store.Store, w io.Writer, res kindResource, namespace string, names []string) error {
	if !res.namespaced {
		namespace = ""
	}
	for _, name := range names {
		obj := res.newObject()
		obj.SetNamespace(namespace)
		obj.SetName(name)
		if err := st.Delete(ctx, obj, store.DeleteOptions{}); err != nil {
			return fmt.Errorf("%s %s: %w", res.kind, store.Key{Namespace: namespace, Name: name}, err)
		}
		fmt.Fprintf(w, "%s/%s deleted\n", strings.ToLower(res.kind), name)
	}
	return nil
}
