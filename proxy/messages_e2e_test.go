package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/proxy"
)

// These tests drive POST /v1/messages with the official Anthropic Go SDK, through the
// mock backend and through fake upstreams of each wire (fakeprovider_test.go); the
// anthropic one is the passthrough.

// messagesGateway is a running gateway with the mock and one fake upstream of each kind;
// model "m-<kind>" routes to kind, "m-mock" to the mock.
type messagesGateway struct {
	url   string
	fakes map[string]*gatewaytest.Fake
}

func startMessagesGateway(t *testing.T, extra string) *messagesGateway {
	g := &messagesGateway{fakes: gatewaytest.Fleet(func(kind string) *gatewaytest.Fake { return gatewaytest.NewFake(t, kind) })}
	y := "server: {listen: \"127.0.0.1:0\"}\n" + fleetConfig(g.fakes) + extra
	g.url = gatewaytest.StartYAML(t, y, gatewaytest.Options{Runtime: proxy.TestRuntime}).URL
	return g
}

// fleetConfig is the configuration of the mock and fakes (gatewaytest.FleetYAML) for the
// key "client".
func fleetConfig(fakes map[string]*gatewaytest.Fake) string {
	return gatewaytest.FleetYAML(fakes, true) + "keys:\n  client: {key: client-key, models: [\"*\"]}\n"
}

// startClaudeGateway starts a gateway whose model m-claude is claude-x on an anthropic
// backend at upstreamURL, for the key "client"; it returns the gateway's URL.
func startClaudeGateway(t *testing.T, upstreamURL string) string {
	return gatewaytest.StartYAML(t, fmt.Sprintf(`backends:
  claude: {type: anthropic, base_url: %q, api_key: upstream-secret}
models:
  m-claude: {backend: claude, upstream_model: claude-x}
keys:
  client: {key: client-key, models: ["*"]}
`, upstreamURL), gatewaytest.Options{Runtime: proxy.TestRuntime}).URL
}

func anthropicClient(base string) anthropic.Client {
	return gatewaytest.Anthropic(base, "client-key")
}

var wires = append([]string{"mock"}, gatewaytest.Kinds...)

func userText(s string) anthropic.MessageParam {
	return anthropic.NewUserMessage(anthropic.NewTextBlock(s))
}

