package cluster

import (
	"fmt"

	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/events"
	"github.com/virtkit/virtkit/node"
)

// setUpEvents makes the controllers' recorder and the collector of expired
// events. Without Options.Events every component records into the
// cluster's store: the controllers as controller.ReportingController,
// each node agent as controller.ReportingNodeAgent with its node name as
// the reporting instance.
func (c *Cluster) setUpEvents() error {
	o := c.opts
	c.controllerEvents = o.Events
	if o.Events == nil {
		rec, err := events.NewRecorder(events.Options{Store: c.store, ReportingController: controller.ReportingController,
			ReportingInstance: "virt-controller", Now: o.Now, Logger: o.Logger})
		if err != nil {
			return fmt.Errorf("%w: events: %w", ErrInvalidOptions, err)
		}
		c.controllerEvents = rec
	}
	if o.EventTTL < 0 {
		return nil
	}
	col, err := events.NewCollector(events.CollectorOptions{Store: c.store, TTL: o.EventTTL, Now: o.Now, Logger: o.Logger})
	if err != nil {
		return fmt.Errorf("%w: events: %w", ErrInvalidOptions, err)
	}
	c.collector = col
	return nil
}

// nodeObservability gives a node agent the cluster's event recorder (its
// own store-backed one by default) and tracer provider, unless its options
// already name theirs.
func (c *Cluster) nodeObservability(name string, no *node.Options) error {
	if no.TracerProvider == nil {
		no.TracerProvider = c.opts.TracerProvider
	}
	if no.Events != nil {
		return nil
	}
	if c.opts.Events != nil {
		no.Events = c.opts.Events
		return nil
	}
	rec, err := events.NewRecorder(events.Options{Store: c.store, ReportingController: controller.ReportingNodeAgent,
		ReportingInstance: name, Now: c.opts.Now, Logger: no.Logger})
	if err != nil {
		return fmt.Errorf("%w: node %s events: %w", ErrInvalidOptions, name, err)
	}
	no.Events = rec
	return nil
}
