package controller

import (
	"context"
	"maps"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/tracing"
)

// traceRoot starts and ends the root span of a migration ("migration") the
// first time the reconciler sees it, and stores its context on the
// migration; it reports whether the migration changed. Migrations already
// final are not traced.
func (r *MigrationReconciler) traceRoot(ctx context.Context, mig *virtkit.VirtualMachineInstanceMigration) bool {
	if r.o.TracerProvider == nil || mig.IsFinal() || mig.Annotations[virtkit.TraceParentAnnotation] != "" {
		return false
	}
	rctx, root := r.o.tracer().Start(ctx, "migration", trace.WithNewRoot(), trace.WithAttributes(
		tracing.AttrNamespace.String(mig.Namespace), tracing.AttrMigration.String(mig.Name), tracing.AttrVMI.String(mig.Spec.VMIName)))
	defer root.End()
	return tracing.SetTraceParent(rctx, mig, virtkit.TraceParentAnnotation)
}

// copyMigrationTraceParent hands the migration's trace context to the
// VMI, where the source node's migration engine finds it.
func copyMigrationTraceParent(mig *virtkit.VirtualMachineInstanceMigration, vmi *virtkit.VirtualMachineInstance) {
	tp := mig.Annotations[virtkit.TraceParentAnnotation]
	if tp == "" || vmi.Annotations[virtkit.MigrationTraceParentAnnotation] == tp {
		return
	}
	a := maps.Clone(vmi.Annotations)
	if a == nil {
		a = map[string]string{}
	}
	a[virtkit.MigrationTraceParentAnnotation] = tp
	vmi.Annotations = a
}

// recordMigrationPhase records the events of the migration's new phase and
// one span ("migration.phase", attribute virtkit.phase) for every phase it
// left since prev, timed by its phase transition timestamps; a final phase
// gets an instant span of its own.
func (r *MigrationReconciler) recordMigrationPhase(ctx context.Context, mig *virtkit.VirtualMachineInstanceMigration, prev virtkit.VirtualMachineInstanceMigrationPhase) {
	switch mig.Status.Phase {
	case virtkit.MigrationPreparingTarget:
		target := ""
		if ms := mig.Status.MigrationState; ms != nil {
			target = ms.TargetNode
		}
		r.o.event(ctx, mig, virtkit.EventTypeNormal, virtkit.EventReasonSuccessfulHandOver, "Migrate",
			"Migration target on node %s is ready for preparation by its node agent", target)
	case virtkit.MigrationSucceeded:
		r.o.event(ctx, mig, virtkit.EventTypeNormal, virtkit.EventReasonSuccessfulMigration, "Migrate", "Source node reported migration succeeded")
	case virtkit.MigrationFailed:
		reason := ""
		if ms := mig.Status.MigrationState; ms != nil {
			reason = ms.FailureReason
		}
		r.o.event(ctx, mig, virtkit.EventTypeWarning, virtkit.EventReasonFailedMigration, "Migrate", "Migration failed: %s", reason)
	}
	if r.o.TracerProvider == nil || mig.Annotations[virtkit.TraceParentAnnotation] == "" {
		return
	}
	ts := mig.Status.PhaseTransitionTimestamps
	from := 0
	if prev != "" {
		for i := len(ts) - 1; i >= 0; i-- {
			if ts[i].Phase == prev {
				from = i
				break
			}
		}
	}
	pctx := tracing.TraceContext(ctx, mig, virtkit.TraceParentAnnotation)
	tr := r.o.tracer()
	for i := from; i < len(ts); i++ {
		last := i == len(ts)-1
		if last && !mig.IsFinal() {
			break // still in it
		}
		end := ts[i].PhaseTransitionTimestamp.Time
		if !last {
			end = ts[i+1].PhaseTransitionTimestamp.Time
		}
		attrs := []attribute.KeyValue{tracing.AttrMigration.String(mig.Name), tracing.AttrPhase.String(string(ts[i].Phase))}
		if ms := mig.Status.MigrationState; ms != nil {
			attrs = append(attrs, attribute.String("virtkit.source_node", ms.SourceNode), attribute.String("virtkit.target_node", ms.TargetNode))
		}
		_, span := tr.Start(pctx, "migration.phase", trace.WithTimestamp(ts[i].PhaseTransitionTimestamp.Time), trace.WithAttributes(attrs...))
		if last && ts[i].Phase == virtkit.MigrationFailed {
			msg := ""
			if ms := mig.Status.MigrationState; ms != nil {
				msg = ms.FailureReason
			}
			span.SetStatus(codes.Error, msg)
		}
		span.End(trace.WithTimestamp(end))
	}
}
