package tracing

import (
	"context"
	"maps"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TracerName is the instrumentation scope of the controllers' and node
// agents' spans.
const TracerName = "github.com/virtkit/virtkit"

// Span attribute keys.
const (
	AttrNamespace = attribute.Key("virtkit.namespace")
	AttrVM        = attribute.Key("virtkit.vm")
	AttrVMI       = attribute.Key("virtkit.vmi")
	AttrVMIUID    = attribute.Key("virtkit.vmi.uid")
	AttrMigration = attribute.Key("virtkit.migration")
	AttrNode      = attribute.Key("virtkit.node")
	AttrPhase     = attribute.Key("virtkit.phase")
)

// Tracer returns tp's tracer for virtkit's spans; a nil tp gives a tracer
// that records nothing.
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return noop.NewTracerProvider().Tracer(TracerName)
	}
	return tp.Tracer(TracerName)
}

// TraceContext returns ctx with the remote span context stored in obj's
// annotation key (virtkit.TraceParentAnnotation, virtkit.MigrationTraceParentAnnotation)
// as the parent of spans started from it; ctx unchanged when there is none.
func TraceContext(ctx context.Context, obj metav1.Object, key string) context.Context {
	tp := obj.GetAnnotations()[key]
	if tp == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": tp})
}

// traceParent returns the traceparent of ctx's span, "" when it records
// nothing.
func traceParent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"]
}

// SetTraceParent stores ctx's span context on obj under key; it reports
// whether obj changed.
func SetTraceParent(ctx context.Context, obj metav1.Object, key string) bool {
	tp := traceParent(ctx)
	if tp == "" || obj.GetAnnotations()[key] == tp {
		return false
	}
	a := maps.Clone(obj.GetAnnotations())
	if a == nil {
		a = map[string]string{}
	}
	a[key] = tp
	obj.SetAnnotations(a)
	return true
}

// EndSpan records err on span (status Error) and ends it.
func EndSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// StartObjectSpan starts span name as a child of the trace context stored
// on obj under key (a new root when there is none). With a nil tp it
// returns ctx and a span that records nothing, whatever ctx carries.
func StartObjectSpan(ctx context.Context, tp trace.TracerProvider, obj metav1.Object, key, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if tp == nil {
		return ctx, noop.Span{}
	}
	return Tracer(tp).Start(TraceContext(ctx, obj, key), name, trace.WithAttributes(attrs...))
}
