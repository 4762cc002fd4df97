package main

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// completionTimeout bounds the API calls of one shell completion.
const completionTimeout = 5 * time.Second

// completeKindThenName completes get's and delete's arguments from the API:
// the served resources first, then the names of the chosen kind.
func completeKindThenName(kf *kubeFlags, maxNames int) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if !useAPI(cmd, kf) || (maxNames > 0 && len(args) > maxNames) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := kf.connect(cmd)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
		defer cancel()
		if len(args) == 0 {
			return servedResources(c, toComplete), cobra.ShellCompDirectiveNoFileComp
		}
		return objectNames(ctx, c, args[0], toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeNames completes the names of one kind (virtctl's verbs); with
// kind "", the first argument is vm or vmi.
func completeNames(kf *kubeFlags, kind string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		typed := kind
		if kind == "" {
			if len(args) == 0 {
				return []string{"vm", "vmi"}, cobra.ShellCompDirectiveNoFileComp
			}
			typed, args = args[0], args[1:]
		}
		if len(args) > 0 || !useAPI(cmd, kf) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := kf.connect(cmd)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
		defer cancel()
		return objectNames(ctx, c, typed, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// servedResources lists the resources (plural names) the server serves.
func servedResources(c *apiClient, prefix string) []string {
	_, lists, _ := c.discovery.ServerGroupsAndResources()
	var out []string
	for _, l := range lists {
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || !strings.HasPrefix(r.Name, prefix) {
				continue
			}
			if !slices.Contains(out, r.Name) {
				out = append(out, r.Name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// objectNames lists the names of the objects of a kind in the namespace.
func objectNames(ctx context.Context, c *apiClient, typed, prefix string) []string {
	m, err := c.mapping(typed)
	if err != nil {
		return nil
	}
	list, err := c.resourceFor(m, c.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var out []string
	for _, it := range list.Items {
		if strings.HasPrefix(it.GetName(), prefix) {
			out = append(out, it.GetName())
		}
	}
	return out
}
