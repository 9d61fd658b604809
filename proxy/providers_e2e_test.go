package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agate-gateway/agate/translate/anthropic"
	"github.com/agate-gateway/agate/translate/gemini"
	"github.com/agate-gateway/agate/translate/responses"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/tidwall/sjson"
	"golang.org/x/tools/txtar"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/internal/sse"
	"github.com/agate-gateway/agate/proxy"
	"github.com/agate-gateway/agate/translate"
)

// replayUpstream answers each request with the next queued response and records bodies.
type replayUpstream struct {
	srv *httptest.Server

	mu       sync.Mutex
	queue    []replay
	requests []recorded
}

type replay struct {
	status      int
	contentType string
	body        []byte
}

type recorded struct {
	path string
	body string
}

func newReplayUpstream(t *testing.T) *replayUpstream {
	u := &replayUpstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.requests = append(u.requests, recorded{r.URL.RequestURI(), string(body)})
		if len(u.queue) == 0 {
			u.mu.Unlock()
			http.Error(w, "nothing queued", 500)
			return
		}
		next := u.queue[0]
		u.queue = u.queue[1:]
		u.mu.Unlock()
		w.Header().Set("Content-Type", next.contentType)
		w.WriteHeader(next.status)
		w.Write(next.body)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *replayUpstream) push(r ...replay) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.queue, u.requests = append(u.queue[:0], r...), nil
}

func (u *replayUpstream) seen() []recorded {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]recorded(nil), u.requests...)
}

// bodies returns the bodies of the requests seen since the last push.
func (u *replayUpstream) bodies() []string {
	var b []string
	for _, r := range u.seen() {
		b = append(b, r.body)
	}
	return b
}

// providerGateway runs Agate with one backend per translated provider, all pointing at
// one replay upstream. The client-facing model of backend k is "client-model" routed
// through key k (see models below), matching the name the translate goldens use.
type providerGateway struct {
	url string
	up  *replayUpstream
}

func startProviderGateway(t *testing.T) *providerGateway {
	up := newReplayUpstream(t)
	y := fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  anthropic: {type: anthropic, base_url: %[1]q, api_key: a-secret, retries: {max: 0}}
  gemini:    {type: gemini, base_url: %[1]q, api_key: g-secret, retries: {max: 0}}
  responses: {type: responses, base_url: %[1]q, api_key: r-secret, retries: {max: 0}}
models:
  client-model: {backend: anthropic, upstream_model: claude-sonnet-4-0}
  gemini-model: {backend: gemini, upstream_model: gemini-3-pro-preview}
  responses-model: {backend: responses, upstream_model: gpt-5}
`, up.srv.URL)
	return &providerGateway{url: gatewaytest.StartYAML(t, y, gatewaytest.Options{Runtime: proxy.TestRuntime}).V1(), up: up}
}

// withBackend rewrites the config so that "client-model" routes to backend kind.
func startGatewayFor(t *testing.T, kind string) *providerGateway {
	up := newReplayUpstream(t)
	upstreamModel := map[string]string{"anthropic": "claude-sonnet-4-0", "gemini": "gemini-3-pro-preview", "responses": "gpt-5"}[kind]
	y := fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  up: {type: %s, base_url: %q, api_key: upstream-secret, retries: {max: 0}}
models:
  client-model: {backend: up, upstream_model: %s}
`, kind, up.srv.URL, upstreamModel)
	return &providerGateway{url: gatewaytest.StartYAML(t, y, gatewaytest.Options{Runtime: proxy.TestRuntime}).V1(), up: up}
}

func (g *providerGateway) client() openai.Client {
	return gatewaytest.OpenAI(g.url, "k")
}

func section(ar *txtar.Archive, name string) ([]byte, bool) {
	for _, f := range ar.Files {
		if f.Name == name {
			return f.Data, true
		}
	}
	return nil, false
}

