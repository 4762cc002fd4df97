package migration

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// TracerName is the instrumentation scope of the engine's spans.
const TracerName = "github.com/virtkit/virtkit/migration"

// startSpan starts the "migration.engine" span of Run, a child of ctx's
// span; it records nothing without Options.TracerProvider.
func (e *Engine) startSpan(ctx context.Context) (context.Context, trace.Span) {
	if e.opts.TracerProvider == nil {
		return ctx, trace.SpanFromContext(context.Background())
	}
	return e.opts.TracerProvider.Tracer(TracerName).Start(ctx, "migration.engine",
		trace.WithTimestamp(e.clock.Now()), trace.WithAttributes(
			attribute.String("virtkit.domain", e.req.Domain),
			attribute.Int64("virtkit.memory_bytes", int64(min(e.req.Memory, uint64(1<<63-1))))))
}

// endSpan records the engine's decisions as "migration.decision" child
// spans (each lasting until the next decision or the end) and the outcome
// on the engine span, and ends it.
func (e *Engine) endSpan(ctx context.Context, span trace.Span, res Result, err error) {
	if e.opts.TracerProvider == nil {
		return
	}
	end := e.clock.Now()
	tr := e.opts.TracerProvider.Tracer(TracerName)
	for i, d := range res.Decisions {
		until := end
		if i+1 < len(res.Decisions) {
			until = res.Decisions[i+1].Time
		}
		if until.Before(d.Time) {
			until = d.Time
		}
		attrs := []attribute.KeyValue{
			attribute.String("virtkit.action", string(d.Action.Kind)),
			attribute.String("virtkit.rule", d.Action.Rule),
			attribute.String("virtkit.reason", d.Action.Reason),
			attribute.Int64("virtkit.elapsed_ms", d.Elapsed.Milliseconds()),
		}
		if d.Action.ThrottlePercent > 0 {
			attrs = append(attrs, attribute.Int("virtkit.throttle_percent", d.Action.ThrottlePercent))
		}
		if d.Action.DowntimeLimit > 0 {
			attrs = append(attrs, attribute.Int64("virtkit.downtime_limit_ms", d.Action.DowntimeLimit.Milliseconds()))
		}
		if d.Action.PostCopy {
			attrs = append(attrs, attribute.Bool("virtkit.post_copy", true))
		}
		for _, f := range d.Action.Figures {
			attrs = append(attrs, attribute.Float64("virtkit.figure."+f.Name, f.Value))
		}
		_, ds := tr.Start(ctx, "migration.decision", trace.WithTimestamp(d.Time), trace.WithAttributes(attrs...))
		ds.End(trace.WithTimestamp(until))
	}
	span.SetAttributes(
		attribute.String("virtkit.policy", res.Policy),
		attribute.String("virtkit.outcome", string(res.Outcome)),
		attribute.String("virtkit.mode", string(res.Mode)),
		attribute.Int64("virtkit.total_ms", res.Total.Milliseconds()),
		attribute.Int64("virtkit.bytes_sent", int64(min(res.BytesSent, uint64(1<<63-1)))))
	if d, ok := res.Downtime.Get(); ok {
		span.SetAttributes(attribute.Int64("virtkit.downtime_ms", d.Milliseconds()))
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	} else if res.Outcome != OutcomeSucceeded {
		span.SetStatus(codes.Error, res.Reason)
	}
	span.End(trace.WithTimestamp(end))
}
