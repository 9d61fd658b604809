package translate_test

import (
	"testing"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/anthropic"
	"github.com/agate-gateway/agate/translate/gemini"
	"github.com/agate-gateway/agate/translate/internal/goldentest"
	"github.com/agate-gateway/agate/translate/openaichat"
	"github.com/agate-gateway/agate/translate/responses"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/internal/sse"
)

// streamUsage decodes an SSE body with p's stream decoder and returns the usage of the
// response as the client sees it.
func streamUsage(t *testing.T, p translate.Provider, upstream []byte) translate.Usage {
	t.Helper()
	var a openaichat.Assembler
	dec := p.NewStreamDecoder(&translate.Options{})
	var ps sse.Parser
	if err := ps.Feed(upstream, func(typ, data []byte) error { return dec.Event(typ, data, a.Add) }); err != nil {
		t.Fatal(err)
	}
	if err := dec.Close(a.Add); err != nil {
		t.Fatal(err)
	}
	return a.Usage
}

// responseUsage decodes a non-streamed body and returns its usage.
func responseUsage(t *testing.T, p translate.Provider, body []byte) translate.Usage {
	t.Helper()
	var a openaichat.Assembler
	if err := p.DecodeResponse(body, a.Add); err != nil {
		t.Fatal(err)
	}
	return a.Usage
}

// anthropicCompactionIterations is a usage.iterations array of the shape the Messages
// API documents for server-side compaction (BetaCompactionIterationUsage and
// BetaMessageIterationUsage: type, input_tokens, output_tokens, cache_read_input_tokens,
// cache_creation_input_tokens): a compaction iteration, then the sampling iteration the
// top-level counts repeat.
const anthropicCompactionIterations = `[` +
	`{"type":"compaction","input_tokens":48,"cache_read_input_tokens":2615,"cache_creation_input_tokens":50090,"output_tokens":496},` +
	`{"type":"message","input_tokens":2,"cache_read_input_tokens":2615,"cache_creation_input_tokens":559,"output_tokens":97}]`

