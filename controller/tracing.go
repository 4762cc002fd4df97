package controller

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/tracing"
)

func (o ReconcilerOptions) tracer() trace.Tracer { return tracing.Tracer(o.TracerProvider) }

// startVMTrace starts the root span of a VM start ("vm.start") and its
// "vmi.create" child, and stores the root's context on the VMI about to
// be created.
func (o ReconcilerOptions) startVMTrace(ctx context.Context, owner virtkit.Object, ownerKind string, vmi *virtkit.VirtualMachineInstance) (context.Context, trace.Span, trace.Span) {
	attrs := []attribute.KeyValue{tracing.AttrNamespace.String(vmi.Namespace), tracing.AttrVMI.String(vmi.Name)}
	if ownerKind == virtkit.KindVirtualMachine {
		attrs = append(attrs, tracing.AttrVM.String(owner.GetName()))
	}
	rootCtx, root := o.tracer().Start(ctx, "vm.start", trace.WithAttributes(attrs...),
		trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindInternal))
	tracing.SetTraceParent(rootCtx, vmi, virtkit.TraceParentAnnotation)
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
		root.SetAttributes(tracing.AttrVMIUID.String(string(vmi.UID)))
	}
	tracing.EndSpan(create, err)
	tracing.EndSpan(root, err)
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
		tracing.AttrNamespace.String(vmi.Namespace), tracing.AttrVMI.String(vmi.Name), tracing.AttrVMIUID.String(string(vmi.UID))))
	defer root.End()
	return tracing.SetTraceParent(rctx, vmi, virtkit.TraceParentAnnotation)
}

// startVMISpan starts a span of the VMI's start trace (a child of the root
// its annotation names); without a TracerProvider it records nothing.
func (o ReconcilerOptions) startVMISpan(ctx context.Context, vmi *virtkit.VirtualMachineInstance, name string) (context.Context, trace.Span) {
	return tracing.StartObjectSpan(ctx, o.TracerProvider, vmi, virtkit.TraceParentAnnotation, name,
		tracing.AttrNamespace.String(vmi.Namespace), tracing.AttrVMI.String(vmi.Name))
}
