package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit/store"
)

func newDeleteCmd() *cobra.Command {
	var (
		sf storeFlags
		ns namespaceFlags
	)
	cmd := &cobra.Command{
		Use:   "delete <vms|vmis|migrations|nodes|replicasets> NAME...",
		Short: "Delete objects from a running control plane",
		Long: `delete removes objects by name. Deletion is graceful: an object with finalizers
(a VMI whose guest is still running) gets a deletion timestamp and disappears
once its controllers and node agent have released it.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
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
	sf.register(cmd)
	ns.register(cmd, false)
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
