package proxy_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/prometheus/client_golang/prometheus"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/proxy"
	"github.com/agate-gateway/agate/telemetry"
)

// otlpReceiver is an in-test OTLP/HTTP trace receiver: it decodes the exported protobuf.
type otlpReceiver struct {
	*httptest.Server
	mu      sync.Mutex
	spans   []*tracepb.Span
	service string
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		// TracesData is wire-identical to the collector's ExportTraceServiceRequest (field
		// 1, resource_spans; the OTLP spec keeps the two in step) without the collector
		// package, whose gRPC service stubs would link gRPC into this test binary.
		var msg tracepb.TracesData
		if req.URL.Path != "/v1/traces" || proto.Unmarshal(body, &msg) != nil {
			t.Errorf("otlp receiver: bad export to %s (%d bytes)", req.URL.Path, len(body))
			http.Error(w, "bad export", 400)
			return
		}
		r.mu.Lock()
		for _, rs := range msg.ResourceSpans {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					r.service = a.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.mu.Unlock()
		// An ExportTraceServiceResponse with no partial_success is zero bytes.
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(r.Close)
	return r
}

// waitSpans flushes tr until the receiver holds a server span (a streamed request's ends
// after the client read the last byte), then returns every span and forgets them.
func (r *otlpReceiver) waitSpans(t *testing.T, tr *telemetry.Tracer) []*tracepb.Span {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := tr.ForceFlush(context.Background()); err != nil {
			t.Fatalf("ForceFlush: %v", err)
		}
		r.mu.Lock()
		for _, s := range r.spans {
			if s.Kind == tracepb.Span_SPAN_KIND_SERVER {
				out := r.spans
				r.spans = nil
				r.mu.Unlock()
				return out
			}
		}
		r.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("no server span exported")
		}
		time.Sleep(2 * time.Millisecond) // polling the stream writer's end
	}
}

// tree renders the span tree as indented names, children in start order.
func tree(spans []*tracepb.Span) []string {
	sort.Slice(spans, func(i, j int) bool { return spans[i].StartTimeUnixNano < spans[j].StartTimeUnixNano })
	ids := map[string]bool{}
	for _, s := range spans {
		ids[string(s.SpanId)] = true
	}
	var out []string
	var walk func(parent string, depth int)
	walk = func(parent string, depth int) {
		for _, s := range spans {
			p := string(s.ParentSpanId)
			if depth == 0 && !ids[p] || depth > 0 && p == parent {
				out = append(out, strings.Repeat("  ", depth)+s.Name)
				walk(string(s.SpanId), depth+1)
			}
		}
	}
	walk("", 0)
	return out
}

// attrs renders a span's attributes as strings.
func attrs(s *tracepb.Span) map[string]string {
	m := map[string]string{}
	for _, a := range s.Attributes {
		m[a.Key] = anyString(a.Value)
	}
	return m
}

func anyString(v *commonpb.AnyValue) string {
	switch x := v.Value.(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_DoubleValue:
		return fmt.Sprint(x.DoubleValue)
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *commonpb.AnyValue_ArrayValue:
		var parts []string
		for _, e := range x.ArrayValue.Values {
			parts = append(parts, anyString(e))
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	return fmt.Sprint(v)
}

// subset returns got restricted to the keys of want ("<absent>" for a missing key).
func subset(want, got map[string]string) map[string]string {
	out := map[string]string{}
	for k := range want {
		if v, ok := got[k]; ok {
			out[k] = v
		} else {
			out[k] = "<absent>"
		}
	}
	return out
}

func spansNamed(spans []*tracepb.Span, name string) []*tracepb.Span {
	var out []*tracepb.Span
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StartTimeUnixNano < out[j].StartTimeUnixNano })
	return out
}

// tracedGateway is a gateway with tracing on, an Anthropic-wire primary and backup
// upstream (the primary fails the first fail requests with 503), a webhook tool, and an
// OTLP receiver the tracer exports to through the standard environment variables.
type tracedGateway struct {
	url      string
	reg      *prometheus.Registry
	tracer   *telemetry.Tracer
	recv     *otlpReceiver
	primary  *gatewaytest.Fake
	backup   *gatewaytest.Fake
	openai   *gatewaytest.Fake // behind the passthrough route m-openai
	mu       sync.Mutex
	fail     int
	upstream []http.Header // headers of every request to the primary and backup, in order
	webhook  []http.Header
	mcpCalls []http.Header // headers of the MCP server's tools/call requests
}