// streamMessage runs NewStreaming and accumulates the events, checking the stream's
// invariants as they come.
func streamMessage(t *testing.T, c anthropic.Client, p anthropic.MessageNewParams) anthropic.Message {
	t.Helper()
	s := c.Messages.NewStreaming(context.Background(), p)
	var msg anthropic.Message
	var types []string
	for s.Next() {
		ev := s.Current()
		types = append(types, ev.Type)
		if err := msg.Accumulate(ev); err != nil {
			t.Fatalf("accumulate %s: %v", ev.Type, err)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	checkEventOrder(t, types)
	return msg
}

// checkEventOrder checks the Messages stream grammar: message_start, then blocks, then
// message_delta and message_stop, each once.
func checkEventOrder(t *testing.T, types []string) {
	t.Helper()
	count := map[string]int{}
	for _, ty := range types {
		count[ty]++
	}
	if len(types) < 3 || types[0] != "message_start" || types[len(types)-1] != "message_stop" ||
		types[len(types)-2] != "message_delta" || count["message_start"] != 1 || count["message_stop"] != 1 ||
		count["message_delta"] != 1 || count["content_block_start"] != count["content_block_stop"] {
		t.Errorf("event order: %v", types)
	}
}

func TestMessages_SDKNew_Mock(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	g := startMessagesGateway(t, "")
	c := anthropicClient(g.url)
	msg, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model: "m-mock", MaxTokens: 100, Messages: []anthropic.MessageParam{userText("hello there world")}})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%s %s %s %d/%d %s", msg.Role, msg.Model, msg.StopReason, msg.Usage.InputTokens, msg.Usage.OutputTokens, msg.Content[0].Text)
	if diff := cmp.Diff("assistant m-mock end_turn 3/3 hello there world", got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if !strings.HasPrefix(msg.ID, "msg_") {
		t.Errorf("id %q", msg.ID)
	}
}

func TestMessages_SDKStreaming_EveryWire(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	g := startMessagesGateway(t, "")
	c := anthropicClient(g.url)
	for _, wire := range wires {
		t.Run(wire, func(t *testing.T) {
			text := "the answer is 42"
			if wire != "mock" {
				g.fakes[wire].SetScript(gatewaytest.Turn{Text: text})
			}
			msg := streamMessage(t, c, anthropic.MessageNewParams{Model: anthropic.Model("m-" + wire), MaxTokens: 100,
				System:   []anthropic.TextBlockParam{{Text: "be brief"}},
				Metadata: anthropic.MetadataParam{UserID: anthropic.String("user-1")}, // dropped for gemini
				Messages: []anthropic.MessageParam{userText(text)}})
			if len(msg.Content) != 1 || msg.Content[0].Text != text || msg.StopReason != "end_turn" || msg.Model != anthropic.Model("m-"+wire) {
				t.Errorf("message %s", msg.RawJSON())
			}
			if msg.Usage.OutputTokens == 0 {
				t.Errorf("no output tokens: %s", msg.RawJSON())
			}
			if wire == "openai" { // a chat completions body, not the Messages body
				b := g.fakes[wire].Bodies()[0]
				if gjson.Get(b, "messages.0.role").Str != "system" || gjson.Get(b, "system").Exists() || gjson.Get(b, "metadata").Exists() {
					t.Errorf("openai upstream body %s", b)
				}
			}
		})
	}
}

func TestMessages_SDKToolRoundTrip_EveryWire(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	g := startMessagesGateway(t, "")
	c := anthropicClient(g.url)
	tool := anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{Name: "get_weather", Description: anthropic.String("weather of a city"),
		InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}}}}
	for _, wire := range wires {
		t.Run(wire, func(t *testing.T) {
			if wire != "mock" {
				g.fakes[wire].SetScript(gatewaytest.Turn{Calls: []gatewaytest.Call{{Name: "get_weather", Args: `{"city":"Paris"}`}}}, gatewaytest.Turn{Text: "sunny in Paris"})
			}
			p := anthropic.MessageNewParams{Model: anthropic.Model("m-" + wire), MaxTokens: 100, Tools: []anthropic.ToolUnionParam{tool},
				Messages: []anthropic.MessageParam{userText("use get_weather for Paris")}}
			first := streamMessage(t, c, p)
			if first.StopReason != "tool_use" || len(first.Content) == 0 {
				t.Fatalf("turn 1: %s", first.RawJSON())
			}
			call := first.Content[len(first.Content)-1]
			if call.Type != "tool_use" || call.Name != "get_weather" {
				t.Fatalf("turn 1 block: %s", call.RawJSON())
			}
			if wire != "mock" && string(call.Input) != `{"city":"Paris"}` {
				t.Errorf("input %s", call.Input)
			}
			p.Messages = append(p.Messages, first.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(call.ID, "sunny", false)))
			var second *anthropic.Message
			if wire == "mock" {
				var err error
				if second, err = c.Messages.New(context.Background(), p); err != nil {
					t.Fatal(err)
				}
			} else { // the fakes only stream
				m := streamMessage(t, c, p)
				second = &m
			}
			if second.StopReason != "end_turn" || !strings.Contains(second.Content[0].Text, "sunny") {
				t.Errorf("turn 2: %s", second.RawJSON())
			}
			if wire != "mock" {
				bodies := g.fakes[wire].Bodies()
				last := bodies[len(bodies)-1]
				if !strings.Contains(last, "sunny") || !strings.Contains(last, "get_weather") {
					t.Errorf("upstream turn 2 lacks the call or its result: %s", last)
				}
			}
		})
	}
}

