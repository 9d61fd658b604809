// Package telemetry builds Agate's OpenTelemetry tracer and names its spans after the
// OpenTelemetry GenAI semantic conventions: a server span per client request, a client
// span "chat {model}" per upstream attempt and an "execute_tool {name}" span per server
// tool call. It also carries the W3C trace context (traceparent, tracestate) in and out
// and attaches trace-id exemplars to Prometheus observations.
//
// A nil *Tracer is tracing off: every method is a nil check and nothing else, and the
// span values it returns are nil and record nothing. Nothing here is global: the
// TracerProvider is a field of the Tracer that main builds and passes down.
//
// [New] takes the package's own [Options] (whether to trace, whether spans carry content;
// the zero value is tracing off); the package reads no configuration file: the gateway maps
// its `telemetry:` section to Options, and the exporter, the service name and the sampler
// come from the standard OTEL_* variables (telemetry/otlp).
package telemetry
