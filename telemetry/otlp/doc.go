// Package otlp exports OpenTelemetry spans to a collector over OTLP: protobuf over HTTP
// (OTLP/HTTP) or the unary TraceService/Export call of OTLP/gRPC, both on net/http
// (gRPC as HTTP/2, cleartext with prior knowledge for an http:// endpoint). Exporter is an
// sdktrace.SpanExporter configured by the standard OTEL_EXPORTER_OTLP_* variables
// (FromEnv); AppendRequest is its protobuf encoder.
//
// It stands in for the SDK's otlptracehttp and otlptracegrpc exporters, which bring the
// gRPC runtime and generated protos into the binary: 20 MB of its 45, and 5 MB of every
// gateway's resident memory spent on their package initialization, whether traces are on
// or not. What it writes is checked against those exporters, decoded with the official
// protos (encode_test.go).
package otlp
