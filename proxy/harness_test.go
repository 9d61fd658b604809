package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/agate-gateway/agate/balance"
	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/internal/logjson"
	"github.com/agate-gateway/agate/limits"
	"github.com/agate-gateway/agate/metrics"
	"github.com/agate-gateway/agate/telemetry"
)

// This file is the end-to-end harness: a real Server on a loopback listener, fake
// upstreams as httptest servers, and the official OpenAI Go SDK as the client.

// gateway is a running Server under test.
type gateway struct {
	t    testing.TB
	srv  *Server
	reg  *prometheus.Registry
	base string // http://127.0.0.1:port
	logs *syncBuffer
	done chan error // Serve's result
}

// demoConfig is a gateway with the offline mock backend as model demo, for key sk-alice.
const demoConfig = `
backends:
  offline: {type: mock}
models:
  demo: {backend: offline}
keys:
  alice: {key: sk-alice, models: ["*"]}
`

// gatewayOptions adjust startGateway.
type gatewayOptions struct {
	tools ToolSet
	// noCleanupShutdown leaves Shutdown to the test.
	noCleanupShutdown bool
	// logOut receives the JSON logs instead of gateway.logs (benchmarks discard them).
	logOut io.Writer
	// limiter replaces the one the server would open from the config's state section.
	limiter limits.Limiter
	// tracer records spans; nil is tracing off.
	tracer *telemetry.Tracer
	// health is the deployments' circuit breaker; nil: every deployment is healthy.
	health balance.Health
}

// startGateway parses yaml (with "{{NAME}}" placeholders replaced from vars) and serves
// it on a loopback listener. The listener is bound before Serve starts, so the gateway
// accepts connections as soon as this returns: no waiting for readiness.
func startGateway(t testing.TB, yaml string, vars map[string]string) *gateway {
	return startGatewayWith(t, yaml, vars, gatewayOptions{})
}

func startGatewayWith(t testing.TB, yaml string, vars map[string]string, o gatewayOptions) *gateway {
	t.Helper()
	cfg := parseConfig(t, yaml, vars)
	return startGatewayConfig(t, cfg, o)
}

func startGatewayConfig(t testing.TB, cfg *config.Config, o gatewayOptions) *gateway {
	t.Helper()
	reg := prometheus.NewRegistry()
	logs := &syncBuffer{}
	var logOut io.Writer = logs
	if o.logOut != nil {
		logOut = o.logOut
	}
	srv, err := New(Options{
		Config:   cfg,
		Metrics:  metrics.NewWith(reg, metrics.Options{Runtime: testRuntime}),
		Gatherer: reg,
		Logger:   slog.New(logjson.New(logOut, nil)), // the gateway's handler (cmd/gateway)
		Tools:    o.tools,
		Limiter:  o.limiter,
		Tracer:   o.tracer,
		Health:   o.health,
	})
	if err != nil {
		t.Fatalf("proxy.New: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gateway{t: t, srv: srv, reg: reg, base: "http://" + ln.Addr().String(), logs: logs, done: make(chan error, 1)}
	go func() { g.done <- srv.Serve(ln) }()
	if !o.noCleanupShutdown {
		t.Cleanup(func() {
			// The test client's spare connections go first: one the client dialed but
			// never sent a request on would hold Shutdown for silentAge (see
			// clientListener.closeSilent).
			http.DefaultClient.CloseIdleConnections()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
			if err := <-g.done; err != nil {
				t.Errorf("Serve: %v", err)
			}
		})
	}
	return g
}

func parseConfig(t testing.TB, yaml string, vars map[string]string) *config.Config {
	t.Helper()
	for k, v := range vars {
		yaml = strings.ReplaceAll(yaml, "{{"+k+"}}", v)
	}
	cfg, err := config.Parse([]byte(yaml), nil)
	if err != nil {
		t.Fatalf("config.Parse: %v\n%s", err, yaml)
	}
	return cfg
}

// client returns an OpenAI SDK client for the gateway that never retries.
func (g *gateway) client(key string, opts ...option.RequestOption) openai.Client {
	if key == "" {
		key = "unused"
	}
	return openai.NewClient(append([]option.RequestOption{
		option.WithBaseURL(g.base + "/v1/"),
		option.WithAPIKey(key),
		option.WithMaxRetries(0),
		option.WithRequestTimeout(30 * time.Second),
	}, opts...)...)
}

// httpResult is a raw HTTP response.
type httpResult struct {
	status int
	header http.Header
	body   []byte
}

// do sends a raw HTTP request; key "" sends no Authorization header.
func (g *gateway) do(method, path, key string, body []byte, headers ...string) httpResult {
	g.t.Helper()
	req, err := http.NewRequest(method, g.base+path, bytes.NewReader(body))
	if err != nil {
		g.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		g.t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return httpResult{status: resp.StatusCode, header: resp.Header, body: b}
}

// logText returns the gateway's logs, with the access lines of every request answered so
// far (Server.Settle).
func (g *gateway) logText() string {
	g.srv.Settle()
	return g.logs.String()
}

// chat posts a chat completions body.
func (g *gateway) chat(key, body string, headers ...string) httpResult {
	g.t.Helper()
	return g.do("POST", "/v1/chat/completions", key, []byte(body), headers...)
}

// metricValue returns the value of the counter, gauge or histogram (its sample count)
// named name whose labels include labels; 0 if there is none.
func (g *gateway) metricValue(name string, labels map[string]string) float64 {
	g.t.Helper()
	g.srv.Settle() // the answers' records, made after they are written
	return gatheredValue(g.t, g.reg, name, labels)
}

func gatheredValue(t testing.TB, gatherer prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := gatherer.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if !labelsMatch(m, labels) {
				continue
			}
			switch {
			case m.Counter != nil:
				total += m.Counter.GetValue()
			case m.Gauge != nil:
				total += m.Gauge.GetValue()
			case m.Histogram != nil:
				total += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return total
}

func labelsMatch(m *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == k && l.GetValue() == v {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fakeUpstream is a fake upstream: an httptest server that records each request and answers
// with the handler of the current attempt (the last handler repeats).
type fakeUpstream struct {
	*httptest.Server
	mu       sync.Mutex
	requests []recordedRequest
	handlers []http.HandlerFunc
}

// bodyKey is the request context key under which upstream handlers find the body.
type bodyKey struct{}

type recordedRequest struct {
	Path   string
	Header http.Header
	Body   []byte
}

func newUpstream(t testing.TB, handlers ...http.HandlerFunc) *fakeUpstream {
	t.Helper()
	u := &fakeUpstream{handlers: handlers}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		n := len(u.requests)
		u.requests = append(u.requests, recordedRequest{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		h := u.handlers[min(n, len(u.handlers)-1)]
		u.mu.Unlock()
		h(w, r.WithContext(context.WithValue(r.Context(), bodyKey{}, body)))
	}))
	t.Cleanup(u.Close)
	return u
}

// URL returns the base URL in the openai backend convention (root including /v1).
func (u *fakeUpstream) v1() string { return u.Server.URL + "/v1" }

func (u *fakeUpstream) calls() []recordedRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]recordedRequest(nil), u.requests...)
}

// fixture reads a recording of testdata/openai-chat (provenance in its SOURCES.md).
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "openai-chat", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// replayJSON answers with a recorded JSON body and status.
func replayJSON(status int, body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(body)
	}
}

// replaySSE answers with a recorded SSE body, one event per write and flush, as the
// upstream sent it.
func replaySSE(body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.WriteHeader(200)
		f := w.(http.Flusher)
		for _, ev := range splitEvents(body) {
			if _, err := w.Write(ev); err != nil {
				return
			}
			f.Flush()
		}
	}
}