const tracedPrompt = "zebra-prompt-7431"

// telemetryYAML is the config's telemetry section.
func startTracedGateway(t *testing.T, telemetryYAML string) *tracedGateway {
	g := &tracedGateway{recv: newOTLPReceiver(t)}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", g.recv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_SERVICE_NAME", "agate-under-test")
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	g.primary, g.backup = gatewaytest.NewFake(t, "anthropic"), gatewaytest.NewFake(t, "anthropic")
	g.openai = gatewaytest.NewFake(t, "openai")
	front := func(f *gatewaytest.Fake, failing bool) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			g.mu.Lock()
			g.upstream = append(g.upstream, r.Header.Clone())
			fail := failing && g.fail > 0
			if fail {
				g.fail--
			}
			g.mu.Unlock()
			if fail {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"secret-upstream-detail"}}`)
				return
			}
			f.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.webhook = append(g.webhook, r.Header.Clone())
		g.mu.Unlock()
		io.WriteString(w, `{"answer":"tool-result-text-99"}`)
	}))
	t.Cleanup(hook.Close)
	mcpServer := mcp.NewServer(&mcp.Implementation{Name: "kb", Version: "1"}, nil)
	mcp.AddTool(mcpServer, &mcp.Tool{Name: "lookup", Description: "Look a key up."},
		func(context.Context, *mcp.CallToolRequest, struct {
			Q string `json:"q"`
		}) (*mcp.CallToolResult, any, error) {
			return text("tool-result-text-99"), nil, nil
		})
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcpServer }, nil)
	kb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"tools/call"`) {
			g.mu.Lock()
			g.mcpCalls = append(g.mcpCalls, r.Header.Clone())
			g.mu.Unlock()
		}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(kb.Close)
	yaml := fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  primary: {type: anthropic, base_url: %q, api_key: upstream-secret-xyz, retries: {max: 1, base_delay: 1ms, max_delay: 5ms}}
  backup: {type: anthropic, base_url: %q, api_key: upstream-secret-xyz, retries: {max: 0}}
  oa: {type: openai, base_url: %q, api_key: upstream-secret-xyz, retries: {max: 0}}
models:
  m: {backend: primary, upstream_model: claude-fake, fallbacks: [m-backup]}
  m-backup: {backend: backup, upstream_model: claude-backup}
  m-openai: {backend: oa, upstream_model: gpt-fake}
keys:
  plain: {key: plain-key, models: ["*"]}
  agent: {key: agent-key, models: ["*"], tools: [hook]}
  mcp-agent: {key: mcp-key, models: ["*"], tools: [kb]}
tools:
  hook: {type: http, url: %q, description: "Looks things up.", parameters: {type: object, properties: {q: {type: string}}}}
  kb: {type: mcp, url: %q}
