package openai

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/translate"
)

// TestChunkRewriter_FollowsText: what a chunk says of the text a client receives, which the
// gateway follows to continue a broken stream: the first choice's content literal as
// written, its finish reason, and whether a delta carries what is not text (a tool call,
// a refusal, a function_call) or reasoning, in OpenAI's layout (the fast reader) and any
// other.
func TestChunkRewriter_FollowsText(t *testing.T) {
	for _, tt := range []struct {
		name, chunk string
		want        Chunk
	}{
		{"text in OpenAI's layout", `{"id":"a","created":1,"choices":[{"index":0,"delta":{"content":"a\nb"},"logprobs":null,"finish_reason":null}]}`,
			Chunk{Choices: 1, OutputBytes: 4, Text: `a\nb`}},
		{"arguments in OpenAI's layout", `{"id":"a","created":1,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]},"logprobs":null,"finish_reason":null}]}`,
			Chunk{Choices: 1, OutputBytes: 2, Opaque: true}},
		{"role chunk", `{"id":"a","created":1,"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]}`,
			Chunk{Choices: 1}},
		{"text and finish in another layout", `{"id":"a","created":1,"choices":[{"delta":{"content":"end"},"finish_reason":"stop","index":0}]}`,
			Chunk{Choices: 1, OutputBytes: 3, Text: "end", Finished: true, Finish: "stop"}},
		{"the first choice's text only", `{"choices":[{"delta":{"content":"x"}},{"delta":{"content":"y"},"finish_reason":"length"}]}`,
			Chunk{Choices: 2, OutputBytes: 2, Text: "x", Finished: true, Finish: "length"}},
		{"a refusal", `{"choices":[{"delta":{"refusal":"no"}}]}`, Chunk{Choices: 1, OutputBytes: 2, Opaque: true}},
		{"a legacy function_call", `{"choices":[{"delta":{"function_call":{"name":"f"}}}]}`, Chunk{Choices: 1, Opaque: true}},
		{"a tool call's start", `{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get","arguments":""}}]}}]}`,
			Chunk{Choices: 1, OutputBytes: 3, Opaque: true}},
		{"reasoning (vLLM, OpenRouter)", `{"choices":[{"delta":{"reasoning_content":"hm"}}]}`, Chunk{Choices: 1, OutputBytes: 2, Reasoning: true}},
		{"empty reasoning is none", `{"choices":[{"delta":{"reasoning":"","content":"a"}}]}`, Chunk{Choices: 1, OutputBytes: 1, Text: "a"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := ChunkRewriter{Backend: "up", Model: []byte(`"gpt"`), FallbackID: "chatcmpl-gw", Now: func() int64 { return 42 }}
			_, got, err := p.AppendChunk(nil, []byte(tt.chunk))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("read (-want +got):\n%s", diff)
			}
		})
	}
}

// TestChunkRewriter_Continuation: a rewriter that goes on from another's stream keeps its
// id, created and model, and writes the text and usage chunks a continuation splices in.
func TestChunkRewriter_Continuation(t *testing.T) {
	first := ChunkRewriter{Backend: "up", Model: []byte(`"gpt"`), FallbackID: "chatcmpl-gw", Now: func() int64 { return 42 }}
	if _, _, err := first.AppendChunk(nil, []byte(`{"id":"chatcmpl-1","created":7,"model":"m1","choices":[]}`)); err != nil {
		t.Fatal(err)
	}
	next := ChunkRewriter{Backend: "spare", Model: []byte(`"spare"`), FallbackID: "chatcmpl-gw", Now: func() int64 { return 42 }}
	next.KeepHead(&first)
	out, _, err := next.AppendChunk(nil, []byte(`{"id":"chatcmpl-2","created":9,"model":"m2","choices":[{"index":0,"delta":{"content":"a"},"logprobs":null,"finish_reason":null}]}`))
	if err != nil {
		t.Fatal(err)
	}
	head := `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":7,"model":"gpt",`
	for _, tt := range []struct{ got, want string }{
		{string(out), head + `"choices":[{"index":0,"delta":{"content":"a"},"logprobs":null,"finish_reason":null}]}` + "\n\n"},
		{string(next.AppendText(nil, "b\"c", "")), head + `"choices":[{"index":0,"delta":{"content":"b\"c"},"logprobs":null,"finish_reason":null}]}` + "\n\n"},
		{string(next.AppendText(nil, "", "stop")), head + `"choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"stop"}]}` + "\n\n"},
		{string(next.AppendUsage(nil, []byte(`{"prompt_tokens":1}`))), head + `"choices":[],"usage":{"prompt_tokens":1}}` + "\n\n"},
	} {
		if tt.got != tt.want {
			t.Errorf("got  %s\nwant %s", tt.got, tt.want)
		}
	}
}

// TestChunkRewriter_MalformedEvent: an event that cannot be read as a chunk is an error a
// stream may skip (translate.ErrMalformedEvent), the rewriter reading the next as if it had
// not come; an upstream's error object is not.
func TestChunkRewriter_MalformedEvent(t *testing.T) {
	p := ChunkRewriter{Backend: "up", Model: []byte(`"gpt"`), FallbackID: "chatcmpl-gw", Now: func() int64 { return 42 }}
	for _, bad := range []string{`<html>`, `[1,2]`, `{"id":"a","choices":[{"delta":{"content":"x"`} {
		if _, _, err := p.AppendChunk(nil, []byte(bad)); !errors.Is(err, translate.ErrMalformedEvent) {
			t.Errorf("%s: error %v; want a malformed event", bad, err)
		}
	}
	out, _, err := p.AppendChunk(nil, []byte(`{"id":"chatcmpl-1","created":7,"choices":[]}`))
	if err != nil || string(out) != `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":7,"model":"gpt","choices":[]}`+"\n\n" {
		t.Errorf("after the malformed events: %q, %v", out, err)
	}
	if _, _, err := p.AppendChunk(nil, []byte(`{"error":{"message":"overloaded","type":"server_error"}}`)); err == nil || errors.Is(err, translate.ErrMalformedEvent) {
		t.Errorf("error object: %v; want the upstream's error, not a malformed event", err)
	}
}
