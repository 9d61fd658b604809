package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestRun_Traces: telemetry.traces (here from its GATEWAY_ override) builds the tracer
// from the OTEL_* environment, the server records into it, and shutdown flushes the spans.
func TestRun_Traces(t *testing.T) {
	guard := make(chan os.Signal, 1)
	signal.Notify(guard, syscall.SIGTERM)
	defer signal.Stop(guard)

	var mu sync.Mutex
	var names []string
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg collectortrace.ExportTraceServiceRequest
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
	ready := make(chan string, 1)
	done := make(chan error, 1)
	var stdout, stderr lockedBuffer
	go func() {
		done <- run([]string{"-config", path}, []string{"GATEWAY_TELEMETRY__TRACES=true"}, &stdout, &stderr, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("run returned before serving: %v\n%s", err, stderr.String())
	case <-time.After(15 * time.Second):
		t.Fatal("run did not become ready")
	}
	if code := post(t, addr, "demo"); code != 200 {
		t.Fatalf("POST: %d", code)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run did not stop on SIGTERM")
	}
	mu.Lock()
	defer mu.Unlock()
	sort.Strings(names)
	if diff := cmp.Diff([]string{"POST /v1/chat/completions", "chat demo"}, names); diff != "" {
		t.Errorf("spans exported by shutdown (-want +got):\n%s", diff)
	}
}
