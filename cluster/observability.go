package cluster

import (
	"fmt"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/events"
)

// setUpEvents makes the controllers' recorder and the collector of expired
// events. Without Options.Events every component records into the
// cluster's store: the controllers as virtkit.ReportingController,
// each node agent as virtkit.ReportingNodeAgent with its node name as
// the reporting instance. The cluster runs the retries of failed event
// writes of the recorders it makes on its clock while it runs.
func (c *Cluster) setUpEvents() error {
	o := c.opts
	c.controllerEvents = o.Events
	if o.Events == nil {
		rec, err := events.NewRecorder(events.Options{Store: c.store, ReportingController: virtkit.ReportingController,
			ReportingInstance: "virt-controller", Now: o.Now, Clock: o.Clock, Logger: o.Logger})
		if err != nil {
			return fmt.Errorf("%w: events: %w", ErrInvalidOptions, err)
		}
		c.controllerEvents = rec
		c.recorders = append(c.recorders, rec)
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
