package main

import (
	"context"
	"log/slog"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/events"
	"github.com/virtkit/virtkit/store"
)

// startNodeEvents makes the event recorder of the node agent and import
// worker of a virtkit node process, reporting as the node agent with the
// node's name as its instance (as the embedded cluster's agents do), and
// runs its retries of failed writes until ctx ends: without them a write
// the store missed (a store restart, a short partition) is lost. wait
// returns once the retries have stopped.
func startNodeEvents(ctx context.Context, st store.Store, nodeName string, log *slog.Logger) (rec *events.Recorder, wait func(), err error) {
	rec, err = events.NewRecorder(events.Options{Store: st, ReportingController: virtkit.ReportingNodeAgent,
		ReportingInstance: nodeName, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := rec.Start(ctx); err != nil {
			log.Error("event recorder stopped", "err", err)
		}
	}()
	return rec, func() { <-done }, nil
}
