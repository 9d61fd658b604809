package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/goldentest"
	"github.com/agate-gateway/agate/translate/openaichat"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/internal/sse"
)

// Logprobs objects as OpenAI sends them: a token holding part of a character (its bytes
// are not its text's) and an escaped token.
const (
	openAILogprobsHi  = `{"content":[{"token":"Hi","logprob":-0.0100,"bytes":[72,105],"top_logprobs":[{"token":"Hi","logprob":-0.01,"bytes":[72,105]},{"token":"Hello","logprob":-4.6,"bytes":[72,101,108,108,111]}]}],"refusal":null}`
	openAILogprobsCJK = `{"content":[{"token":"bytes:\\xe4\\xbd","logprob":-0.5,"bytes":[228,189],"top_logprobs":[{"token":"bytes:\\xe4\\xbd","logprob":-0.5,"bytes":[228,189]}]},{"token":"bytes:\\xa0","logprob":-1e-06,"bytes":[160],"top_logprobs":[]},{"token":"\"\n","logprob":-2,"bytes":[34,10],"top_logprobs":[]}],"refusal":null}`
)

func openAIChunkJSON(delta, logprobs string) string {
	return `{"id":"chatcmpl-up","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":` + delta + `,"logprobs":` + logprobs + `,"finish_reason":null}]}`
}

// jsonEqual reports whether a and b are the same JSON value.
func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal([]byte(a), &va); err != nil {
		t.Fatalf("not JSON: %s", a)
	}
	if err := json.Unmarshal([]byte(b), &vb); err != nil {
		t.Fatalf("not JSON: %s", b)
	}
	return cmp.Equal(va, vb)
}

// TestOpenAIChatStream_Logprobs pins that an OpenAI-compatible upstream's logprobs survive
// decoding, so that re-encoded chunks (the tool loop's path) carry what the upstream sent,
// on the same chunk as their content.
func TestOpenAIChatStream_Logprobs(t *testing.T) {
	frames := []string{
		openAIChunkJSON(`{"role":"assistant","content":"","refusal":null}`, `{"content":[],"refusal":null}`),
		openAIChunkJSON(`{"content":"Hi"}`, openAILogprobsHi),
		openAIChunkJSON(`{"content":"你\"\n"}`, openAILogprobsCJK),
		openAIChunkJSON(`{}`, openAILogprobsHi), // logprobs without content: a chunk of their own
		`{"id":"chatcmpl-up","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}`,
	}
	var up strings.Builder
	for _, f := range frames {
		up.WriteString("data: " + f + "\n\n")
	}
	up.WriteString("data: [DONE]\n\n")
	out := goldentest.Stream(t, func() translate.StreamDecoder { return New().NewStreamDecoder(&translate.Options{}) }, []byte(up.String()))
	goldentest.CheckChunks(t, out)

	type chunk struct{ Content, Logprobs string }
	var got []chunk
	var p sse.Parser
	p.Feed(out, func(_, data []byte) error {
		if c := gjson.GetBytes(data, "choices.0"); c.Exists() && c.Get("finish_reason").Type == gjson.Null {
			got = append(got, chunk{c.Get("delta.content").Raw, c.Get("logprobs").Raw})
		}
		return nil
	})
	want := []chunk{{`""`, "null"}, {`"Hi"`, openAILogprobsHi}, {`"你\"\n"`, openAILogprobsCJK}, {"", openAILogprobsHi}}
	if len(got) != len(want) {
		t.Fatalf("got chunks %q, want %d", got, len(want))
	}
	for i := range want {
		if got[i].Content != want[i].Content || !jsonEqual(t, want[i].Logprobs, got[i].Logprobs) {
			t.Errorf("chunk %d: content %s logprobs %s\nwant content %s logprobs %s", i, got[i].Content, got[i].Logprobs, want[i].Content, want[i].Logprobs)
		}
	}
}