// normalizeChunk blanks the per-response id and created of an OpenAI chunk or completion.
func normalizeChunk(t *testing.T, raw []byte) string {
	t.Helper()
	out, err := sjson.SetBytes(raw, "id", "ID")
	if err == nil {
		out, err = sjson.SetBytes(out, "created", 0)
	}
	if err != nil {
		t.Fatalf("normalizing %s: %v", raw, err)
	}
	var v any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("chunk is not JSON: %s", raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// wantFrames splits a golden want.sse into normalized chunk JSONs and the final error
// message, if the stream ends with an error frame.
func wantFrames(t *testing.T, want []byte) (chunks []string, errMsg string) {
	var p sse.Parser
	p.Feed(want, func(_, data []byte) error {
		switch {
		case string(data) == "[DONE]":
		case bytes.HasPrefix(data, []byte(`{"error"`)):
			var e struct{ Error struct{ Message string } }
			json.Unmarshal(data, &e)
			errMsg = e.Error.Message
		default:
			chunks = append(chunks, normalizeChunk(t, data))
		}
		return nil
	})
	return chunks, errMsg
}

// TestProviderGoldensThroughGateway replays every recorded upstream stream and response of
// the translate goldens through the gateway, with the OpenAI Go SDK as the client: the
// chunks the SDK receives must be the golden chunks (id and created aside), and an upstream
// failure must reach the SDK as an error.
func TestProviderGoldensThroughGateway(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	for _, kind := range []string{"anthropic", "gemini", "responses"} {
		g := startGatewayFor(t, kind)
		files, _ := filepath.Glob(filepath.Join("..", "translate", kind, "testdata", "*.txtar"))
		if len(files) == 0 {
			t.Fatalf("no goldens for %s", kind)
		}
		ran := 0
		for _, f := range files {
			ar, err := txtar.ParseFile(f)
			if err != nil {
				t.Fatal(err)
			}
			name := kind + "/" + strings.TrimSuffix(filepath.Base(f), ".txtar")
			want, hasSSE := section(ar, "want.sse")
			upSSE, hasUpSSE := section(ar, "upstream.sse")
			if chunks, ok := section(ar, "upstream.chunks.txt"); ok {
				upSSE, hasUpSSE = reframe(chunks, kind != "gemini"), true
			}
			if hasSSE && hasUpSSE {
				ran++
				t.Run(name+"/stream", func(t *testing.T) { replayStream(t, g, upSSE, want) })
			}
			wantJSON, hasWant := section(ar, "want.json")
			upJSON, hasUpJSON := section(ar, "upstream.json")
			if hasWant && hasUpJSON && bytes.Contains(wantJSON, []byte(`"chat.completion"`)) {
				ran++
				t.Run(name+"/json", func(t *testing.T) { replayJSON(t, g, upJSON, wantJSON) })
			}
		}
		if ran < 8 {
			t.Errorf("%s: only %d goldens replayed", kind, ran)
		}
	}
}

// reframe rebuilds SSE from a vercel chunks file, as testdata/fixtures/SOURCES.md says.
func reframe(chunks []byte, typed bool) []byte {
	var out bytes.Buffer
	for _, line := range bytes.Split(chunks, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if typed {
			var head struct{ Type string }
			json.Unmarshal(line, &head)
			fmt.Fprintf(&out, "event: %s\ndata: %s\n\n", head.Type, line)
		} else {
			fmt.Fprintf(&out, "data: %s\r\n\r\n", line)
		}
	}
	return out.Bytes()
}

func replayStream(t *testing.T, g *providerGateway, upstream, want []byte) {
	g.up.push(replay{200, "text/event-stream", upstream})
	c := g.client()
	s := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:         "client-model",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("replay")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var got []string
	for s.Next() {
		got = append(got, normalizeChunk(t, []byte(s.Current().RawJSON())))
	}
	wantChunks, wantErr := wantFrames(t, want)
	if diff := cmp.Diff(wantChunks, got); diff != "" {
		t.Errorf("chunks through the SDK differ from the golden (-want +got):\n%s", diff)
	}
	err := s.Err()
	switch {
	case wantErr == "" && err != nil:
		t.Errorf("stream error %v, want none", err)
	case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
		t.Errorf("stream error %v, want one saying %q", err, wantErr)
	}
}

func replayJSON(t *testing.T, g *providerGateway, upstream, want []byte) {
	g.up.push(replay{200, "application/json", upstream})
	c := g.client()
	resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "client-model",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("replay")},
	})
	if err != nil {
		t.Fatalf("completion: %v", err)
	}
	if diff := cmp.Diff(normalizeChunk(t, want), normalizeChunk(t, []byte(resp.RawJSON()))); diff != "" {
		t.Errorf("completion through the SDK differs from the golden (-want +got):\n%s", diff)
	}
}

// TestProviderErrorsThroughGateway sends every recorded provider error body through the
// gateway: the SDK sees the status and message the translator gives, stream or not.
func TestProviderErrorsThroughGateway(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	var index []struct {
		File, Provider string
		Status         int
		ContentType    string `json:"content_type"`
	}
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "fixtures", "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &index); err != nil {
		t.Fatal(err)
	}
	providers := map[string]translate.Provider{"anthropic": anthropic.New(), "gemini": gemini.New(), "responses": responses.New()}
	gateways := map[string]*providerGateway{}
	n := 0
	for _, e := range index {
		p, ok := providers[e.Provider]
		if !ok || e.Status < 400 {
			continue
		}
		body, err := os.ReadFile(filepath.Join("..", "testdata", "fixtures", e.File))
		if err != nil {
			t.Fatal(err)
		}
		if gateways[e.Provider] == nil {
			gateways[e.Provider] = startGatewayFor(t, e.Provider)
		}
		g := gateways[e.Provider]
		want := p.DecodeError(e.Status, body)
		if want.Status == 401 { // the gateway's own key: see TestUpstreamCredentialRejected
			want = &translate.UpstreamError{Status: 502, Type: "api_error",
				Message: "the upstream of backend up rejected the gateway's credential: the gateway operator must check backends.up.api_key"}
		}
		for _, stream := range []bool{false, true} {
			n++
			t.Run(fmt.Sprintf("%s/stream=%v", e.File, stream), func(t *testing.T) {
				g.up.push(replay{e.Status, e.ContentType, body})
				params := openai.ChatCompletionNewParams{Model: "client-model",
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}}
				c := g.client()
				if stream {
					s := c.Chat.Completions.NewStreaming(context.Background(), params)
					for s.Next() {
					}
					err = s.Err()
				} else {
					_, err = c.Chat.Completions.New(context.Background(), params)
				}
				var apiErr *openai.Error
				if !errors.As(err, &apiErr) {
					t.Fatalf("err = %v, want an *openai.Error", err)
				}
				if apiErr.StatusCode != want.Status || apiErr.Message != want.Message || apiErr.Type != want.Type {
					t.Errorf("got %d %s %q, want %d %s %q", apiErr.StatusCode, apiErr.Type, apiErr.Message, want.Status, want.Type, want.Message)
				}
			})
		}
	}
	if n < 8 {
		t.Errorf("only %d error recordings replayed", n)
	}
}

