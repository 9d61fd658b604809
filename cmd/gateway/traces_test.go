package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestRun_Traces: telemetry.traces (here from its GATEWAY_ override) builds the tracer
// from the OTEL_* environment, the server records into it, and shutdown flushes the spans.
func TestRun_Traces(t *testing.T) {
	var mu sync.Mutex
	var names []string
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		// TracesData is wire-identical to the collector's ExportTraceServiceRequest (field
		// 1, resource_spans) without the collector package, which links gRPC.
		var msg tracepb.TracesData
		if err := proto.Unmarshal(body, &msg); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		mu.Lock()
		for _, rs := range msg.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					names = append(names, s.Name)
				}
			}
		}
		mu.Unlock()
	}))
	defer recv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")

	path := filepath.Join(t.TempDir(), "agate.yaml")
	writeAtomically(t, path, baseConfig)
	g := startRun(t, []string{"-config", path}, []string{"GATEWAY_TELEMETRY__TRACES=true"})
	if code := post(t, g.addr, "demo"); code != 200 {
		t.Fatalf("POST: %d", code)
	}
	g.stop(t)
	mu.Lock()
	defer mu.Unlock()
	sort.Strings(names)
	if diff := cmp.Diff([]string{"POST /v1/chat/completions", "chat demo"}, names); diff != "" {
		t.Errorf("spans exported by shutdown (-want +got):\n%s", diff)
	}
}
