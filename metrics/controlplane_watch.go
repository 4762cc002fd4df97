package metrics

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// Watcher streams changes of a kind; store.Store satisfies it.
type Watcher interface {
	Watch(ctx context.Context, list virtkit.ObjectList, opts store.WatchOptions) (<-chan store.Event, error)
}

// rewatchDelay is the pause before a watch that ended is opened again.
const rewatchDelay = time.Second

// Start observes VMI and migration phase transitions as they happen, as
// KubeVirt's virt-controller does from its informers, so the transition
// histograms also count objects that change and go away between two
// scrapes (a stopped VMI's transitions after its deletion, for
// kubevirt_vmi_phase_transition_time_from_deletion_seconds). Without
// Start the histograms are fed at scrape time only. It needs
// ControlPlaneSources.Objects to be a [Watcher] (a store.Store is), and
// blocks until ctx ends, then returns nil.
func (c *ControlPlaneCollector) Start(ctx context.Context) error {
	w, ok := c.src.Objects.(Watcher)
	if !ok {
		return fmt.Errorf("%w: ControlPlaneCollector.Start: Objects is not a Watcher", errInvalidOptions)
	}
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		c.watch(ctx, w, &virtkit.VirtualMachineInstanceList{}, func(obj virtkit.Object, alive map[types.UID]bool) {
			if vmi, ok := obj.(*virtkit.VirtualMachineInstance); ok {
				c.observeVMI(vmi, alive)
			}
		})
		return nil
	})
	g.Go(func() error {
		c.watch(ctx, w, &virtkit.VirtualMachineInstanceMigrationList{}, func(obj virtkit.Object, alive map[types.UID]bool) {
			if m, ok := obj.(*virtkit.VirtualMachineInstanceMigration); ok {
				c.observeMigration(m, alive)
			}
		})
		return nil
	})
	return g.Wait()
}

// watch feeds every object event of list's kind to observe (under c.mu)
// until ctx ends, opening the watch again when it ends. Deleted objects
// are observed too (their last status may hold transitions no event
// showed before); the next scrape forgets them (the transition logs keep
// what was observed until a listing no longer shows the object, so a
// scrape listed just before a deletion cannot count a transition twice).
func (c *ControlPlaneCollector) watch(ctx context.Context, w Watcher, list virtkit.ObjectList, observe func(virtkit.Object, map[types.UID]bool)) {
	for ctx.Err() == nil {
		events, err := w.Watch(ctx, list, store.WatchOptions{})
		if err != nil {
			c.log.Warn("metrics: watching for phase transitions", "error", err)
		} else {
			for ev := range events {
				if ev.Object == nil {
					continue
				}
				c.mu.Lock()
				observe(ev.Object, map[types.UID]bool{})
				c.mu.Unlock()
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(rewatchDelay):
		}
	}
}
