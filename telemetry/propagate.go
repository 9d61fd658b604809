package telemetry

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Inject writes the W3C trace context of the span in ctx (traceparent, and tracestate when
// there is one) to carrier. It writes nothing when ctx holds no valid span, as with
// tracing off. It is a package function rather than a Tracer method so that the tool
// sources, which never see the Tracer, propagate the context of the span they run under.
func Inject(ctx context.Context, carrier propagation.TextMapCarrier) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	propagation.TraceContext{}.Inject(ctx, carrier)
}

// TraceHeaders returns the traceparent and tracestate header values of the span in ctx;
// both are empty when ctx holds no valid span.
func TraceHeaders(ctx context.Context) (traceparent, tracestate string) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return "", ""
	}
	m := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, m)
	return m["traceparent"], m["tracestate"]
}

// Observe records v into o, with the trace id of the sampled span in ctx as an exemplar
// (label trace_id) when there is one and o keeps exemplars.
func Observe(ctx context.Context, o prometheus.Observer, v float64) {
	observe(trace.SpanContextFromContext(ctx), o, v)
}

func observe(sc trace.SpanContext, o prometheus.Observer, v float64) {
	if sc.IsSampled() {
		if eo, ok := o.(prometheus.ExemplarObserver); ok {
			eo.ObserveWithExemplar(v, prometheus.Labels{"trace_id": sc.TraceID().String()})
			return
		}
	}
	o.Observe(v)
}
