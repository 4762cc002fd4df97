package events

import (
	"context"
	"fmt"

	"github.com/virtkit/virtkit"
)

// EventRecorder records Kubernetes-style events (virtkit.Event) about
// objects. [Recorder] implements it over a store; nil records nothing.
// Event must not block for long and never fails the caller.
type EventRecorder interface {
	Event(ctx context.Context, regarding virtkit.Object, eventType, reason, action, note string)
}

// RecordEvent records through rec when it is not nil, with a formatted
// note. Node agents and custom reconcilers use it like the built-ins do.
func RecordEvent(ctx context.Context, rec EventRecorder, regarding virtkit.Object, eventType, reason, action, format string, args ...any) {
	if rec == nil || regarding == nil {
		return
	}
	note := format
	if len(args) > 0 {
		note = fmt.Sprintf(format, args...)
	}
	rec.Event(ctx, regarding, eventType, reason, action, note)
}
