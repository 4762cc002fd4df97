package controller

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/events"
	"github.com/virtkit/virtkit/tracing"
)

// Event and tracing helpers that moved to packages events and tracing,
// kept here so code written against earlier releases keeps compiling.

// EventRecorder records Kubernetes-style events about objects.
//
// Deprecated: use events.EventRecorder.
type EventRecorder = events.EventRecorder

// RecordEvent records through rec when it is not nil.
//
// Deprecated: use events.RecordEvent.
func RecordEvent(ctx context.Context, rec events.EventRecorder, regarding virtkit.Object, eventType, reason, action, format string, args ...any) {
	events.RecordEvent(ctx, rec, regarding, eventType, reason, action, format, args...)
}

// Moved to package tracing.
const (
	// Deprecated: use tracing.TracerName.
	TracerName = tracing.TracerName
	// Deprecated: use tracing.AttrNamespace.
	AttrNamespace = tracing.AttrNamespace
	// Deprecated: use tracing.AttrVM.
	AttrVM = tracing.AttrVM
	// Deprecated: use tracing.AttrVMI.
	AttrVMI = tracing.AttrVMI
	// Deprecated: use tracing.AttrVMIUID.
	AttrVMIUID = tracing.AttrVMIUID
	// Deprecated: use tracing.AttrMigration.
	AttrMigration = tracing.AttrMigration
	// Deprecated: use tracing.AttrNode.
	AttrNode = tracing.AttrNode
	// Deprecated: use tracing.AttrPhase.
	AttrPhase = tracing.AttrPhase
)

// Tracer returns tracing.Tracer(tp).
//
// Deprecated: use tracing.Tracer.
func Tracer(tp trace.TracerProvider) trace.Tracer { return tracing.Tracer(tp) }

// TraceContext returns tracing.TraceContext(ctx, obj, key).
//
// Deprecated: use tracing.TraceContext.
func TraceContext(ctx context.Context, obj metav1.Object, key string) context.Context {
	return tracing.TraceContext(ctx, obj, key)
}

// EndSpan calls tracing.EndSpan(span, err).
//
// Deprecated: use tracing.EndSpan.
func EndSpan(span trace.Span, err error) { tracing.EndSpan(span, err) }

// StartObjectSpan returns tracing.StartObjectSpan(ctx, tp, obj, key, name, attrs...).
//
// Deprecated: use tracing.StartObjectSpan.
func StartObjectSpan(ctx context.Context, tp trace.TracerProvider, obj metav1.Object, key, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return tracing.StartObjectSpan(ctx, tp, obj, key, name, attrs...)
}