telemetry: %s
`, front(g.primary, true), front(g.backup, false), front(g.openai, false)+"/v1", hook.URL+"/hook?token=hook-secret", kb.URL, telemetryYAML)
	cfg := gatewaytest.Parse(t, yaml)
	var err error
	g.tracer, err = telemetry.New(context.Background(), proxy.TelemetryOptions(cfg.Telemetry))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.tracer.Shutdown(context.Background()) })
	gw := gatewaytest.Start(t, cfg, gatewaytest.Options{Runtime: proxy.TestRuntime, Tools: true, Tracer: g.tracer})
	g.reg, g.url = gw.Registry, gw.URL
	return g
}

// metrics returns /metrics as the gateway serves it for accept.
func (g *tracedGateway) metrics(t *testing.T, accept string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", g.url+"/metrics", nil)
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// ask streams one request for model m with the W3C trace context of a client span.
func (g *tracedGateway) ask(t *testing.T, key, traceparent string) string {
	return g.askModel(t, "m", key, traceparent)
}

func (g *tracedGateway) askModel(t *testing.T, model, key, traceparent string) string {
	t.Helper()
	c := gatewaytest.OpenAI(g.url+"/v1", key,
		option.WithHeader("traceparent", traceparent), option.WithHeader("tracestate", "vendor=opaque"))
	s := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:       model,
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage(tracedPrompt)},
		Temperature: openai.Float(0.25),
		MaxTokens:   openai.Int(64),
	})
	var text strings.Builder
	for s.Next() {
		if ch := s.Current(); len(ch.Choices) > 0 {
			text.WriteString(ch.Choices[0].Delta.Content)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return text.String()
}

const (
	clientTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID  = "00f067aa0ba902b7"
	clientParent  = "00-" + clientTraceID + "-" + clientSpanID + "-01"
)

func TestTraces_SpanTree(t *testing.T) {
	hookCall := gatewaytest.Turn{Calls: []gatewaytest.Call{{Name: "hook", Args: `{"q":"tool-args-text-42"}`}}}
	mcpCall := gatewaytest.Turn{Calls: []gatewaytest.Call{{Name: "kb__lookup", Args: `{"q":"tool-args-text-42"}`}}}
	answer := gatewaytest.Turn{Text: "completion-text-58"}
	tests := []struct {
		name     string
		key      string
		fail     int // 503s from the primary before it answers
		primary  []gatewaytest.Turn
		backup   []gatewaytest.Turn
		want     []string
		chats    []map[string]string // attributes of the chat spans, in order
		tool     map[string]string   // attributes of the execute_tool span, if any
		toolSpan string              // its name
		upstream int                 // upstream requests
	}{
		{
			name: "plain", key: "plain-key", primary: []gatewaytest.Turn{answer},
			want: []string{"POST /v1/chat/completions", "  chat claude-fake"},
			chats: []map[string]string{{
				"gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic", "gen_ai.request.model": "claude-fake",
				"gen_ai.response.model": "claude-fake", "gen_ai.response.id": "msg_0", "gen_ai.response.finish_reasons": "[stop]",
				"gen_ai.usage.input_tokens": "10", "gen_ai.usage.output_tokens": "5", "gen_ai.request.temperature": "0.25",
				"gen_ai.request.max_tokens": "64", "agate.attempt": "1", "agate.fallback": "false", "agate.backend": "primary",
				"server.address": "127.0.0.1", "error.type": "<absent>",
			}},
			upstream: 1,
		},
		{
			name: "retried", key: "plain-key", fail: 1, primary: []gatewaytest.Turn{answer},
			want: []string{"POST /v1/chat/completions", "  chat claude-fake", "  chat claude-fake"},
			chats: []map[string]string{
				{"agate.attempt": "1", "error.type": "503", "http.response.status_code": "503", "gen_ai.response.id": "<absent>"},
				{"agate.attempt": "2", "error.type": "<absent>", "gen_ai.response.id": "msg_0"},
			},
			upstream: 2,
		},
		{
			name: "fallback", key: "plain-key", fail: 2, backup: []gatewaytest.Turn{answer},
			want: []string{"POST /v1/chat/completions", "  chat claude-fake", "  chat claude-fake", "  chat claude-backup"},
			chats: []map[string]string{
				{"agate.attempt": "1", "agate.fallback": "false", "error.type": "503"},
				{"agate.attempt": "2", "agate.fallback": "false", "error.type": "503"},
				{"agate.attempt": "1", "agate.fallback": "true", "agate.backend": "backup", "agate.route": "m-backup",
					"gen_ai.request.model": "claude-backup", "error.type": "<absent>"},
			},
			upstream: 3,
		},
		{
			name: "tool loop", key: "agent-key", primary: []gatewaytest.Turn{hookCall, answer},
			want: []string{"POST /v1/chat/completions", "  chat claude-fake", "  execute_tool hook", "  chat claude-fake"},
			chats: []map[string]string{
				{"gen_ai.response.finish_reasons": "[tool_calls]", "gen_ai.response.id": "msg_0"},
				{"gen_ai.response.finish_reasons": "[stop]", "gen_ai.response.id": "msg_1"},
			},
			tool: map[string]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "hook",
				"gen_ai.tool.call.id": "toolu_0_0", "agate.tool.outcome": "ok", "agate.tool.cache_hit": "false",
				"error.type": "<absent>", "gen_ai.tool.call.arguments": "<absent>", "gen_ai.tool.call.result": "<absent>"},
			toolSpan: "execute_tool hook", upstream: 2,
		},
		{
			name: "mcp tool loop", key: "mcp-key", primary: []gatewaytest.Turn{mcpCall, answer},
			want: []string{"POST /v1/chat/completions", "  chat claude-fake", "  execute_tool kb__lookup", "  chat claude-fake"},
			chats: []map[string]string{
				{"gen_ai.response.finish_reasons": "[tool_calls]"},
				{"gen_ai.response.finish_reasons": "[stop]"},
			},
			tool:     map[string]string{"gen_ai.tool.name": "kb__lookup", "gen_ai.tool.call.id": "toolu_0_0", "agate.tool.outcome": "ok"},
			toolSpan: "execute_tool kb__lookup", upstream: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := startTracedGateway(t, "{traces: true}")
			g.fail = tt.fail
			g.primary.SetScript(tt.primary...)
			g.backup.SetScript(tt.backup...)
			if got := g.ask(t, tt.key, clientParent); got != "completion-text-58" {
				t.Fatalf("answer %q", got)
			}
			spans := g.recv.waitSpans(t, g.tracer)
			if diff := cmp.Diff(tt.want, tree(spans)); diff != "" {
				t.Fatalf("span tree (-want +got):\n%s", diff)
			}
			server := spans[0]
			for _, s := range spans {
				if s.Kind == tracepb.Span_SPAN_KIND_SERVER {
					server = s
				}
				if got := hex.EncodeToString(s.TraceId); got != clientTraceID {
					t.Errorf("span %s: trace id %s, want the client's %s", s.Name, got, clientTraceID)
				}
			}
			if got := hex.EncodeToString(server.ParentSpanId); got != clientSpanID {
				t.Errorf("server span parent %s, want the client's span %s", got, clientSpanID)
			}
			if server.TraceState != "vendor=opaque" {
				t.Errorf("server span tracestate %q, want the client's", server.TraceState)
			}
			wantServer := map[string]string{"http.request.method": "POST", "http.route": "/v1/chat/completions",
				"http.response.status_code": "200", "gen_ai.request.model": "m", "agate.key": tt.key[:strings.Index(tt.key, "-")],
				"agate.stream": "true", "gen_ai.usage.output_tokens": fmt.Sprint(5 * len(tt.chats))}
			if tt.name == "plain" || tt.name == "tool loop" {
				if diff := cmp.Diff(wantServer, subset(wantServer, attrs(server))); diff != "" {
					t.Errorf("server span attributes (-want +got):\n%s", diff)
				}
			}
			if _, ok := attrs(server)["gen_ai.response.time_to_first_chunk"]; !ok {
				t.Error("server span has no gen_ai.response.time_to_first_chunk")
			}
			var chats []*tracepb.Span
			for _, s := range spans {
				if s.Kind == tracepb.Span_SPAN_KIND_CLIENT {
					chats = append(chats, s)
				}
			}
			sort.Slice(chats, func(i, j int) bool { return chats[i].StartTimeUnixNano < chats[j].StartTimeUnixNano })
			for i, want := range tt.chats {
				if diff := cmp.Diff(want, subset(want, attrs(chats[i]))); diff != "" {
					t.Errorf("chat span %d attributes (-want +got):\n%s", i, diff)
				}
				failed := want["error.type"] != "" && want["error.type"] != "<absent>"
				if got := chats[i].Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR; got != failed {
					t.Errorf("chat span %d: status error %v, want %v", i, got, failed)
				}
				if strings.Contains(chats[i].Status.GetMessage(), "secret-upstream-detail") {
					t.Errorf("chat span %d status quotes the upstream's message: %q", i, chats[i].Status.GetMessage())
				}
			}
			// Each upstream request carries the trace context of its own attempt's span.
			g.mu.Lock()
			upstream, toolCalls := g.upstream, g.webhook
			if tt.key == "mcp-key" {
				toolCalls = g.mcpCalls
			}
			g.mu.Unlock()
			if len(upstream) != tt.upstream {
				t.Fatalf("%d upstream requests, want %d", len(upstream), tt.upstream)
			}
			for i, h := range upstream {
				want := "00-" + clientTraceID + "-" + hex.EncodeToString(chats[i].SpanId) + "-01"
				if got := h.Get("traceparent"); got != want {
					t.Errorf("upstream request %d traceparent %q, want %q", i, got, want)
				}
				if got := h.Get("tracestate"); got != "vendor=opaque" {
					t.Errorf("upstream request %d tracestate %q, want the client's", i, got)
				}
			}
			if tt.tool != nil {
				tool := spansNamed(spans, tt.toolSpan)[0]
				if diff := cmp.Diff(tt.tool, subset(tt.tool, attrs(tool))); diff != "" {
					t.Errorf("execute_tool attributes (-want +got):\n%s", diff)
				}
				if len(toolCalls) != 1 {
					t.Fatalf("%d tool calls, want 1", len(toolCalls))
				}
				want := "00-" + clientTraceID + "-" + hex.EncodeToString(tool.SpanId) + "-01"
				if got := toolCalls[0].Get("traceparent"); got != want {
					t.Errorf("tool request traceparent %q, want %q", got, want)
				}
			}
			// No content, no secret in any attribute or status.
			for _, s := range spans {
				for k, v := range attrs(s) {
					for _, secret := range []string{tracedPrompt, "completion-text-58", "tool-args-text-42", "tool-result-text-99",
						"upstream-secret-xyz", "plain-key", "agent-key", "mcp-key", "hook-secret", "secret-upstream-detail"} {
						if strings.Contains(v, secret) {
							t.Errorf("span %s attribute %s holds %q: %q", s.Name, k, secret, v)
						}
					}
				}
			}
			if g.recv.service != "agate-under-test" {
				t.Errorf("service.name %q, want OTEL_SERVICE_NAME's", g.recv.service)
			}
		})
	}
}

// TestTraces_CaptureContent: with capture_content the prompt, the completion and the tool
// payloads are in the GenAI content attributes, never the credentials. The request is not
// streamed: its server span is ended by the handler.
func TestTraces_CaptureContent(t *testing.T) {
	g := startTracedGateway(t, "{traces: true, capture_content: true}")
	g.primary.SetScript(gatewaytest.Turn{Calls: []gatewaytest.Call{{Name: "hook", Args: `{"q":"tool-args-text-42"}`}}}, gatewaytest.Turn{Text: "completion-text-58"})
	c := gatewaytest.OpenAI(g.url+"/v1", "agent-key")
	resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "m",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be-brief-instruction"), openai.UserMessage(tracedPrompt)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; got != "completion-text-58" {
		t.Fatalf("answer %q", got)
	}
	spans := g.recv.waitSpans(t, g.tracer)
	chats := spansNamed(spans, "chat claude-fake")
	tool := spansNamed(spans, "execute_tool hook")
	if len(chats) != 2 || len(tool) != 1 {
		t.Fatalf("span tree %v", tree(spans))
	}
	tests := []struct {
		name string
		span *tracepb.Span
		key  string
		want []string // substrings of the attribute
	}{
		{"first turn input", chats[0], "gen_ai.input.messages", []string{`"role":"user"`, tracedPrompt}},
		{"instructions", chats[0], "gen_ai.system_instructions", []string{"be-brief-instruction"}},
		{"first turn output", chats[0], "gen_ai.output.messages", []string{`"type":"tool_call"`, `"name":"hook"`, "tool-args-text-42", `"finish_reason":"tool_calls"`}},
		{"second turn input", chats[1], "gen_ai.input.messages", []string{`"type":"tool_call_response"`, "tool-result-text-99"}},
		{"second turn output", chats[1], "gen_ai.output.messages", []string{"completion-text-58", `"finish_reason":"stop"`}},
		{"tool arguments", tool[0], "gen_ai.tool.call.arguments", []string{"tool-args-text-42"}},
		{"tool result", tool[0], "gen_ai.tool.call.result", []string{"tool-result-text-99"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := attrs(tt.span)[tt.key]
			if !ok {
				t.Fatalf("%s has no %s", tt.span.Name, tt.key)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("%s = %s, want it to hold %q", tt.key, got, w)
				}
			}
		})
	}
	for _, s := range spans {
		if s.Kind == tracepb.Span_SPAN_KIND_SERVER {
			if got := attrs(s)["http.response.status_code"]; got != "200" {
				t.Errorf("server span status %q, want 200", got)
			}
			if got := attrs(s)["agate.stream"]; got != "false" {
				t.Errorf("server span agate.stream %q, want false", got)
			}
		}
		for k, v := range attrs(s) {
			for _, secret := range []string{"upstream-secret-xyz", "agent-key", "hook-secret"} {
				if strings.Contains(v, secret) {
					t.Errorf("span %s attribute %s holds %q", s.Name, k, secret)
				}
			}
		}
	}
}

// matchAll reports whether s matches every pattern of patterns.
func matchAll(s string, patterns []string) bool {
	for _, p := range patterns {
		if !regexp.MustCompile(p).MatchString(s) {
			return false
		}
	}
	return true
}

// TestTraces_Exemplars: with tracing on, the duration histograms carry the request's trace
// id as an exemplar in the OpenMetrics format, asked for by Accept; with tracing off there
// are none and nothing is propagated upstream.
func TestTraces_Exemplars(t *testing.T) {
	const openMetrics = "application/openmetrics-text;version=1.0.0"
	tests := []struct {
		name      string
		telemetry string
		accept    string
		want      []string // patterns /metrics matches
		notWant   []string
		propagate bool
	}{
		{name: "on, OpenMetrics", telemetry: "{traces: true}", accept: openMetrics, propagate: true,
			want: []string{
				`gateway_request_duration_seconds_bucket\{api="chat",backend="primary",model="m",stream="true",le="[^"]+"\} 1 # \{trace_id="` + clientTraceID + `"\} [0-9.e-]+ [0-9.]+`,
				`gateway_time_to_first_token_seconds_bucket\{backend="primary",model="m",le="[^"]+"\} 1 # \{trace_id="` + clientTraceID + `"\}`,
				`gateway_upstream_duration_seconds_bucket\{backend="primary",code="200",deployment="primary/[^"]+",le="[^"]+"\} 1 # \{trace_id="` + clientTraceID + `"\}`,
				`(?m)^# EOF$`,
			}},
		{name: "on, Prometheus text", telemetry: "{traces: true}", accept: "text/plain", propagate: true,
			notWant: []string{"trace_id", "# EOF"}},
		{name: "off", telemetry: "{traces: false}", accept: openMetrics,
			notWant: []string{"trace_id", "# EOF"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := startTracedGateway(t, tt.telemetry)
			g.primary.SetScript(gatewaytest.Turn{Text: "completion-text-58"})
			g.ask(t, "plain-key", clientParent)
			if g.tracer != nil {
				g.recv.waitSpans(t, g.tracer) // the stream's metrics are recorded as its span ends
			}
			// The request's record (its duration and TTFT, with the exemplar) is taken
			// once its answer is over, which may come just after its span was exported:
			// read /metrics again until it holds it, for a while.
			body := g.metrics(t, tt.accept)
			for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline) && !matchAll(body, tt.want); {
				time.Sleep(10 * time.Millisecond)
				body = g.metrics(t, tt.accept)
			}
			for _, w := range tt.want {
				if !regexp.MustCompile(w).MatchString(body) {
					t.Errorf("/metrics does not match %s", w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(body, w) {
					t.Errorf("/metrics holds %q", w)
				}
			}
			g.mu.Lock()
			tp := g.upstream[0].Get("traceparent")
			g.mu.Unlock()
			if got := tp != ""; got != tt.propagate {
				t.Errorf("upstream traceparent %q, want one: %v", tp, tt.propagate)
			}
		})
	}
}

