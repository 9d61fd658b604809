package telemetry_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/agate-gateway/agate/telemetry"
	"github.com/agate-gateway/agate/translate"
)

// receiver collects the names of exported spans, over OTLP/HTTP or OTLP/gRPC.
type receiver struct {
	collectortrace.UnimplementedTraceServiceServer
	mu    sync.Mutex
	names []string
}

func (r *receiver) add(req *collectortrace.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.names = append(r.names, s.Name)
			}
		}
	}
}

func (r *receiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	r.add(req)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func (r *receiver) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.names...)
}

// endpoint starts a receiver speaking protocol and returns its OTLP endpoint URL.
func (r *receiver) endpoint(t *testing.T, protocol string) string {
	if protocol == "grpc" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer()
		collectortrace.RegisterTraceServiceServer(srv, r)
		go srv.Serve(ln)
		t.Cleanup(srv.Stop)
		return "http://" + ln.Addr().String()
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var msg collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &msg); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		r.add(&msg)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestNew_Environment: the exporter, its protocol and the sampler come from the standard
// OTEL_* variables.
func TestNew_Environment(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string // OTEL_EXPORTER_OTLP_ENDPOINT is set to the receiver's
		traces  bool
		want    []string
		wantErr string
	}{
		{name: "http/protobuf by default", traces: true, want: []string{"chat m", "POST /v1/chat/completions"}},
		{name: "http/protobuf", traces: true, env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
			want: []string{"chat m", "POST /v1/chat/completions"}},
		{name: "grpc", traces: true, env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			want: []string{"chat m", "POST /v1/chat/completions"}},
		{name: "traces protocol wins", traces: true,
			env:  map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"},
			want: []string{"chat m", "POST /v1/chat/completions"}},
		{name: "sampler always_off", traces: true, env: map[string]string{"OTEL_TRACES_SAMPLER": "always_off"}},
		{name: "off", traces: false},
		{name: "unknown protocol", traces: true, env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
			wantErr: `telemetry: OTEL_EXPORTER_OTLP_PROTOCOL "http/json": want http/protobuf or grpc`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_TRACES_SAMPLER"} {
				t.Setenv(k, tt.env[k])
			}
			protocol := tt.env["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"]
			if protocol == "" {
				protocol = tt.env["OTEL_EXPORTER_OTLP_PROTOCOL"]
			}
			r := &receiver{}
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.endpoint(t, protocol))
			tr, err := telemetry.New(context.Background(), telemetry.Options{Traces: tt.traces})
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("New error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := tr != nil; got != tt.traces {
				t.Fatalf("tracer built: %v, want %v", got, tt.traces)
			}
			ctx, req := tr.StartRequest(context.Background(), mapCarrier{}, "POST", "/v1/chat/completions", "rid")
			_, chat := tr.StartChat(ctx, telemetry.Attempt{Type: "anthropic", Model: "m", Number: 1})
			chat.End(translate.Usage{}, nil)
			req.End(200)
			if err := tr.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, r.got()); diff != "" {
				t.Errorf("exported spans (-want +got):\n%s", diff)
			}
		})
	}
}

type mapCarrier map[string]string

func (m mapCarrier) Get(k string) string { return m[k] }
func (m mapCarrier) Set(k, v string)     { m[k] = v }
func (m mapCarrier) Keys() []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// TestNilTracer: tracing off is a nil *Tracer whose spans are nil and record nothing.
func TestNilTracer(t *testing.T) {
	var tr *telemetry.Tracer
	ctx := context.Background()
	ctx2, req := tr.StartRequest(ctx, mapCarrier{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}, "POST", "/", "rid")
	if ctx2 != ctx || req != nil {
		t.Fatal("a nil tracer started a request span")
	}
	req.SetRequest(&translate.Request{}, "k")
	req.SetResult(translate.Usage{}, 0)
	req.End(200)
	_, chat := tr.StartChat(ctx, telemetry.Attempt{})
	chat.Request(&translate.Request{}, true, 0)
	chat.Event(&translate.Event{Kind: translate.EventTextDelta})
	chat.End(translate.Usage{}, nil)
	_, tool := tr.StartTool(ctx, "t", "id", "{}")
	tool.End(false, "")
	telemetry.ToolOutcome(ctx, "ok", false)
	if p, s := telemetry.TraceHeaders(ctx); p != "" || s != "" {
		t.Errorf("TraceHeaders without a span = %q, %q", p, s)
	}
	if tr.ForceFlush(ctx) != nil || tr.Shutdown(ctx) != nil || tr.CaptureContent() {
		t.Error("a nil tracer did something")
	}
}

func TestProviderName(t *testing.T) {
	tests := []struct{ typ, want string }{
		{"anthropic", "anthropic"}, {"gemini", "gcp.gemini"}, {"openai", "openai"}, {"responses", "openai"}, {"mock", "agate.mock"},
		{"azure", "azure.ai.openai"}, {"vertex", "gcp.vertex_ai"}, {"bedrock", "aws.bedrock"},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			if got := telemetry.ProviderName(tt.typ); got != tt.want {
				t.Errorf("ProviderName(%q) = %q, want %q", tt.typ, got, tt.want)
			}
		})
	}
}