// TestMessages_ThinkingSignaturesTwoTurns: a thinking block's signature from an anthropic
// upstream reaches the client and, sent back, reaches the upstream unchanged; a Gemini
// thought signature rides in the tool_use id and is back on the Gemini request.
func TestMessages_ThinkingSignaturesTwoTurns(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	const sig = "EuYDCmMIDBgCKkC05Zda4P+Cdk/LQKE+Aol4ZY3EY4wLDrf8XcApz2PiqrxiRjS7uY1kGtZ63vVlaVmtuIpdsHbkdfGHb9AsBYw+MhljbGF1ZGUt"
	var stream strings.Builder
	ev := func(typ, data string) { fmt.Fprintf(&stream, "event: %s\ndata: %s\n\n", typ, data) }
	ev("message_start", `{"type":"message_start","message":{"model":"claude-x","id":"msg_1","type":"message","role":"assistant","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":46,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":3}}}`)
	ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`)
	ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"let me think"}}`)
	ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"`+sig+`"}}`)
	ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
	ev("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`)
	ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Pouch"}}`)
	ev("content_block_stop", `{"type":"content_block_stop","index":1}`)
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":20}}`)
	ev("message_stop", `{"type":"message_stop"}`)
	up := newReplayUpstream(t)
	answer := replay{200, "text/event-stream", []byte(stream.String())}
	up.push(answer, answer)
	url := startClaudeGateway(t, up.srv.URL)
	c := anthropicClient(url)
	p := anthropic.MessageNewParams{Model: "m-claude", MaxTokens: 2048, Thinking: anthropic.ThinkingConfigParamOfEnabled(1024),
		Messages: []anthropic.MessageParam{userText("name a pelican")}}
	first := streamMessage(t, c, p)
	if first.Content[0].Type != "thinking" || first.Content[0].Signature != sig || first.Model != "m-claude" {
		t.Fatalf("turn 1: %s", first.RawJSON())
	}
	p.Messages = append(p.Messages, first.ToParam(), userText("another"))
	streamMessage(t, c, p)
	bodies := up.bodies()
	if got := gjson.Get(bodies[1], "messages.1.content.0.signature").Str; got != sig {
		t.Errorf("signature upstream on turn 2: %q", got)
	}
	if got := gjson.Get(bodies[1], "model").Str; got != "claude-x" {
		t.Errorf("model upstream: %q", got)
	}

	// Gemini: the thought signature of the fake's first call comes back.
	g := startMessagesGateway(t, "")
	g.fakes["gemini"].SetScript(gatewaytest.Turn{Calls: []gatewaytest.Call{{Name: "f", Args: `{}`}}}, gatewaytest.Turn{Text: "done"})
	gc := anthropicClient(g.url)
	gp := anthropic.MessageNewParams{Model: "m-gemini", MaxTokens: 100, Thinking: anthropic.ThinkingConfigParamOfEnabled(1024),
		Tools:    []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "f", InputSchema: anthropic.ToolInputSchemaParam{}}}},
		Messages: []anthropic.MessageParam{userText("call f")}}
	turn1 := streamMessage(t, gc, gp)
	call := turn1.Content[len(turn1.Content)-1]
	gp.Messages = append(gp.Messages, turn1.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(call.ID, "ok", false)))
	streamMessage(t, gc, gp)
	gb := g.fakes["gemini"].Bodies()
	if !strings.Contains(gb[1], `"thoughtSignature":"c2lnbmF0dXJl"`) {
		t.Errorf("gemini turn 2 lacks the thought signature: %s", gb[1])
	}
	if strings.ContainsAny(call.ID, "~") {
		t.Errorf("tool_use id %q is not a Messages id", call.ID)
	}
}

