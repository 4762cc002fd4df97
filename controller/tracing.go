package controller

import (
	"context"
	"maps"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
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

// setTraceParent stores ctx's span context on obj under key; it reports
// whether obj changed.
func setTraceParent(ctx context.Context, obj metav1.Object, key string) bool {
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

func (o ReconcilerOptions) tracer() trace.Tracer { return Tracer(o.TracerProvider) }

// EndSpan records err on span (status Error) and ends it.
func EndSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// startVMTrace starts the root span of a VM start ("vm.start") and its
// "vmi.create" child, and stores the root's context on the VMI about to
// be created.
func (o ReconcilerOptions) startVMTrace(ctx context.Context, owner virtkit.Object, ownerKind string, vmi *virtkit.VirtualMachineInstance) (context.Context, trace.Span, trace.Span) {
	attrs := []attribute.KeyValue{AttrNamespace.String(vmi.Namespace), AttrVMI.String(vmi.Name)}
	if ownerKind == virtkit.KindVirtualMachine {
		attrs = append(attrs, AttrVM.String(owner.GetName()))
	}
	rootCtx, root := o.tracer().Start(ctx, "vm.start", trace.WithAttributes(attrs...),
		trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindInternal))
	setTraceParent(rootCtx, vmi, virtkit.TraceParentAnnotation)
	cctx, create := o.tracer().Start(rootCtx, "vmi.create", trace.WithAttributes(attrs...))
	return cctx, root, create
}

// createVMI creates the VMI an owner (VM or ReplicaSet) starts, inside the
// root span of the VM start when tracing.
func (o ReconcilerOptions) createVMI(ctx context.Context, owner virtkit.Object, ownerKind string, vmi *virtkit.VirtualMachineInstance) error {
	if o.TracerProvider == nil {
		return o.Store.Create(ctx, vmi)
	}
	cctx, root, create := o.startVMTrace(ctx, owner, ownerKind, vmi)
	err := o.Store.Create(cctx, vmi)
	if err == nil {
		root.SetAttributes(AttrVMIUID.String(string(vmi.UID)))
	}
	EndSpan(create, err)
	EndSpan(root, err)
	return err
}

// traceVMIRoot gives a VMI that arrived without a trace context (created
// by a user, not by a VM or ReplicaSet) a root span of its own, "vm.start";
// it reports whether the VMI changed.
func (o ReconcilerOptions) traceVMIRoot(ctx context.Context, vmi *virtkit.VirtualMachineInstance) bool {
	if o.TracerProvider == nil || vmi.Status.Phase != virtkit.VmPhaseUnset || vmi.Annotations[virtkit.TraceParentAnnotation] != "" {
		return false
	}
	rctx, root := o.tracer().Start(ctx, "vm.start", trace.WithNewRoot(), trace.WithAttributes(
		AttrNamespace.String(vmi.Namespace), AttrVMI.String(vmi.Name), AttrVMIUID.String(string(vmi.UID))))
	defer root.End()
	return setTraceParent(rctx, vmi, virtkit.TraceParentAnnotation)
}

// startVMISpan starts a span of the VMI's start trace (a child of the root
// its annotation names); without a TracerProvider it records nothing.
func (o ReconcilerOptions) startVMISpan(ctx context.Context, vmi *virtkit.VirtualMachineInstance, name string) (context.Context, trace.Span) {
	return StartObjectSpan(ctx, o.TracerProvider, vmi, virtkit.TraceParentAnnotation, name,
		AttrNamespace.String(vmi.Namespace), AttrVMI.String(vmi.Name))
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
