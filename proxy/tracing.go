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

// startChatSpan starts the server span of a chat request, continuing the client's trace
// context; nil when tracing is off.
func (s *Server) startChatSpan(ctx *fasthttp.RequestCtx, rid string) *telemetry.Request {
	if s.tracer == nil {
		return nil
	}
	_, span := s.tracer.StartRequest(context.Background(), requestHeaders{&ctx.Request.Header},
		string(ctx.Method()), string(ctx.Path()), rid)
	return span
}

// startTracing gives the run its server span and its model call the tracer.
func (c *requestRun) startTracing(span *telemetry.Request) {
	if span == nil {
		return
	}
	c.span = span
	c.call.tracer = c.s.tracer
	span.SetRequest(c.req, c.key.name)
}

// traced returns parent carrying the run's server span, the parent of its upstream calls.
func (c *requestRun) traced(parent context.Context) context.Context { return c.span.Context(parent) }

// traceFinish records the result on the server span; a stream's writer ends the span
// here, a non-streamed request's handler ends it when it returns.
func (c *requestRun) traceFinish(code int, stream bool) {
	if c.span == nil {
		return
	}
	var ttft time.Duration
	if !c.firstT.IsZero() {
		ttft = c.firstT.Sub(c.start)
	}
	c.span.SetResult(c.call.Usage, ttft)
	if stream {
		c.span.End(code)
	}
}

// tracedAttempt runs one upstream attempt on route r (attempt counts from 0) in its own
// client span.
func (c *modelCall) tracedAttempt(ctx context.Context, r *route, attempt int, try func(context.Context, *route) error) error {
	if c.tracer == nil {
		return c.counted(ctx, r, try)
	}
	ctx, c.chat = c.tracer.StartChat(ctx, telemetry.Attempt{Type: r.backend.typ, Backend: r.backend.name, Route: r.name,
		Model: r.upstreamModel, Number: attempt + 1, Fallback: r != c.route, BaseURL: r.backend.baseURL})
	err := c.counted(ctx, r, try)
	c.chat.End(c.meter.last, err)
	c.chat = nil
	return err
}

// traceHeaders adds the trace context of the attempt's span to an upstream request's headers.
func (c *modelCall) traceHeaders(ctx context.Context, headers []translate.Header) []translate.Header {
	if c.tracer == nil {
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

// observe records v into o, with the trace id of ctx's span as exemplar when tracing.
func (c *modelCall) observe(ctx context.Context, o prometheus.Observer, v float64) {
	if c.tracer == nil {
		o.Observe(v)
		return
	}
	telemetry.Observe(ctx, o, v)
}

// requestHeaders reads the trace context from a client request's headers.
type requestHeaders struct{ h *fasthttp.RequestHeader }

func (r requestHeaders) Get(key string) string { return string(r.h.Peek(key)) }
func (r requestHeaders) Set(string, string)    {}
func (r requestHeaders) Keys() []string        { return []string{"traceparent", "tracestate"} }