// splitEvents splits an SSE body after each blank line, keeping the bytes intact.
func splitEvents(body []byte) [][]byte {
	var out [][]byte
	for len(body) > 0 {
		i := bytes.Index(body, []byte("\n\n"))
		if i < 0 {
			out = append(out, body)
			break
		}
		out = append(out, body[:i+2])
		body = body[i+2:]
	}
	return out
}

// sseData returns the data payloads of an SSE body ("[DONE]" included).
func sseData(t testing.TB, body []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if d, ok := strings.CutPrefix(line, "data:"); ok {
			out = append(out, strings.TrimPrefix(d, " "))
		}
	}
	return out
}

// apiErrorBody is the OpenAI error JSON shape.
type apiErrorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// errorView is what tests compare of an error response.
type errorView struct {
	Status  int
	Type    string
	Param   string
	Code    string
	Message string // compared only when the test sets it
}

// decodeError checks that body is exactly the OpenAI error shape and returns its fields.
func decodeError(t testing.TB, r httpResult) errorView {
	t.Helper()
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("error Content-Type = %q, want application/json", ct)
	}
	var raw map[string]map[string]any
	if err := json.Unmarshal(r.body, &raw); err != nil {
		t.Fatalf("error body is not JSON: %v: %s", err, r.body)
	}
	if len(raw) != 1 || raw["error"] == nil {
		t.Fatalf("error body is not {\"error\":{...}}: %s", r.body)
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := raw["error"][k]; !ok {
			t.Errorf("error body lacks error.%s: %s", k, r.body)
		}
	}
	var e apiErrorBody
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatal(err)
	}
	if e.Error.Message == "" {
		t.Errorf("empty error message: %s", r.body)
	}
	v := errorView{Status: r.status, Type: e.Error.Type, Message: e.Error.Message}
	if e.Error.Param != nil {
		v.Param = *e.Error.Param
	}
	if e.Error.Code != nil {
		v.Code = *e.Error.Code
	}
	return v
}

// sdkError returns err as the SDK's *openai.Error.
func sdkError(t testing.TB, err error) *openai.Error {
	t.Helper()
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("error %v (%T) is not an *openai.Error", err, err)
	}
	return apiErr
}
