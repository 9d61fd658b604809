package otlp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/agate-gateway/agate/telemetry/otlp"
)

// specimenSpans are spans with every part of the trace protos set: all attribute types,
// events, links, statuses, kinds, remote and local parents, trace state, dropped counts,
// two resources and two scopes, strings long enough for multi-byte lengths.
func specimenSpans(t testing.TB) []sdktrace.ReadOnlySpan {
	ids := func(tid, sid byte, remote bool, state string) trace.SpanContext {
		ts, err := trace.ParseTraceState(state)
		if err != nil {
			t.Fatal(err)
		}
		return trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: trace.TraceID{tid, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
			SpanID:  trace.SpanID{sid, 1, 2, 3, 4, 5, 6, 7}, TraceFlags: trace.FlagsSampled,
			TraceState: ts, Remote: remote})
	}
	gateway := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0",
		attribute.String("service.name", "agate"), attribute.Int("replica", 3))
	other := resource.NewSchemaless(attribute.String("service.name", "other"))
	scope := instrumentation.Scope{Name: "github.com/agate-gateway/agate", Version: "1.2.3",
		SchemaURL: "https://opentelemetry.io/schemas/1.26.0", Attributes: attribute.NewSet(attribute.Bool("scoped", true))}
	start := time.Unix(1_700_000_000, 123456789)
	every := []attribute.KeyValue{
		attribute.String("s", "text"), attribute.String("empty.string", ""),
		attribute.String("long", strings.Repeat("x", 20000)),
		attribute.Bool("t", true), attribute.Bool("f", false),
		attribute.Int64("i", -42), attribute.Int64("zero", 0), attribute.Float64("d", 2.5), attribute.Float64("dz", 0),
		attribute.BoolSlice("bs", []bool{true, false}), attribute.Int64Slice("is", []int64{1, 0, -1}),
		attribute.Float64Slice("ds", []float64{0.5, 0}), attribute.StringSlice("ss", []string{"a", ""}),
		attribute.StringSlice("none", []string{}),
		attribute.ByteSlice("b", []byte{0, 1, 2}),
		attribute.Slice("mixed", attribute.StringValue("x"), attribute.IntValue(7), attribute.BoolValue(false)),
		attribute.Map("m", attribute.String("k", "v"), attribute.Int("n", 1)),
		{Key: "nothing"},
	}
	stubs := tracetest.SpanStubs{
		{Name: "POST /v1/chat/completions", SpanContext: ids(1, 1, false, "vendor=value"),
			Parent: ids(1, 9, true, ""), SpanKind: trace.SpanKindServer,
			StartTime: start, EndTime: start.Add(time.Second), Attributes: every,
			Events: []sdktrace.Event{{Name: "exception", Time: start.Add(time.Millisecond),
				Attributes: []attribute.KeyValue{attribute.String("exception.message", "boom")}, DroppedAttributeCount: 2}},
			Links: []sdktrace.Link{{SpanContext: ids(2, 2, true, "a=b"), Attributes: []attribute.KeyValue{attribute.Int("n", 1)},
				DroppedAttributeCount: 1}, {SpanContext: ids(3, 3, false, "")}},
			Status:            sdktrace.Status{Code: codes.Error, Description: "upstream failed"},
			DroppedAttributes: 3, DroppedEvents: 4, DroppedLinks: 5,
			Resource: gateway, InstrumentationScope: scope},
		{Name: "chat claude", SpanContext: ids(1, 2, false, ""), Parent: ids(1, 1, false, "vendor=value"),
			SpanKind: trace.SpanKindClient, StartTime: start, EndTime: start.Add(time.Millisecond),
			Status: sdktrace.Status{Code: codes.Ok}, Resource: gateway, InstrumentationScope: scope},
		{Name: "execute_tool search", SpanContext: ids(1, 3, false, ""), SpanKind: trace.SpanKindInternal,
			StartTime: start, EndTime: start, Resource: gateway, InstrumentationScope: instrumentation.Scope{Name: "tools"}},
		{Name: "unscoped", SpanContext: ids(4, 4, false, ""), SpanKind: trace.SpanKindProducer,
			StartTime: time.Unix(-5, 0), Resource: other},
		{Name: "consumer", SpanContext: ids(5, 5, false, ""), SpanKind: trace.SpanKindConsumer, Resource: other},
		{Name: "unspecified", SpanContext: ids(6, 6, false, ""), SpanKind: trace.SpanKindUnspecified, Resource: gateway,
			InstrumentationScope: scope},
	}
	return stubs.Snapshots()
}

// sdkExport is what the OpenTelemetry SDK's own OTLP/HTTP exporter sends for spans.
func sdkExport(t *testing.T, spans []sdktrace.ReadOnlySpan) *collectortrace.ExportTraceServiceRequest {
	got := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- b
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportSpans(context.Background(), spans); err != nil {
		t.Fatal(err)
	}
	exp.Shutdown(context.Background())
	return unmarshal(t, <-got)
}

func unmarshal(t testing.TB, b []byte) *collectortrace.ExportTraceServiceRequest {
	t.Helper()
	var msg collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &msg); err != nil {
		t.Fatalf("not an ExportTraceServiceRequest: %v", err)
	}
	return &msg
}

// byResource orders resource groups, which the SDK's exporter writes in map order.
var byResource = protocmp.SortRepeated(func(a, b *tracepb.ResourceSpans) bool {
	return prototext.Format(a.Resource) < prototext.Format(b.Resource)
})

// TestAppendRequest_AsTheSDKExports: the request is, decoded by the official protos, the
// one the OpenTelemetry SDK's OTLP exporter sends for the same spans.
func TestAppendRequest_AsTheSDKExports(t *testing.T) {
	spans := specimenSpans(t)
	want := sdkExport(t, spans)
	// The one difference: the SDK's exporter leaves out a link's trace_state
	// (trace/v1 Span.Link field 3), which this encoder writes.
	for _, rs := range want.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				for _, l := range s.Links {
					if l.SpanId[0] == 2 {
						l.TraceState = "a=b"
					}
				}
			}
		}
	}
	got := unmarshal(t, otlp.AppendRequest(nil, spans))
	if diff := cmp.Diff(want, got, protocmp.Transform(), byResource); diff != "" {
		t.Errorf("request (-sdk +ours):\n%s", diff)
	}
	if n := len(got.ResourceSpans); n != 2 {
		t.Errorf("%d resource groups, want 2", n)
	}
}

// TestAppendRequest_Appends: the request goes after what dst holds, and no spans (or
// only nil ones) is an empty request.
func TestAppendRequest_Appends(t *testing.T) {
	prefix := []byte("prefix")
	out := otlp.AppendRequest(prefix, specimenSpans(t)[:1])
	if string(out[:6]) != "prefix" {
		t.Fatalf("prefix overwritten: %q", out[:6])
	}
	unmarshal(t, out[6:])
	if out := otlp.AppendRequest(nil, []sdktrace.ReadOnlySpan{nil}); len(out) != 0 {
		t.Errorf("nil span: %x, want nothing", out)
	}
}

func BenchmarkAppendRequest(b *testing.B) {
	spans := specimenSpans(b)[1:3] // the gateway's everyday spans: a client and an internal one
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = otlp.AppendRequest(buf[:0], spans)
	}
}

// protocmpTransform compares protos by content.
var protocmpTransform = protocmp.Transform()
