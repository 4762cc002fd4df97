package node

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/events"
	"github.com/virtkit/virtkit/tracing"
)

// event records an event about a VMI of this node (nil Events: none).
func (a *Agent) event(ctx context.Context, vmi *virtkit.VirtualMachineInstance, eventType, reason, action, format string, args ...any) {
	events.RecordEvent(ctx, a.opts.Events, vmi, eventType, reason, action, format, args...)
}

// span starts a span of the VMI's start trace on this node.
func (a *Agent) span(ctx context.Context, vmi *virtkit.VirtualMachineInstance, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	attrs = append(attrs, tracing.AttrNamespace.String(vmi.Namespace), tracing.AttrVMI.String(vmi.Name),
		tracing.AttrNode.String(a.opts.NodeName))
	return tracing.StartObjectSpan(ctx, a.opts.TracerProvider, vmi, virtkit.TraceParentAnnotation, name, attrs...)
}

// recordPhaseChange records the Started event of a status write that
// moved the VMI to Running, as virt-handler records it with the phase
// change it stores: an agent that adopts a guest started by a predecessor
// which died before it reported the start records it too.
func (a *Agent) recordPhaseChange(ctx context.Context, vmi *virtkit.VirtualMachineInstance, before virtkit.VirtualMachineInstancePhase) {
	if before != virtkit.Running && vmi.Status.Phase == virtkit.Running {
		a.event(ctx, vmi, virtkit.EventTypeNormal, virtkit.EventReasonStarted, "Start", "VirtualMachineInstance started")
	}
}

// recordFinished records a VMI's final phase: Stopped, a Warning when the
// guest failed.
func (a *Agent) recordFinished(ctx context.Context, vmi *virtkit.VirtualMachineInstance, phase virtkit.VirtualMachineInstancePhase, reason string) {
	if phase == virtkit.Failed {
		a.event(ctx, vmi, virtkit.EventTypeWarning, virtkit.EventReasonStopped, "Stop", "VirtualMachineInstance failed: %s", reason)
		return
	}
	a.event(ctx, vmi, virtkit.EventTypeNormal, virtkit.EventReasonStopped, "Stop", "VirtualMachineInstance stopped: %s", reason)
}

// noteAgentConnect records the guest agent's first connection of a VMI
// start: a "guestagent.connect" span from the boot (the VMI's Running
// transition) to now. It reads the conditions before they are updated.
func (a *Agent) noteAgentConnect(ctx context.Context, vmi *virtkit.VirtualMachineInstance, up bool, now time.Time) {
	if !up || a.opts.TracerProvider == nil {
		return
	}
	for _, c := range vmi.Status.Conditions {
		if c.Type == virtkit.VirtualMachineInstanceAgentConnected && c.Status == virtkit.ConditionTrue {
			return // not new
		}
	}
	start := now
	for _, t := range vmi.Status.PhaseTransitionTimestamps {
		if t.Phase == virtkit.Running {
			start = t.PhaseTransitionTimestamp.Time
		}
	}
	if start.After(now) {
		start = now
	}
	_, span := tracing.Tracer(a.opts.TracerProvider).Start(tracing.TraceContext(ctx, vmi, virtkit.TraceParentAnnotation),
		"guestagent.connect", trace.WithTimestamp(start), trace.WithAttributes(
			tracing.AttrNamespace.String(vmi.Namespace), tracing.AttrVMI.String(vmi.Name), tracing.AttrNode.String(a.opts.NodeName)))
	span.End(trace.WithTimestamp(now))
}
