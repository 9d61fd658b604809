package proxy

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/telemetry"
	"github.com/agate-gateway/agate/translate"
)

// Tracing (package telemetry): the server span of a chat request, a client span per
// upstream attempt, the trace context sent upstream, and exemplars on the duration
// histograms. With tracing off (Server.tracer nil) every function here is a nil check.

// startSpan starts the server span of a request, continuing the client's trace context;
// nil when tracing is off (tr nil).
func startSpan(tr *telemetry.Tracer, ctx *fasthttp.RequestCtx, rid string) *telemetry.Request {
	if tr == nil {
		return nil
	}
	_, span := tr.StartRequest(context.Background(), requestHeaders{&ctx.Request.Header},
		string(ctx.Method()), string(ctx.Path()), rid)
	return span
}

// finishSpan records a request's result on its server span (nil when tracing is off):
// the usage of its upstream turns and its time to first token (first zero: none). A
// stream's writer ends the span here, a non-streamed request's handler ends it when it
// returns.
func finishSpan(span *telemetry.Request, u translate.Usage, start, first time.Time, code int, stream bool) {
	if span == nil {
		return
	}
	var ttft time.Duration
	if !first.IsZero() {
		ttft = first.Sub(start)
	}
	span.SetResult(u, ttft)
	if stream {
		span.End(code)
	}
}

// traceHeaders adds the trace context of the attempt's span in ctx to an upstream
// request's headers, when tracing is on (tr not nil).
func traceHeaders(ctx context.Context, tr *telemetry.Tracer, headers []translate.Header) []translate.Header {
	if tr == nil {
		return headers
	}
	// The values are appended here rather than by a carrier holding &headers: with that,
	// the headers would escape to the heap, tracing on or off.
	parent, state := telemetry.TraceHeaders(ctx)
	if parent != "" {
		headers = append(headers, translate.Header{Name: "traceparent", Value: parent})
	}
	if state != "" {
		headers = append(headers, translate.Header{Name: "tracestate", Value: state})
	}
	return headers
}

// observe records v into o, with the trace id of ctx's span as exemplar when tracing (tr
// not nil).
func observe(ctx context.Context, tr *telemetry.Tracer, o prometheus.Observer, v float64) {
	if tr == nil {
		o.Observe(v)
		return
	}
	telemetry.Observe(ctx, o, v)
}

// requestHeaders reads the trace context from a client request's headers.
type requestHeaders struct{ h *fasthttp.RequestHeader }

func (r requestHeaders) Get(key string) string {
	switch key { // the propagator's lower-case names, as foldHeaderNames leaves them
	case "traceparent":
		key = "Traceparent"
	case "tracestate":
		key = "Tracestate"
	}
	return string(r.h.Peek(key))
}
func (r requestHeaders) Set(string, string) {}
func (r requestHeaders) Keys() []string     { return []string{"traceparent", "tracestate"} }
