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
			ReportingInstance: controllerInstance, Clock: o.Clock, Logger: o.Logger})
		if err != nil {
			return fmt.Errorf("%w: events: %w", errInvalidOptions, err)
		}
		c.controllerEvents = rec
		c.recorders[controllerInstance] = rec
	}
	if o.EventTTL < 0 {
		return nil
	}
	col, err := events.NewCollector(events.CollectorOptions{Store: c.store, TTL: o.EventTTL, Clock: o.Clock, Logger: o.Logger})
	if err != nil {
		return fmt.Errorf("%w: events: %w", errInvalidOptions, err)
	}
	c.collector = col
	return nil
}

// controllerInstance is the reporting instance of the controllers' events.
const controllerInstance = "virt-controller"

// EventStats returns the counters of each event recorder the cluster made,
// by reporting instance: a node's name for its agent, "virt-controller"
// for the controllers. A recorder given in Options is not included. An
// event a recorder gave up on (Stats.GaveUp: the store refused it past
// its retries, as client-go's recorder gives up after its tries) is not
// in the store.
func (c *Cluster) EventStats() map[string]events.Stats {
	out := make(map[string]events.Stats, len(c.recorders))
	for name, rec := range c.recorders {
		out[name] = rec.Stats()
	}
	return out
}