// TestAnthropicUsage pins how Messages API usage becomes OpenAI usage: message_delta
// counts replace message_start's when present and keep them when absent; with
// usage.iterations the billed totals are the sums over the iterations.
func TestAnthropicUsage(t *testing.T) {
	// message_start as recorded (anthropic/stream/web-search-cache-read-create.mirascope.sse).
	const start = `event: message_start
data: {"type":"message_start","message":{"model":"claude-sonnet-4-20250514","id":"msg_01RTb8gNSZYK4XCHrW4Dx7B2","type":"message","role":"assistant","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"cache_creation_input_tokens":2399,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":2399,"ephemeral_1h_input_tokens":0},"output_tokens":1,"service_tier":"standard"}}      }

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

`
	delta := func(usage string) string {
		return "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":" + usage + "}\n\n" +
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	}
	tests := []struct {
		name     string
		upstream []byte
		want     translate.Usage
	}{
		{
			name:     "recorded: message_delta replaces every count",
			upstream: goldentest.ReadFixture(t, "anthropic/stream/web-search-cache-read-create.mirascope.sse"),
			// message_delta: input 17, cache write 23258, cache read 16242, output 515.
			want: translate.Usage{PromptTokens: 17 + 23258 + 16242, CompletionTokens: 515, CachedTokens: 16242, CacheCreationTokens: 23258},
		},
		{
			name:     "recorded: message_delta repeats input and cache counts",
			upstream: goldentest.ReadFixture(t, "anthropic/stream/max-tokens.mirascope.sse"),
			want:     translate.Usage{PromptTokens: 15, CompletionTokens: 50},
		},
		{
			name:     "message_delta with output_tokens only keeps message_start's input counts",
			upstream: []byte(start + delta(`{"output_tokens":12}`)),
			want:     translate.Usage{PromptTokens: 3 + 2399, CompletionTokens: 12, CacheCreationTokens: 2399},
		},
		{
			name:     "null counts in message_delta are absent counts",
			upstream: []byte(start + delta(`{"input_tokens":null,"cache_read_input_tokens":null,"output_tokens":12}`)),
			want:     translate.Usage{PromptTokens: 3 + 2399, CompletionTokens: 12, CacheCreationTokens: 2399},
		},
		{
			name: "iterations are summed",
			upstream: []byte(start + delta(`{"input_tokens":2,"cache_creation_input_tokens":559,"cache_read_input_tokens":2615,"output_tokens":97,"iterations":`+
				anthropicCompactionIterations+`}`)),
			want: translate.Usage{PromptTokens: 50 + 5230 + 50649, CompletionTokens: 593, CachedTokens: 5230, CacheCreationTokens: 50649},
		},
		{
			name:     "empty iterations fall back to the top-level counts",
			upstream: []byte(start + delta(`{"input_tokens":2,"output_tokens":97,"iterations":[]}`)),
			want:     translate.Usage{PromptTokens: 2 + 2399, CompletionTokens: 97, CacheCreationTokens: 2399},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, streamUsage(t, anthropic.New(), tt.upstream)); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAnthropicResponseUsage_Iterations pins the non-streamed counterpart: the billed
// totals of a compacted response are the sums over usage.iterations.
func TestAnthropicResponseUsage_Iterations(t *testing.T) {
	tests := []struct {
		name string
		body string
		want translate.Usage
	}{
		{
			name: "recorded without iterations",
			body: string(goldentest.ReadFixture(t, "anthropic/json/text.mirascope.json")),
			want: responseUsage(t, anthropic.New(), goldentest.ReadFixture(t, "anthropic/json/text.mirascope.json")),
		},
		{
			name: "with iterations",
			body: `{"id":"msg_1","type":"message","role":"assistant","model":"claude-opus-4-6","content":[{"type":"compaction","content":"Summary."},{"type":"text","text":"Hi"}],"stop_reason":"end_turn","stop_sequence":null,` +
				`"usage":{"input_tokens":2,"cache_creation_input_tokens":559,"cache_read_input_tokens":2615,"output_tokens":97,"iterations":` + anthropicCompactionIterations + `}}`,
			want: translate.Usage{PromptTokens: 50 + 5230 + 50649, CompletionTokens: 593, CachedTokens: 5230, CacheCreationTokens: 50649},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, responseUsage(t, anthropic.New(), []byte(tt.body))); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGeminiUsage pins usageMetadata as OpenAI usage: promptTokenCount already includes
// cachedContentTokenCount; toolUsePromptTokenCount is input too; thoughtsTokenCount is
// reported beside candidatesTokenCount and is part of completion_tokens; each chunk's
// usageMetadata is cumulative and replaces the last.
func TestGeminiUsage(t *testing.T) {
	chunk := func(usage string) string {
		return "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Hi\"}],\"role\": \"model\"},\"finishReason\": \"STOP\",\"index\": 0}],\"usageMetadata\": " +
			usage + ",\"modelVersion\": \"gemini-2.5-flash\",\"responseId\": \"r1\"}\r\n\r\n"
	}
	tests := []struct {
		name     string
		upstream []byte
		want     translate.Usage
	}{
		{
			name:     "recorded: thoughts beside candidates",
			upstream: goldentest.ReadFixture(t, "gemini/stream/text-basic.mirascope.sse"),
			want:     translate.Usage{PromptTokens: 13, CompletionTokens: 63 + 75, ReasoningTokens: 75},
		},
		{
			name:     "recorded: thoughts without candidatesTokenCount",
			upstream: goldentest.ReadFixture(t, "gemini/stream/thinking.mirascope.sse"),
			want:     translate.Usage{PromptTokens: 30, CompletionTokens: 1947, ReasoningTokens: 1947},
		},
		{
			name: "cached content and tool-use prompt",
			upstream: []byte(chunk(`{"promptTokenCount": 1200,"cachedContentTokenCount": 1024,"toolUsePromptTokenCount": 300,"candidatesTokenCount": 20,"thoughtsTokenCount": 5,"totalTokenCount": 1525,` +
				`"promptTokensDetails": [{"modality": "TEXT","tokenCount": 1200}],"cacheTokensDetails": [{"modality": "TEXT","tokenCount": 1024}],"toolUsePromptTokensDetails": [{"modality": "TEXT","tokenCount": 300}]}`)),
			want: translate.Usage{PromptTokens: 1500, CompletionTokens: 25, CachedTokens: 1024, ReasoningTokens: 5},
		},
		{
			name: "the last usageMetadata replaces earlier ones",
			upstream: []byte(chunk(`{"promptTokenCount": 10,"candidatesTokenCount": 4,"cachedContentTokenCount": 8}`) +
				chunk(`{"promptTokenCount": 10,"candidatesTokenCount": 9}`)),
			want: translate.Usage{PromptTokens: 10, CompletionTokens: 9},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, streamUsage(t, gemini.New(), tt.upstream)); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("recorded non-streamed", func(t *testing.T) {
		// gemini/json/text.mirascope.json: prompt 13, candidates 77, thoughts 25.
		got := responseUsage(t, gemini.New(), goldentest.ReadFixture(t, "gemini/json/text.mirascope.json"))
		if diff := cmp.Diff(translate.Usage{PromptTokens: 13, CompletionTokens: 102, ReasoningTokens: 25}, got); diff != "" {
			t.Errorf("usage (-want +got):\n%s", diff)
		}
	})
}

// TestResponsesUsage pins Responses usage as OpenAI usage: input_tokens already includes
// cached tokens and output_tokens includes reasoning tokens.
func TestResponsesUsage(t *testing.T) {
	tests := []struct {
		name     string
		upstream []byte
		want     translate.Usage
	}{
		{
			name:     "recorded: reasoning tokens",
			upstream: goldentest.ReadFixture(t, "responses/stream/reasoning-summary.mirascope.sse"),
			want:     translate.Usage{PromptTokens: 32, CompletionTokens: 839, ReasoningTokens: 832},
		},
		{
			name: "cached tokens",
			upstream: []byte("event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"created_at\":1,\"status\":\"in_progress\",\"model\":\"gpt-5\",\"output\":[]}}\n\n" +
				"event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":1,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"created_at\":1,\"status\":\"completed\",\"model\":\"gpt-5\",\"output\":[]," +
				"\"usage\":{\"input_tokens\":2006,\"input_tokens_details\":{\"cached_tokens\":1920},\"output_tokens\":300,\"output_tokens_details\":{\"reasoning_tokens\":256},\"total_tokens\":2306}}}\n\n"),
			want: translate.Usage{PromptTokens: 2006, CompletionTokens: 300, CachedTokens: 1920, ReasoningTokens: 256},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, streamUsage(t, responses.New(), tt.upstream)); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
		})
	}
}

// TestResponsesUsage_Failed pins that a response.failed that reports usage has its tokens
// counted before the failure ends the stream.
func TestResponsesUsage_Failed(t *testing.T) {
	const up = "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"created_at\":1,\"status\":\"in_progress\",\"model\":\"gpt-5\",\"output\":[]}}\n\n" +
		"event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":1,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"created_at\":1,\"status\":\"failed\",\"model\":\"gpt-5\",\"output\":[]," +
		"\"error\":{\"code\":\"server_error\",\"message\":\"The model failed.\"},\"usage\":{\"input_tokens\":40,\"input_tokens_details\":{\"cached_tokens\":0},\"output_tokens\":12,\"output_tokens_details\":{\"reasoning_tokens\":8},\"total_tokens\":52}}}\n\n"
	var a openaichat.Assembler
	dec := responses.New().NewStreamDecoder(&translate.Options{})
	var p sse.Parser
	err := p.Feed([]byte(up), func(typ, data []byte) error { return dec.Event(typ, data, a.Add) })
	if err == nil {
		t.Fatal("response.failed did not end the stream with an error")
	}
	if diff := cmp.Diff(translate.Usage{PromptTokens: 40, CompletionTokens: 12, ReasoningTokens: 8}, a.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
}