// TestTraces_Passthrough: an OpenAI-compatible upstream's chunks are forwarded, not decoded;
// its attempt span still has the request, the usage, the time to the first chunk, and
// sends the trace context upstream.
func TestTraces_Passthrough(t *testing.T) {
	g := startTracedGateway(t, "{traces: true}")
	g.openai.SetScript(gatewaytest.Turn{Text: "completion-text-58"})
	if got := g.askModel(t, "m-openai", "plain-key", clientParent); got != "completion-text-58" {
		t.Fatalf("answer %q", got)
	}
	spans := g.recv.waitSpans(t, g.tracer)
	if diff := cmp.Diff([]string{"POST /v1/chat/completions", "  chat gpt-fake"}, tree(spans)); diff != "" {
		t.Fatalf("span tree (-want +got):\n%s", diff)
	}
	chat := spansNamed(spans, "chat gpt-fake")[0]
	want := map[string]string{"gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-fake", "agate.backend": "oa",
		"gen_ai.request.temperature": "0.25", "gen_ai.request.max_tokens": "64",
		"gen_ai.usage.input_tokens": "10", "gen_ai.usage.output_tokens": "5", "error.type": "<absent>"}
	got := attrs(chat)
	if diff := cmp.Diff(want, subset(want, got)); diff != "" {
		t.Errorf("chat span attributes (-want +got):\n%s", diff)
	}
	if _, ok := got["gen_ai.response.time_to_first_chunk"]; !ok {
		t.Error("chat span has no gen_ai.response.time_to_first_chunk")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.upstream) != 1 {
		t.Fatalf("%d upstream requests, want 1", len(g.upstream))
	}
	wantParent := "00-" + clientTraceID + "-" + hex.EncodeToString(chat.SpanId) + "-01"
	if got := g.upstream[0].Get("traceparent"); got != wantParent {
		t.Errorf("upstream traceparent %q, want %q", got, wantParent)
	}
}
