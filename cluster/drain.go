package cluster

import (
	"context"

	"github.com/virtkit/virtkit/controller"
)

// Cordon marks a host unschedulable; see [controller.Cordon].
func (c *Cluster) Cordon(ctx context.Context, node string) error {
	return controller.Cordon(ctx, c.store, node)
}

// Uncordon makes a host schedulable again and ends its drain; see
// [controller.Uncordon].
func (c *Cluster) Uncordon(ctx context.Context, node string) error {
	return controller.Uncordon(ctx, c.store, node)
}

// Drain cordons a host and evicts every VMI on it by its evictionStrategy
// until none is left or ctx ends; see [controller.Drain]. Unset options
// take the cluster's: its clock, its controllers' event recorder and the
// cluster-wide eviction strategy, read now from the KubeVirt object as
// kubectl drain's evictions through the API read it
// ([ClusterEvictionStrategy]; New writes Options.Defaults.EvictionStrategy
// there), so both drains treat a VMI without an evictionStrategy alike.
func (c *Cluster) Drain(ctx context.Context, node string, o controller.DrainOptions) error {
	if o.Clock == nil {
		o.Clock = c.opts.Clock
	}
	if o.Events == nil {
		o.Events = c.controllerEvents
	}
	if o.DefaultEvictionStrategy == "" {
		es, err := ClusterEvictionStrategy(ctx, c.store)
		if err != nil {
			return err
		}
		o.DefaultEvictionStrategy = es
	}
	return controller.Drain(ctx, c.store, node, o)
}
