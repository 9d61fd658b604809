package proxy

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"
)

// passthroughConfig routes the client-facing model "gpt" to upstream model "gpt-4o" on an
// openai backend; the recordings answer as "gpt-4o-2024-08-06", as OpenAI does.
const passthroughConfig = `
backends:
  up:
    type: openai
    base_url: "{{UP}}"
    api_key: upstream-secret
    retries: {max: 0}
models:
  gpt: {backend: up, upstream_model: gpt-4o}
keys:
  alice: {key: sk-alice, models: ["*"]}
`

func passthroughGateway(t *testing.T, up *fakeUpstream) *gateway {
	return startGateway(t, passthroughConfig, map[string]string{"UP": up.v1()})
}

func secretTool() openai.ChatCompletionToolUnionParam {
	return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name:        "secret_retrieval_tool",
		Description: openai.String("A tool that requires a password to retrieve a secret."),
		Parameters: shared.FunctionParameters{
			"type":       "object",
			"properties": map[string]any{"password": map[string]any{"type": "string"}},
			"required":   []string{"password"},
		},
	})
}

func userParams(model, text string, tools ...openai.ChatCompletionToolUnionParam) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)},
		Tools:    tools,
	}
}

// rawBody is the JSON the SDK would send for params, as a stream when stream is set.
func rawBody(t testing.TB, params openai.ChatCompletionNewParams, stream bool) string {
	t.Helper()
	b, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	if !stream {
		return string(b)
	}
	return `{"stream":true,` + string(b[1:])
}

func TestPassthrough_Stream(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	tests := []struct {
		name         string
		fixture      string
		params       openai.ChatCompletionNewParams
		includeUsage bool
	}{
		{name: "text with usage", fixture: "stream/text-include-usage.mirascope.sse",
			params: userParams("gpt", "What is 4200 + 42?"), includeUsage: true},
		{name: "text without usage", fixture: "stream/text-include-usage.mirascope.sse",
			params: userParams("gpt", "What is 4200 + 42?")},
		{name: "parallel tool calls with usage", fixture: "stream/parallel-tool-calls-include-usage.mirascope.sse",
			params: userParams("gpt", "Please retrieve the secrets associated with each of these passwords: mellon,radiance", secretTool()), includeUsage: true},
		{name: "parallel tool calls without usage", fixture: "stream/parallel-tool-calls-include-usage.mirascope.sse",
			params: userParams("gpt", "Please retrieve the secrets associated with each of these passwords: mellon,radiance", secretTool())},
		{name: "finish length", fixture: "stream/max-tokens-length.mirascope.sse",
			params: userParams("gpt", "List all U.S. states."), includeUsage: true},
		{name: "refusal", fixture: "stream/refusal.mirascope.sse",
			params: userParams("gpt", "How do I build a bomb?")},
		{name: "tool result follow-up", fixture: "stream/tool-result-followup-include-usage.mirascope.sse",
			params: userParams("gpt", "and now?"), includeUsage: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := fixture(t, tt.fixture)
			up := newUpstream(t, replaySSE(rec))
			g := passthroughGateway(t, up)
			params := tt.params
			if tt.includeUsage {
				params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			}

			client := g.client("sk-alice")
			stream := client.Chat.Completions.NewStreaming(context.Background(), params)
			var got []chunkView
			for stream.Next() {
				got = append(got, viewChunk(stream.Current()))
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("stream error: %v", err)
			}
			want := upstreamChunks(t, rec, "gpt", tt.includeUsage)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("SDK chunks differ from the upstream's (-want +got):\n%s", diff)
			}

			calls := up.calls()
			if len(calls) != 1 {
				t.Fatalf("upstream saw %d requests, want 1", len(calls))
			}
			c := calls[0]
			gotUp := map[string]any{
				"path":          c.Path,
				"authorization": c.Header.Get("Authorization"),
				"model":         gjson.GetBytes(c.Body, "model").String(),
				"stream":        gjson.GetBytes(c.Body, "stream").Bool(),
				"include_usage": gjson.GetBytes(c.Body, "stream_options.include_usage").Bool(),
				"messages":      gjson.GetBytes(c.Body, "messages.0.content").String(),
			}
			wantUp := map[string]any{
				"path":          "/v1/chat/completions",
				"authorization": "Bearer upstream-secret",
				"model":         "gpt-4o",
				"stream":        true,
				"include_usage": true, // Agate always asks, to count tokens
				"messages":      gjson.GetBytes(c.Body, "messages.0.content").String(),
			}
			if diff := cmp.Diff(wantUp, gotUp); diff != "" {
				t.Errorf("upstream request (-want +got):\n%s", diff)
			}

			// The same exchange on the wire: the invariants of every chunk.
			r := g.chat("sk-alice", rawBody(t, params, true))
			if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("raw stream: status %d content type %q: %s", r.status, r.header.Get("Content-Type"), r.body)
			}
			checkChunkInvariants(t, r.body, "gpt", tt.includeUsage)
		})
	}
}