// twoTurn runs a client-side tool loop through the gateway with the plain SDK: turn 1's
// answer is sent back with standard fields only, plus a tool result. It returns the body
// the upstream received on turn 2.
func twoTurn(t *testing.T, kind string, turn1 []byte, contentType string) string {
	g := startGatewayFor(t, kind)
	g.up.push(replay{200, contentType, turn1}, replay{200, contentType, turn1})
	c := g.client()
	params := openai.ChatCompletionNewParams{
		Model:           "client-model",
		Messages:        []openai.ChatCompletionMessageParamUnion{openai.UserMessage("use the tool")},
		ReasoningEffort: openai.ReasoningEffortHigh,
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
			Name: "tool", Parameters: openai.FunctionParameters{"type": "object"}})},
	}
	s := c.Chat.Completions.NewStreaming(context.Background(), params)
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil {
		t.Fatalf("turn 1: %v", err)
	}
	msg := acc.Choices[0].Message
	if len(msg.ToolCalls) == 0 {
		t.Fatalf("turn 1 has no tool calls")
	}
	params.Messages = append(params.Messages, msg.ToParam())
	for _, tc := range msg.ToolCalls {
		params.Messages = append(params.Messages, openai.ToolMessage("result for "+tc.Function.Name, tc.ID))
	}
	s = c.Chat.Completions.NewStreaming(context.Background(), params)
	for s.Next() {
	}
	seen := g.up.seen()
	if len(seen) != 2 {
		t.Fatalf("upstream saw %d requests, want 2", len(seen))
	}
	return seen[1].body
}

func goldenSection(t *testing.T, kind, file, name string) []byte {
	ar, err := txtar.ParseFile(filepath.Join("..", "translate", kind, "testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	b, ok := section(ar, name)
	if !ok {
		t.Fatalf("%s has no %s", file, name)
	}
	if name == "upstream.chunks.txt" {
		return reframe(b, kind != "gemini")
	}
	return b
}

// TestTwoTurn_AnthropicThinkingSignatures: Claude's thinking blocks (with signatures) of a
// tool-use turn come back on the next turn through a client that keeps standard fields.
func TestTwoTurn_AnthropicThinkingSignatures(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	turn1 := goldenSection(t, "anthropic", "stream-thinking-tool-use.txtar", "upstream.sse")
	body := twoTurn(t, "anthropic", turn1, "text/event-stream")
	for _, want := range []string{`"type":"thinking"`, `"signature":"EuYDCmMIDBgCKkC05Zda4P+Cdk/LQK`, `"type":"redacted_thinking"`, `"type":"tool_result"`} {
		if !strings.Contains(body, want) {
			t.Errorf("turn 2 body lacks %s:\n%.1500s", want, body)
		}
	}
}

// TestTwoTurn_GeminiThoughtSignatures: Gemini 3's thought signature on a function call
// survives the round trip through the plain SDK.
func TestTwoTurn_GeminiThoughtSignatures(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	turn1 := goldenSection(t, "gemini", "vercel-chunks-google-tool-call-gemini3.txtar", "upstream.chunks.txt")
	body := twoTurn(t, "gemini", turn1, "text/event-stream")
	if !strings.Contains(body, `"thoughtSignature":"EpEgCo4gAb4+9vvWwdN+NkNiCCwrqv`) {
		t.Errorf("turn 2 body lacks the thought signature:\n%.1500s", body)
	}
	if !strings.Contains(body, `"functionResponse"`) {
		t.Errorf("turn 2 body lacks the function response")
	}
}

// TestTwoTurn_ResponsesEncryptedReasoning: with store false, the encrypted reasoning item of
// a function-calling turn is sent back on the next turn.
func TestTwoTurn_ResponsesEncryptedReasoning(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	turn1 := goldenSection(t, "responses", "vercel-reasoning-encrypted-content-turn1.txtar", "upstream.chunks.txt")
	body := twoTurn(t, "responses", turn1, "text/event-stream")
	for _, want := range []string{`"type":"reasoning"`, `"encrypted_content":"gAAAAAB`, `"type":"function_call_output"`, `"include":["reasoning.encrypted_content"]`} {
		if !strings.Contains(body, want) {
			t.Errorf("turn 2 body lacks %s:\n%.1500s", want, body)
		}
	}
}