// TestOpenAIChatResponse_Logprobs pins the same for a chat.completion: the assembled
// completion carries the upstream's choices[].logprobs, and null when it had none.
func TestOpenAIChatResponse_Logprobs(t *testing.T) {
	tests := []struct {
		name, logprobs, want string
	}{
		{"Tokens", openAILogprobsCJK, openAILogprobsCJK},
		{"Null", `null`, `null`},
		{"Empty", `{"content":[],"refusal":null}`, `null`},
		{"NullBytesAreTheTokens", `{"content":[{"token":"a","logprob":-1,"bytes":null,"top_logprobs":[]}],"refusal":null}`, `{"content":[{"token":"a","logprob":-1,"bytes":[97],"top_logprobs":[]}],"refusal":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"id":"chatcmpl-up","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"你\"\n","refusal":null},"logprobs":` + tt.logprobs + `,"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":3,"total_tokens":4}}`
			got := gjson.GetBytes(goldentest.Response(t, New(), []byte(body)), "choices.0.logprobs").Raw
			if !jsonEqual(t, tt.want, got) {
				t.Errorf("logprobs = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestOpenAIChatResponse_NotACompletion: a 200 body that is not a chat completion is an
// upstream error (502), never an empty answer.
func TestOpenAIChatResponse_NotACompletion(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		want       int
	}{
		{name: "html", body: "<html>bad gateway</html>", want: 502},
		{name: "truncated", body: `{"id":"x","choices":[{"message":{"content":"hi"`, want: 502},
		{name: "array", body: `[{"choices":[]}]`, want: 502},
		{name: "no choices", body: `{"id":"x","object":"chat.completion"}`, want: 502},
		{name: "error object", body: `{"error":{"message":"overloaded","type":"server_error"}}`, want: 502},
	} {
		t.Run(tt.name, func(t *testing.T) {
			events := 0
			err := New().DecodeResponse([]byte(tt.body), func(*translate.Event) error { events++; return nil })
			var ue *translate.UpstreamError
			if !errors.As(err, &ue) || ue.Status != tt.want {
				t.Fatalf("err = %v, want an UpstreamError with status %d", err, tt.want)
			}
			if events != 0 {
				t.Errorf("%d events emitted before the error", events)
			}
		})
	}
}

// BenchmarkPassthroughRequest is the OpenAI passthrough's request rewrite of the ~4 KB chat
// request (testdata/bench-request.json, a copy of openaichat's): "spliced" is the one-pass
// rewrite of a parsed body, "rewritten" the sjson path an edited request takes.
func BenchmarkPassthroughRequest(b *testing.B) {
	body, err := os.ReadFile("testdata/bench-request.json")
	if err != nil {
		b.Fatal(err)
	}
	req, err := openaichat.ParseRequest(body)
	if err != nil {
		b.Fatal(err)
	}
	unlocated := *req
	unlocated.Spans = translate.BodySpans{}
	for _, bc := range []struct {
		name string
		req  *translate.Request
	}{{"spliced", req}, {"rewritten", &unlocated}} {
		for _, stream := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/stream=%t", bc.name, stream), func(b *testing.B) {
				opts := &translate.Options{UpstreamModel: "gpt-4o-2024-08-06", Stream: stream}
				var dst []byte
				b.ReportAllocs()
				b.SetBytes(int64(len(body)))
				for b.Loop() {
					if dst, err = New().AppendRequest(dst[:0], bc.req, opts); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestParseUsage: the usage reader (ParseUsage, and the passthrough and decoders through
// it) takes the first member of each name, as gjson's Get does, reads the two details
// objects, and ignores members it does not know and details that are not objects.
func TestParseUsage(t *testing.T) {
	tests := []struct {
		name, raw string
		want      translate.Usage
		ok        bool
	}{
		{"counts and details",
			`{"prompt_tokens":412,"completion_tokens":187,"total_tokens":599,"prompt_tokens_details":{"cached_tokens":12,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":64,"audio_tokens":0}}`,
			translate.Usage{PromptTokens: 412, CompletionTokens: 187, CachedTokens: 12, ReasoningTokens: 64}, true},
		{"details first", `{"completion_tokens_details":{"reasoning_tokens":3},"prompt_tokens_details":{"cached_tokens":2},"completion_tokens":5,"prompt_tokens":7}`,
			translate.Usage{PromptTokens: 7, CompletionTokens: 5, CachedTokens: 2, ReasoningTokens: 3}, true},
		{"a repeated name: the first counts", `{"prompt_tokens":1,"prompt_tokens":2,"prompt_tokens_details":{"cached_tokens":1,"cached_tokens":9}}`,
			translate.Usage{PromptTokens: 1, CachedTokens: 1}, true},
		{"details null", `{"prompt_tokens":4,"prompt_tokens_details":null,"completion_tokens_details":[1]}`,
			translate.Usage{PromptTokens: 4}, true},
		{"a member named like a nested one", `{"cached_tokens":5,"reasoning_tokens":6,"completion_tokens":1}`,
			translate.Usage{CompletionTokens: 1}, true},
		{"empty", `{}`, translate.Usage{}, true},
		{"not an object", `[1]`, translate.Usage{}, false},
		{"not JSON", `{"prompt_tokens":`, translate.Usage{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseUsage([]byte(tt.raw))
			if got != tt.want || ok != tt.ok {
				t.Errorf("ParseUsage(%s) = %+v, %v; want %+v, %v", tt.raw, got, ok, tt.want, tt.ok)
			}
		})
	}
}