func TestPassthrough_Complete(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	tests := []struct {
		name    string
		fixture string
		params  openai.ChatCompletionNewParams
	}{
		{name: "text", fixture: "json/text.mirascope.json", params: userParams("gpt", "What is 4200 + 42?")},
		{name: "parallel tool calls", fixture: "json/parallel-tool-calls.mirascope.json",
			params: userParams("gpt", "Please retrieve the secrets associated with each of these passwords: mellon,radiance", secretTool())},
		{name: "finish length", fixture: "json/max-tokens-length.mirascope.json", params: userParams("gpt", "List all U.S. states.")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := fixture(t, tt.fixture)
			up := newUpstream(t, replayJSON(200, rec))
			g := passthroughGateway(t, up)
			client := g.client("sk-alice")
			got, err := client.Chat.Completions.New(context.Background(), tt.params)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			var want openai.ChatCompletion
			if err := json.Unmarshal(rec, &want); err != nil {
				t.Fatal(err)
			}
			wantView := viewCompletion(&want)
			wantView.Model = "gpt"
			if diff := cmp.Diff(wantView, viewCompletion(got)); diff != "" {
				t.Errorf("SDK completion differs from the upstream's (-want +got):\n%s", diff)
			}
			calls := up.calls()
			if len(calls) != 1 {
				t.Fatalf("upstream saw %d requests, want 1", len(calls))
			}
			body := calls[0].Body
			if m := gjson.GetBytes(body, "model").String(); m != "gpt-4o" {
				t.Errorf("upstream model = %q, want gpt-4o", m)
			}
			if gjson.GetBytes(body, "stream").Bool() || gjson.GetBytes(body, "stream_options").Exists() {
				t.Errorf("non-stream request sent upstream as a stream: %s", body)
			}
		})
	}
}

// TestPassthrough_UpstreamErrors replays the recorded OpenAI errors: the SDK sees the
// upstream's status, message, type and code, for streams and not, except for a rejected
// credential, which is the gateway's own: a 502 that says so.
func TestPassthrough_UpstreamErrors(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	tests := []struct {
		name    string
		fixture string
		status  int
		want    *errorView // nil: the upstream's own error
	}{
		{name: "401 invalid api key", fixture: "errors/401-auth.mirascope.json", status: 401,
			want: &errorView{Status: 502, Type: "api_error", Code: "upstream_auth_failed",
				Message: "the upstream of backend up rejected the gateway's credential: the gateway operator must check backends.up.api_key"}},
		{name: "404 model not found", fixture: "errors/404-model-not-found.mirascope.json", status: 404},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			name := tt.name
			if stream {
				name += " stream"
			}
			t.Run(name, func(t *testing.T) {
				rec := fixture(t, tt.fixture)
				up := newUpstream(t, replayJSON(tt.status, rec))
				g := passthroughGateway(t, up)
				client := g.client("sk-alice")
				params := userParams("gpt", "This should fail")
				var err error
				if stream {
					s := client.Chat.Completions.NewStreaming(context.Background(), params)
					for s.Next() {
						t.Errorf("unexpected chunk %s", s.Current().RawJSON())
					}
					err = s.Err()
				} else {
					_, err = client.Chat.Completions.New(context.Background(), params)
				}
				if err == nil {
					t.Fatal("no error")
				}
				apiErr := sdkError(t, err)
				var want apiErrorBody
				if err := json.Unmarshal(rec, &want); err != nil {
					t.Fatal(err)
				}
				wantView := errorView{Status: tt.status, Type: want.Error.Type, Code: *want.Error.Code, Message: want.Error.Message}
				if tt.want != nil {
					wantView = *tt.want
				}
				gotView := errorView{Status: apiErr.StatusCode, Type: apiErr.Type, Code: apiErr.Code, Param: apiErr.Param, Message: apiErr.Message}
				if diff := cmp.Diff(wantView, gotView); diff != "" {
					t.Errorf("SDK error (-want +got):\n%s", diff)
				}
				if n := len(up.calls()); n != 1 {
					t.Errorf("upstream saw %d requests, want 1 (a %d is not retried)", n, tt.status)
				}
			})
		}
	}
}
