package proxy

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// TestResponses_BuiltinToolsOnTheToolLoop: a Responses client whose key has server tools
// is served on the translated path (the tool loop) even by a responses backend; its
// built-in tool (web_search) still reaches the upstream beside the server tool, and the
// upstream's web_search_call items (a recorded web search) come back to the client as
// output items, in the stream and in the response the SDK accumulates.
func TestResponses_BuiltinToolsOnTheToolLoop(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	chunks, err := os.ReadFile(filepath.Join("..", "testdata", "fixtures", "responses", "vercel-chunks", "openai-web-search-tool.1.chunks.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var sse []byte
	var wantIDs []string
	for _, line := range strings.Split(string(chunks), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		var ev struct {
			Type string
			Item struct{ ID, Type string }
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type == "response.output_item.done" && ev.Item.Type == "web_search_call" {
			wantIDs = append(wantIDs, ev.Item.ID)
		}
		sse = append(sse, "event: "+ev.Type+"\ndata: "+line+"\n\n"...)
	}
	up := newUpstream(t, replaySSE(sse))
	g := startGatewayWith(t, `
backends:
  oai: {type: responses, base_url: "{{UP}}", api_key: up-secret, retries: {max: 0}}
models:
  m: {backend: oai, upstream_model: up-model}
keys:
  agent: {key: agent-key, models: ["*"], tools: [clock]}
tools:
  clock: {type: builtin, name: time_now}
`, map[string]string{"UP": up.v1()}, gatewayOptions{tools: clockTools{}})
	params := responses.ResponseNewParams{Model: "m", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Berlin news today?")},
		Tools: []responses.ToolUnionParam{{OfWebSearch: &responses.WebSearchToolParam{Type: responses.WebSearchToolTypeWebSearch}}}}
	c := g.client("agent-key")
	s := c.Responses.NewStreaming(context.Background(), params)
	var acc responses.ResponseAccumulator
	var streamed, final []string
	for s.Next() {
		ev := s.Current()
		var se responses.ResponsesServerEventUnion
		if err := json.Unmarshal([]byte(ev.RawJSON()), &se); err != nil {
			t.Fatalf("event does not decode as a server event: %v", err)
		}
		if err := acc.AddEvent(se); err != nil {
			t.Fatalf("accumulator rejected %s: %v", ev.Type, err)
		}
		if ev.Type == "response.output_item.done" && ev.Item.Type == "web_search_call" {
			streamed = append(streamed, ev.Item.ID)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	resp, err := acc.ReconstructedResponse()
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range resp.Output {
		if it.Type == "web_search_call" {
			final = append(final, it.ID)
		}
	}
	if diff := cmp.Diff(wantIDs, streamed); len(wantIDs) < 2 || diff != "" {
		t.Errorf("streamed web_search_call items (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantIDs, final); diff != "" {
		t.Errorf("web_search_call items of the response (-want +got):\n%s", diff)
	}
	calls := up.calls()
	if len(calls) != 1 {
		t.Fatalf("%d upstream calls", len(calls))
	}
	var body struct {
		Tools []struct{ Type, Name string }
	}
	if err := json.Unmarshal(calls[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]struct{ Type, Name string }{{"web_search", ""}, {"function", "clock"}}, body.Tools); diff != "" {
		t.Errorf("upstream tools (-want +got):\n%s", diff)
	}
}

// TestMessages_BuiltinToolsOnTheToolLoop: a Messages client whose key has server tools is
// served on the translated path even by an anthropic backend; its Anthropic-defined tool
// (web_search_20250305) still reaches the upstream beside the server tool, and the
// upstream's server_tool_use and web_search_tool_result blocks (a recorded web search)
// come back to the client as content blocks.
func TestMessages_BuiltinToolsOnTheToolLoop(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	rec := anthropicFixture(t, "web-search-cache-read-create.mirascope.sse")
	up := newUpstream(t, replaySSE(rec))
	g := startGatewayWith(t, `
backends:
  claude: {type: anthropic, base_url: "{{UP}}", api_key: up-secret, retries: {max: 0}}
models:
  m: {backend: claude, upstream_model: claude-x}
keys:
  agent: {key: client-key, models: ["*"], tools: [clock]}
tools:
  clock: {type: builtin, name: time_now}
`, map[string]string{"UP": up.URL}, gatewayOptions{tools: clockTools{}})
	r := g.messages(`{"model":"m","max_tokens":1000,"stream":true,"messages":[{"role":"user","content":"ETH price on Jan 1?"}],` +
		`"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":2}]}`)
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	var types []string
	for _, line := range strings.Split(string(r.body), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type         string
			ContentBlock struct{ Type string } `json:"content_block"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event is not JSON: %v: %s", err, data)
		}
		if ev.Type == "content_block_start" {
			types = append(types, ev.ContentBlock.Type)
		}
	}
	want := []string{"server_tool_use", "web_search_tool_result", "text", "server_tool_use", "web_search_tool_result", "text"}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Errorf("content blocks (-want +got):\n%s", diff)
	}
	calls := up.calls()
	if len(calls) != 1 {
		t.Fatalf("%d upstream calls", len(calls))
	}
	var body struct {
		Tools []struct{ Type, Name string }
	}
	if err := json.Unmarshal(calls[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]struct{ Type, Name string }{{"web_search_20250305", "web_search"}, {"", "clock"}}, body.Tools); diff != "" {
		t.Errorf("upstream tools (-want +got):\n%s", diff)
	}
}