func TestMessages_Errors(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	g := startMessagesGateway(t, "")
	tests := []struct {
		name         string
		key          string
		method, path string
		body         string
		wantStatus   int
		wantType     string
	}{
		{name: "no key", body: `{}`, wantStatus: 401, wantType: "authentication_error"},
		{name: "bad key", key: "nope", body: `{}`, wantStatus: 401, wantType: "authentication_error"},
		{name: "missing max_tokens", key: "client-key", body: `{"model":"m-mock","messages":[{"role":"user","content":"hi"}]}`, wantStatus: 400, wantType: "invalid_request_error"},
		{name: "duplicate model", key: "client-key", body: `{"model":"m-mock","model":"m-anthropic","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, wantStatus: 400, wantType: "invalid_request_error"},
		{name: "case variant", key: "client-key", body: `{"model":"m-anthropic","MODEL":"x","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, wantStatus: 400, wantType: "invalid_request_error"},
		{name: "unknown model", key: "client-key", body: `{"model":"nope","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, wantStatus: 404, wantType: "not_found_error"},
		{name: "not json", key: "client-key", body: `{`, wantStatus: 400, wantType: "invalid_request_error"},
		{name: "top_k to openai", key: "client-key", body: `{"model":"m-openai","top_k":5,"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, wantStatus: 400, wantType: "invalid_request_error"},
		{name: "count_tokens without messages", key: "client-key", path: "/v1/messages/count_tokens", body: `{"model":"m-mock"}`, wantStatus: 400, wantType: "invalid_request_error"},
		{name: "GET", key: "client-key", method: "GET", body: ``, wantStatus: 405, wantType: "invalid_request_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method, path := "POST", "/v1/messages?beta=true"
			if tt.method != "" {
				method = tt.method
			}
			if tt.path != "" {
				path = tt.path
			}
			req, _ := http.NewRequest(method, g.url+path, strings.NewReader(tt.body))
			if tt.key != "" {
				req.Header.Set("x-api-key", tt.key)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			got := fmt.Sprintf("%d %s %s", resp.StatusCode, gjson.GetBytes(b, "type").Str, gjson.GetBytes(b, "error.type").Str)
			if diff := cmp.Diff(fmt.Sprintf("%d error %s", tt.wantStatus, tt.wantType), got); diff != "" {
				t.Errorf("(-want +got)\n%s\nbody %s", diff, b)
			}
			if gjson.GetBytes(b, "error.message").Str == "" || !gjson.GetBytes(b, "request_id").Exists() {
				t.Errorf("body %s", b)
			}
		})
	}
	// The SDK reads them as its typed errors.
	bad := gatewaytest.Anthropic(g.url, "nope")
	_, err := bad.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "m-mock", MaxTokens: 5, Messages: []anthropic.MessageParam{userText("hi")}})
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 401 {
		t.Errorf("sdk error %v", err)
	}
}

// TestMessages_PassthroughForwardsBytes: to an anthropic backend the body goes as the
// client sent it, model rewritten, with anthropic-beta and anthropic-version passed on and
// the gateway's credential; Claude Code's fields arrive untouched.
func TestMessages_PassthroughForwardsBytes(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	var got http.Header
	var gotBody []byte
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, gotBody = r.Header.Clone(), mustRead(r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"model":"claude-x","id":"msg_01","type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":17,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":15}}`)
	}))
	t.Cleanup(up.Close)
	url := startClaudeGateway(t, up.URL)
	body := `{"model":"m-claude","max_tokens":128000,"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},"thinking":{"type":"adaptive","display":"omitted"},"output_config":{"effort":"medium"},"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]}`
	req, _ := http.NewRequest("POST", url+"/v1/messages?beta=true", strings.NewReader(body))
	req.Header.Set("x-api-key", "client-key")
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("anthropic-beta", "claude-code-20250219,context-management-2025-06-27")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out := mustRead(resp.Body)
	if resp.StatusCode != 200 || gjson.GetBytes(out, "model").Str != "m-claude" {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	want := strings.Replace(body, `"m-claude"`, `"claude-x"`, 1)
	if diff := cmp.Diff(want, string(gotBody)); diff != "" {
		t.Errorf("upstream body (-want +got)\n%s", diff)
	}
	hdr := fmt.Sprintf("%s|%s|%s", got.Get("x-api-key"), got.Get("anthropic-beta"), got.Get("anthropic-version"))
	if diff := cmp.Diff("upstream-secret|claude-code-20250219,context-management-2025-06-27|2023-06-01", hdr); diff != "" {
		t.Errorf("upstream headers (-want +got)\n%s", diff)
	}
}

func mustRead(r io.Reader) []byte {
	b, _ := io.ReadAll(r)
	return b
}

func TestMessages_CountTokens(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	var paths []string
	var mu sync.Mutex
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := mustRead(r.Body)
		mu.Lock()
		paths = append(paths, r.URL.Path+" "+gjson.GetBytes(b, "model").Str+gjson.GetBytes(b, "generateContentRequest.model").Str)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, ":countTokens") {
			io.WriteString(w, `{"totalTokens":31}`)
			return
		}
		io.WriteString(w, `{"input_tokens":2095}`)
	}))
	t.Cleanup(up.Close)
	url := gatewaytest.StartYAML(t, fmt.Sprintf(`backends:
  claude: {type: anthropic, base_url: %q, api_key: upstream-secret}
  gem: {type: gemini, base_url: %q, api_key: upstream-secret}
  offline: {type: mock}
models:
  m-claude: {backend: claude, upstream_model: claude-x}
  m-gem: {backend: gem, upstream_model: gemini-x}
  m-mock: {backend: offline}
keys:
  client: {key: client-key, models: ["*"]}
`, up.URL, up.URL), gatewaytest.Options{Runtime: proxy.TestRuntime}).URL
	c := anthropicClient(url)
	tests := []struct {
		name  string
		model string
		want  int64
	}{
		{name: "anthropic count_tokens", model: "m-claude", want: 2095},
		{name: "gemini countTokens", model: "m-gem", want: 31},
		{name: "estimate", model: "m-mock", want: 4 + 4 + 3}, // two messages; 11 bytes of text
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := c.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{Model: anthropic.Model(tt.model),
				System:   anthropic.MessageCountTokensParamsSystemUnion{OfString: anthropic.String("be brief")},
				Messages: []anthropic.MessageParam{userText("hey")}})
			if err != nil {
				t.Fatal(err)
			}
			if n.InputTokens != tt.want {
				t.Errorf("input_tokens %d, want %d", n.InputTokens, tt.want)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"/v1/messages/count_tokens claude-x", "/v1beta/models/gemini-x:countTokens models/gemini-x"}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("upstream calls (-want +got)\n%s", diff)
	}
}

