package tracing_test

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/trace"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/tracing"
)

// A component stores its span's context on the object it hands on; the
// next one (another reconciler, a node agent, maybe in another process)
// continues the trace from the annotation.
func ExampleSetTraceParent() {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)

	vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "vm1"}}
	fmt.Println(tracing.SetTraceParent(ctx, vmi, virtkit.TraceParentAnnotation))
	fmt.Println(vmi.Annotations[virtkit.TraceParentAnnotation])
	fmt.Println(tracing.SetTraceParent(ctx, vmi, virtkit.TraceParentAnnotation), "(already there)")

	next := tracing.TraceContext(context.Background(), vmi, virtkit.TraceParentAnnotation)
	fmt.Println(trace.SpanContextFromContext(next).TraceID())
	// Output:
	// true
	// 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
	// false (already there)
	// 4bf92f3577b34da6a3ce929d0e0e4736
}

// Without a TracerProvider nothing is recorded and nothing is stored.
func ExampleStartObjectSpan() {
	vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "vm1"}}
	ctx, span := tracing.StartObjectSpan(context.Background(), nil, vmi, virtkit.TraceParentAnnotation, "vmi.sync",
		tracing.AttrVMI.String(vmi.Name))
	defer tracing.EndSpan(span, nil)
	fmt.Println(span.IsRecording(), tracing.SetTraceParent(ctx, vmi, virtkit.TraceParentAnnotation))
	// Output:
	// false false
}
