package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/agate-gateway/agate/telemetry/otlp"
)

// DefaultServiceName is the service.name of Agate's spans unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES names another.
const DefaultServiceName = "agate"

// instrumentationName names the tracer (the instrumentation scope) of every Agate span.
const instrumentationName = "github.com/agate-gateway/agate"

// Tracer makes Agate's spans. A nil *Tracer records nothing. Safe for concurrent use.
type Tracer struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	// capture is Options.CaptureContent: prompts, completions and tool payloads are
	// recorded only when it is set.
	capture bool
	// prop reads and writes the W3C trace context headers.
	prop propagation.TraceContext
}

// Options say whether New builds a tracer and what its spans may record. The zero value is
// tracing off. Where spans go, the service name and the sampler are not options: the
// OpenTelemetry SDK and otlp.FromEnv read the standard OTEL_* variables.
type Options struct {
	// Traces turns tracing on: a server span per request, a client span per upstream
	// attempt and a span per server tool call. False: New returns a nil Tracer.
	Traces bool
	// CaptureContent records prompts, completions, tool arguments and tool results in span
	// attributes. False: spans carry no content, only names, ids, counts and parameters.
	CaptureContent bool
}

// Option adjusts New beyond its Options (tests and benchmarks).
type Option func(*options)

type options struct {
	exporter sdktrace.SpanExporter
	sync     bool
}

// WithExporter replaces the OTLP exporter New would build from the environment (tests and
// benchmarks). With sync set, spans are exported as they end instead of in batches.
func WithExporter(exp sdktrace.SpanExporter, sync bool) Option {
	return func(o *options) { o.exporter, o.sync = exp, sync }
}

// New builds the tracer o describes, or returns nil (tracing off) when o.Traces is false.
// The exporter is OTLP over HTTP/protobuf, or over gRPC when OTEL_EXPORTER_OTLP_PROTOCOL
// (or OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, which wins) is "grpc"; the exporter
// (otlp.FromEnv), the resource and the sampler read the rest of the standard OTEL_*
// variables from the process environment, and a variable set to an invalid value is an
// error. The caller calls Shutdown to flush the last spans.
func New(ctx context.Context, o Options, opts ...Option) (*Tracer, error) {
	if !o.Traces {
		return nil, nil
	}
	var adj options
	for _, opt := range opts {
		opt(&adj)
	}
	if adj.exporter == nil {
		exp, err := newExporter(os.Getenv)
		if err != nil {
			return nil, err
		}
		adj.exporter = exp
	}
	// Later sources win: the default name, then OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", DefaultServiceName)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	processor := sdktrace.WithBatcher(adj.exporter)
	if adj.sync {
		processor = sdktrace.WithSyncer(adj.exporter)
	}
	// No WithSampler: the SDK reads OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG, and
	// without them samples parent-based, always on.
	tp := sdktrace.NewTracerProvider(processor, sdktrace.WithResource(res))
	return &Tracer{provider: tp, tracer: tp.Tracer(instrumentationName), capture: o.CaptureContent}, nil
}

// newExporter builds the OTLP exporter the OTEL_EXPORTER_OTLP_* variables of getenv
// describe (see otlp.FromEnv).
func newExporter(getenv func(string) string) (sdktrace.SpanExporter, error) {
	cfg, err := otlp.FromEnv(getenv, os.ReadFile)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	return otlp.New(cfg), nil
}

// ForceFlush exports the spans that ended and are still buffered.
func (t *Tracer) ForceFlush(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.ForceFlush(ctx)
}

// Shutdown flushes the buffered spans and stops the exporter; later spans are dropped.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// CaptureContent reports whether prompts and completions may be recorded.
func (t *Tracer) CaptureContent() bool { return t != nil && t.capture }