// TestMessages_CacheControlReachesAnthropic: on the translated path (the route has a
// fallback of another type, so the body is not forwarded as it came) an Anthropic SDK
// client's prompt-cache breakpoints reach the anthropic upstream on the same blocks.
func TestMessages_CacheControlReachesAnthropic(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	up := newReplayUpstream(t)
	up.push(replay{200, "application/json", []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"cache_creation_input_tokens":3,"cache_read_input_tokens":0,"output_tokens":1}}`)})
	url := gatewaytest.StartYAML(t, fmt.Sprintf(`backends:
  claude: {type: anthropic, base_url: %q, api_key: upstream-secret}
  offline: {type: mock}
models:
  demo: {backend: offline}
  m-claude: {backend: claude, upstream_model: claude-x, fallbacks: [demo]}
keys:
  client: {key: client-key, models: ["*"]}
`, up.srv.URL), gatewaytest.Options{Runtime: proxy.TestRuntime}).URL
	cached := anthropic.TextBlockParam{Text: "Long instructions.", CacheControl: anthropic.NewCacheControlEphemeralParam()}
	p := anthropic.MessageNewParams{Model: "m-claude", MaxTokens: 100,
		System: []anthropic.TextBlockParam{{Text: "Be terse."}, cached},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.ContentBlockParamUnion{OfText: &anthropic.TextBlockParam{
			Text: "A long document.", CacheControl: anthropic.NewCacheControlEphemeralParam()}})}}
	c := anthropicClient(url)
	msg, err := c.Messages.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Content[0].Text != "ok" {
		t.Fatalf("answer %s", msg.RawJSON())
	}
	bodies := up.bodies()
	if len(bodies) != 1 {
		t.Fatalf("%d upstream calls", len(bodies))
	}
	got := []string{gjson.Get(bodies[0], "system.0.cache_control").Raw, gjson.Get(bodies[0], "system.1.cache_control").Raw,
		gjson.Get(bodies[0], "messages.0.content.0.cache_control").Raw}
	if diff := cmp.Diff([]string{"", `{"type":"ephemeral"}`, `{"type":"ephemeral"}`}, got); diff != "" {
		t.Errorf("cache_control upstream (-want +got):\n%s\nbody: %s", diff, bodies[0])
	}
}
