package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/proxy"
)

// loopMCP is the in-process streamable-HTTP MCP server the tool-loop tests use.
type loopMCP struct {
	lookups   atomic.Int32
	pairing   chan struct{} // closed when two pair calls are running at once
	pairCount atomic.Int32
	slowGone  chan struct{} // closed when a slow call sees its context cancelled
	slowOnce  sync.Once
}

func startLoopMCP(t *testing.T) (*loopMCP, string) {
	m := &loopMCP{pairing: make(chan struct{}), slowGone: make(chan struct{})}
	s := mcp.NewServer(&mcp.Implementation{Name: "loop-test", Version: "1"}, nil)
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	type keyArgs struct {
		Key string `json:"key"`
		N   int    `json:"n,omitempty"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "lookup", Description: "Look a key up.", Annotations: ro},
		func(_ context.Context, _ *mcp.CallToolRequest, in keyArgs) (*mcp.CallToolResult, any, error) {
			m.lookups.Add(1)
			return text("value-of-" + in.Key), nil, nil
		})
	type idArgs struct {
		ID string `json:"id"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "pair", Description: "Answers once another pair call runs.", Annotations: ro},
		func(ctx context.Context, _ *mcp.CallToolRequest, in idArgs) (*mcp.CallToolResult, any, error) {
			if m.pairCount.Add(1) == 2 {
				close(m.pairing)
			}
			select {
			case <-m.pairing:
				return text("overlapped-" + in.ID), nil, nil
			case <-time.After(10 * time.Second):
				return text("alone-" + in.ID), nil, nil
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		})
	s.AddTool(&mcp.Tool{Name: "fail", Description: "Always fails.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the database is on fire"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "count", Description: "Counts to n.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ N int }
			_ = json.Unmarshal(req.Params.Arguments, &in)
			return text(fmt.Sprintf("counted to %d", in.N)), nil
		})
	s.AddTool(&mcp.Tool{Name: "slow", Description: "Never finishes.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			m.slowOnce.Do(func() { close(m.slowGone) })
			return nil, ctx.Err()
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return m, srv.URL
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// everythingCommand returns the command of the real @modelcontextprotocol/server-everything,
// or skips (fails under CI=true) when it is not installed.
func everythingCommand(t *testing.T) []string {
	p := gatewaytest.Require(t, "mcp-server-everything", "npm install -g @modelcontextprotocol/server-everything@2026.8.31")
	return []string{p, "stdio"}
}

// loopGateway is a running gateway with one backend of each kind and server tools.
type loopGateway struct {
	url   string
	srv   *proxy.Server
	reg   *prometheus.Registry
	fakes map[string]*gatewaytest.Fake
	mcp   *loopMCP
}

// startLoopGateway starts a loop gateway whose key "agent" has the in-process MCP server's
// tools and the real server-everything's echo (skipped without it).
func startLoopGateway(t *testing.T) *loopGateway {
	cmd, _ := json.Marshal(everythingCommand(t))
	return startLoopGatewayWith(t, func(mcpURL string) string {
		return fmt.Sprintf(`keys:
  agent: {key: agent-key, models: ["*"], tools: [loop, everything/echo], max_tool_iterations: 3}
tools:
  loop: {type: mcp, url: %q, timeout: 20s}
  everything: {type: mcp, command: %s}
cache: {max_entries: 100, ttl: 1m}
`, mcpURL, cmd)
	})
}

// startLoopGatewayWith starts a loop gateway whose keys and tools sections are
// keysAndTools(the in-process MCP server's URL).
func startLoopGatewayWith(t *testing.T, keysAndTools func(mcpURL string) string) *loopGateway {
	g := &loopGateway{fakes: gatewaytest.Fleet(func(kind string) *gatewaytest.Fake { return gatewaytest.NewFake(t, kind) })}
	var mcpURL string
	g.mcp, mcpURL = startLoopMCP(t)
	y := "server: {listen: \"127.0.0.1:0\"}\n" + gatewaytest.FleetYAML(g.fakes, false) + keysAndTools(mcpURL)
	gw := gatewaytest.StartYAML(t, y, gatewaytest.Options{Runtime: proxy.TestRuntime, Tools: true})
	g.srv, g.reg, g.url = gw.Server, gw.Registry, gw.V1()
	return g
}

func (g *loopGateway) client() openai.Client {
	return gatewaytest.OpenAI(g.url, "agent-key")
}

// ask sends one user message (with optional client tools), streamed or not, and returns
// the completion as the client sees it (streams accumulated by the SDK).
func (g *loopGateway) ask(t *testing.T, model, prompt string, stream bool, clientTools ...openai.ChatCompletionToolUnionParam) openai.ChatCompletion {
	t.Helper()
	params := openai.ChatCompletionNewParams{
		Model:    model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
		Tools:    clientTools,
	}
	c := g.client()
	if !stream {
		resp, err := c.Chat.Completions.New(context.Background(), params)
		if err != nil {
			t.Fatalf("completion: %v", err)
		}
		return *resp
	}
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	s := c.Chat.Completions.NewStreaming(context.Background(), params)
	var acc openai.ChatCompletionAccumulator
	ids := map[string]bool{}
	for s.Next() {
		ch := s.Current()
		ids[ch.ID] = true
		acc.AddChunk(ch)
	}
	if err := s.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if len(ids) != 1 {
		t.Errorf("stream has %d response ids, want one", len(ids))
	}
	return acc.ChatCompletion
}

func (g *loopGateway) counter(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	g.srv.Settle() // the answers' records, made after they are written
	mfs, err := g.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.Metric {
			for _, lp := range m.Label {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue metric
				}
			}
			if m.Counter != nil {
				total += m.Counter.GetValue()
			}
			if m.Histogram != nil {
				total += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return total
}

func content(c openai.ChatCompletion) string {
	if len(c.Choices) == 0 {
		return ""
	}
	return c.Choices[0].Message.Content
}

// TestToolLoop drives each scripted scenario through every backend's wire format, streamed
// and not, with the OpenAI Go SDK as the client and real MCP servers as the tools.
func TestToolLoop(t *testing.T) {
	g := startLoopGateway(t)
	noneChoice := map[string]string{
		"anthropic": `"tool_choice":{"type":"none"}`,
		"gemini":    `"mode":"NONE"`,
		"responses": `"tool_choice":"none"`,
		"openai":    `"tool_choice":"none"`,
	}
	for _, kind := range gatewaytest.Kinds {
		for _, stream := range []bool{true, false} {
			name := fmt.Sprintf("%s/stream=%v", kind, stream)
			model := "m-" + kind
			fake := g.fakes[kind]
			t.Run(name+"/one call to the real stdio MCP server", func(t *testing.T) {
				fake.SetScript(
					gatewaytest.Turn{Text: "Let me echo. ", Calls: []gatewaytest.Call{{Name: "everything__echo", Args: `{"message":"hello from agate"}`}}},
					gatewaytest.Turn{Text: "It said hello."},
				)
				got := g.ask(t, model, "echo something", stream)
				if want := "Let me echo. It said hello."; content(got) != want {
					t.Errorf("content = %q, want %q", content(got), want)
				}
				if n := len(got.Choices[0].Message.ToolCalls); n != 0 {
					t.Errorf("client sees %d tool calls, want none", n)
				}
				if fr := got.Choices[0].FinishReason; fr != "stop" {
					t.Errorf("finish_reason = %q", fr)
				}
				if got.Usage.PromptTokens != 20 || got.Usage.CompletionTokens != 10 {
					t.Errorf("usage = %d/%d, want the two turns summed (20/10)", got.Usage.PromptTokens, got.Usage.CompletionTokens)
				}
				bodies := fake.Bodies()
				if len(bodies) != 2 || !strings.Contains(bodies[1], "Echo: hello from agate") {
					t.Errorf("the tool result did not reach turn 2: %d requests", len(bodies))
				}
				if !strings.Contains(bodies[0], "everything__echo") {
					t.Errorf("the server tool was not offered upstream")
				}
			})
			t.Run(name+"/parallel read-only calls overlap", func(t *testing.T) {
				g.mcp.pairCount.Store(0)
				g.mcp.pairing = make(chan struct{})
				fake.SetScript(
					gatewaytest.Turn{Calls: []gatewaytest.Call{{Name: "loop__pair", Args: `{"id":"a"}`}, {Name: "loop__pair", Args: `{"id":"b"}`}}},
					gatewaytest.Turn{Text: "both done"},
				)
				got := g.ask(t, model, "pair up", stream)
				if content(got) != "both done" {
					t.Errorf("content = %q", content(got))
				}
				b := fake.Bodies()[1]
				if !strings.Contains(b, "overlapped-a") || !strings.Contains(b, "overlapped-b") {
					t.Errorf("read-only calls did not run concurrently; turn 2 body: %.400s", b)
				}
			})
			t.Run(name+"/mixed turn returns only the client's call", func(t *testing.T) {
				before := g.mcp.lookups.Load()
				fake.SetScript(gatewaytest.Turn{Calls: []gatewaytest.Call{{Name: "loop__lookup", Args: `{"key":"mixed-` + name + `"}`}, {Name: "get_weather", Args: `{"city":"Oslo"}`}}})
				got := g.ask(t, model, "weather?", stream, openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
					Name:       "get_weather",
					Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
				}))
				calls := got.Choices[0].Message.ToolCalls
				if len(calls) != 1 || calls[0].Function.Name != "get_weather" || calls[0].Function.Arguments != `{"city":"Oslo"}` {
					t.Fatalf("tool calls = %+v, want only get_weather", calls)
				}
				if fr := got.Choices[0].FinishReason; fr != "tool_calls" {
					t.Errorf("finish_reason = %q, want tool_calls", fr)
				}
				if g.mcp.lookups.Load() != before+1 {
					t.Errorf("the server call of the mixed turn did not run")
				}
			})
			t.Run(name+"/tool error and invalid arguments go back to the model", func(t *testing.T) {
				fake.SetScript(
					gatewaytest.Turn{Calls: []gatewaytest.Call{{Name: "loop__fail", Args: `{}`}, {Name: "loop__count", Args: `{"n":"three"}`}}},
					gatewaytest.Turn{Calls: []gatewaytest.Call{{Name: "loop__count", Args: `{"n":3}`}}},
					gatewaytest.Turn{Text: "fixed"},
				)
				got := g.ask(t, model, "count", stream)
				if content(got) != "fixed" {
					t.Errorf("content = %q", content(got))
				}
				b := fake.Bodies()
				if len(b) != 3 {
					t.Fatalf("%d upstream turns, want 3", len(b))
				}
				if !strings.Contains(b[1], "the database is on fire") {
					t.Errorf("the tool error did not reach the model")
				}
				if !strings.Contains(b[1], "n") || !strings.Contains(strings.ToLower(b[1]), "integer") {
					t.Errorf("the schema violation was not explained to the model: %.600s", b[1])
				}
				if !strings.Contains(b[2], "counted to 3") {
					t.Errorf("the corrected call's result did not reach the model")
				}
			})
			t.Run(name+"/iteration limit ends with tool_choice none", func(t *testing.T) {
				call := gatewaytest.Turn{Calls: []gatewaytest.Call{{Name: "loop__lookup", Args: `{"key":"again"}`}}}
				fake.SetScript(call, call, call, gatewaytest.Turn{Text: "giving up"})
				got := g.ask(t, model, "loop forever", stream)
				if content(got) != "giving up" {
					t.Errorf("content = %q", content(got))
				}
				b := fake.Bodies()
				if len(b) != 4 {
					t.Fatalf("%d upstream turns, want 3 tool turns + 1 final", len(b))
				}
				if !strings.Contains(b[3], noneChoice[kind]) {
					t.Errorf("last turn lacks %s: %.300s", noneChoice[kind], b[3])
				}
				if strings.Contains(b[2], noneChoice[kind]) {
					t.Errorf("a turn before the limit already had tool_choice none")
				}
			})
		}
	}
}

// TestToolLoop_CacheHitAcrossRequests: the same call (keys in another order) in a second
// request is served from the cache, as /metrics shows.
func TestToolLoop_CacheHitAcrossRequests(t *testing.T) {
	t.Parallel() // its own gateway and tool servers (#54)
	g := startLoopGateway(t)
	fake := g.fakes["anthropic"]
	hits := g.counter(t, "gateway_tool_cache_total", map[string]string{"result": "hit"})
	before := g.mcp.lookups.Load()
	fake.SetScript(gatewaytest.Turn{Calls: []gatewaytest.Call{{Name: "loop__lookup", Args: `{"key":"k","n":1}`}}}, gatewaytest.Turn{Text: "one"})
	g.ask(t, "m-anthropic", "first", true)
	fake.SetScript(gatewaytest.Turn{Calls: []gatewaytest.Call{{Name: "loop__lookup", Args: `{"n":1, "key":"k"}`}}}, gatewaytest.Turn{Text: "two"})
	got := g.ask(t, "m-anthropic", "second", false)
	if content(got) != "two" {
		t.Errorf("content = %q", content(got))
	}
	if n := g.mcp.lookups.Load() - before; n != 1 {
		t.Errorf("the MCP tool ran %d times, want 1 (second call cached)", n)
	}
	if d := g.counter(t, "gateway_tool_cache_total", map[string]string{"result": "hit"}) - hits; d != 1 {
		t.Errorf("gateway_tool_cache_total{result=hit} grew by %v, want 1", d)
	}
	if !strings.Contains(fake.Bodies()[1], "value-of-k") {
		t.Errorf("the cached result did not reach the model")
	}
	if n := g.counter(t, "gateway_loop_iterations", nil); n < 2 {
		t.Errorf("gateway_loop_iterations has %v samples, want 2", n)
	}
	if n := g.counter(t, "gateway_tool_calls_total", map[string]string{"tool": "loop__lookup"}); n < 2 {
		t.Errorf("gateway_tool_calls_total{tool=loop__lookup} = %v, want 2", n)
	}
	if n := g.counter(t, "gateway_tokens_total", map[string]string{"model": "m-anthropic", "type": "prompt"}); n != 40 {
		t.Errorf("prompt tokens = %v, want 40 (10 per turn, 4 turns)", n)
	}
}

// TestToolLoop_ClientDisconnectCancelsTool: a client that leaves while a slow tool runs
// cancels the tool's context.
func TestToolLoop_ClientDisconnectCancelsTool(t *testing.T) {
	t.Parallel() // its own gateway and tool server (#54)
	g := startLoopGateway(t)
	fake := g.fakes["gemini"]
	fake.SetScript(gatewaytest.Turn{Text: "working on it", Calls: []gatewaytest.Call{{Name: "loop__slow", Args: `{}`}}}, gatewaytest.Turn{Text: "never"})
	ctx, cancel := context.WithCancel(context.Background())
	c := g.client()
	s := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:    "m-gemini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("slow please")},
	})
	for s.Next() {
		if s.Current().Choices[0].Delta.Content != "" {
			break // the model is talking; the tool starts next
		}
	}
	cancel()
	s.Close()
	select {
	case <-g.mcp.slowGone:
	case <-time.After(15 * time.Second):
		t.Fatal("the slow tool's context was not cancelled after the client left")
	}
	if len(fake.Bodies()) != 1 {
		t.Errorf("the model was called again after the client left")
	}
	_ = testutil.ToFloat64
}
