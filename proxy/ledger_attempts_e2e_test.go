package proxy_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/ledger"
	"github.com/agate-gateway/agate/proxy"
	"github.com/agate-gateway/agate/telemetry"
)

// TestLedger_AttemptsTraceAndDeployment: a request whose model's backend fails twice
// (a retry) and whose fallback answers is one ledger record whose attempts say so, in
// order, with the trace id of the client's traceparent and the deployment that answered;
// GET /admin/v1/requests/{id} shows them, and the usage report groups by deployment.
func TestLedger_AttemptsTraceAndDeployment(t *testing.T) {
	// Tracing on, its spans sent to a receiver that takes them.
	otlpSink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(otlpSink.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlpSink.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	tracer, err := telemetry.New(context.Background(), telemetry.Options{Traces: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tracer.Shutdown(context.Background()) })

	ok := gatewaytest.NewFakeJSON(t, "openai")
	ok.SetScript(gatewaytest.Turn{Text: "hello"})
	// OpenAI's overloaded answer (its documented 503 body).
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(503)
		io.WriteString(w, `{"error":{"message":"The server is overloaded or not ready yet.","type":"server_error","param":null,"code":null}}`)
	}))
	t.Cleanup(down.Close)

	l, err := ledger.Open(context.Background(), ledger.Options{Type: "sqlite", DSN: sqliteLedgers.Fresh(t), FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close(context.Background()) })
	d := sha256.Sum256([]byte(adminToken))
	g := gatewaytest.StartYAML(t, fmt.Sprintf(`
backends:
  down: {type: openai, base_url: %q, api_key: k, retries: {max: 1, base_delay: 1ms, max_delay: 2ms}}
  oa: {type: openai, base_url: %q, api_key: k, retries: {max: 0}}
models:
  flaky: {backend: down, upstream_model: gpt-4o, fallbacks: [steady]}
  steady: {backend: oa, upstream_model: fake-model, price: {input: 1, output: 2}}
keys:
  alice: {key: sk-alice, models: ["*"]}
ledger: {type: sqlite}
admin:
  keys: {ops: {key_sha256: %s}}
`, down.URL+"/v1", ok.BaseURL(), hex.EncodeToString(d[:])), gatewaytest.Options{Runtime: proxy.TestRuntime, Ledger: l, Tracer: tracer})

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	client := gatewaytest.OpenAI(g.V1(), "sk-alice")
	_, err = client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "flaky",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}},
		option.WithHeader("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01"))
	if err != nil {
		t.Fatal(err)
	}
	g.Server.Settle()
	if err := l.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}

	status, list, raw := adminDo(t, g, adminToken, "GET", "/admin/v1/requests", "")
	data, _ := list["data"].([]any)
	if status != 200 || len(data) != 1 {
		t.Fatalf("GET /admin/v1/requests: %d %s", status, raw)
	}
	rec := data[0].(map[string]any)
	if rec["trace_id"] != traceID || rec["deployment"] != "oa/fake-model" || rec["continued_from"] != "" {
		t.Errorf("the listing's record: %s", raw)
	}
	id := strconv.Itoa(int(rec["id"].(float64)))
	status, one, raw := adminDo(t, g, adminToken, "GET", "/admin/v1/requests/"+id, "")
	if status != 200 {
		t.Fatalf("GET /admin/v1/requests/%s: %d %s", id, status, raw)
	}
	type attempt struct {
		Backend, Deployment, Model string
		Status                     int
		ErrorType                  string
		Continued                  bool
	}
	var got []attempt
	for _, a := range one["attempts"].([]any) {
		m := a.(map[string]any)
		if ms, ok := m["duration_ms"].(float64); !ok || ms < 0 {
			t.Errorf("attempt without a duration: %v", m)
		}
		got = append(got, attempt{m["backend"].(string), m["deployment"].(string), m["model"].(string), int(m["status"].(float64)),
			m["error_type"].(string), m["continued"].(bool)})
	}
	want := []attempt{
		{"down", "down/gpt-4o", "flaky", 503, "server_error", false},
		{"down", "down/gpt-4o", "flaky", 503, "server_error", false}, // the retry
		{"oa", "oa/fake-model", "steady", 200, "", false},            // the fallback
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("attempts (-want +got):\n%s\n%s", diff, raw)
	}
	if one["trace_id"] != traceID || one["attempts_omitted"] != 0.0 || one["served_model"] != "steady" || one["fallbacks"] != 1.0 {
		t.Errorf("the record: %s", raw)
	}

	for _, tc := range []struct {
		path string
		want int
	}{{"/admin/v1/requests/0", 400}, {"/admin/v1/requests/x", 400}, {"/admin/v1/requests/999999", 404}} {
		if status, _, raw := adminDo(t, g, adminToken, "GET", tc.path, ""); status != tc.want {
			t.Errorf("GET %s: %d %s; want %d", tc.path, status, raw, tc.want)
		}
	}

	status, usage, raw := adminDo(t, g, adminToken, "GET", "/admin/v1/usage?group_by=deployment", "")
	rows, _ := usage["data"].([]any)
	if status != 200 || len(rows) != 1 || rows[0].(map[string]any)["deployment"] != "oa/fake-model" || rows[0].(map[string]any)["requests"] != 1.0 {
		t.Errorf("usage by deployment: %d %s", status, raw)
	}
	if status, _, raw := adminDo(t, g, adminToken, "GET", "/admin/v1/usage?group_by=backend", ""); status != 400 {
		t.Errorf("group_by=backend: %d %s; want 400", status, raw)
	}
	_ = proxy.RequestStore(l) // *ledger.Ledger reads one record
}
