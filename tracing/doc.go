// Package tracing holds the OpenTelemetry helpers virtkit's controllers
// and node agents share: the tracer of virtkit's spans from an injected
// TracerProvider (nil records nothing), the span attribute keys, and the
// propagation of a span context between components on the objects
// themselves, as a W3C traceparent annotation
// (virtkit.TraceParentAnnotation on a VMI or a migration,
// virtkit.MigrationTraceParentAnnotation on a VMI). Nothing here is
// global.
package tracing
