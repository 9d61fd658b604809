package responsesin

import (
	"bytes"
	"os"
	"testing"

	"github.com/agate-gateway/agate/translate"
)

// BenchmarkReadAnswer is the passthrough's read of a responses backend's whole answer:
// the end-to-end bench's (testdata/bench-answer.json: the mock's Response object, ~1.7 KB
// of ~30 members, a text output and a full usage object).
func BenchmarkReadAnswer(b *testing.B) {
	body, err := os.ReadFile("testdata/bench-answer.json")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, kind, _ := ReadAnswer(body); kind != BodyResponse {
			b.Fatal(kind)
		}
	}
}

// BenchmarkParseSmall parses the end-to-end bench's small Responses request (apis.patch's
// responsesSmall).
func BenchmarkParseSmall(b *testing.B) {
	body := []byte(`{"input":[{"content":"Write a short paragraph about the history of the bicycle.","role":"user"}],"instructions":"You are a helpful assistant. Answer concisely and accurately.","max_output_tokens":1024,"model":"resp-bench","store":false,"temperature":0.7}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseHeadSmall is the passthrough's first pass (ParseHeadLazy, the model
// passing) over the end-to-end bench's small Responses request.
func BenchmarkParseHeadSmall(b *testing.B) {
	body := []byte(`{"input":[{"content":"Write a short paragraph about the history of the bicycle.","role":"user"}],"instructions":"You are a helpful assistant. Answer concisely and accurately.","max_output_tokens":1024,"model":"resp-bench","store":false,"temperature":0.7}`)
	passes := func(string) bool { return true }
	b.ReportAllocs()
	for b.Loop() {
		if _, complete, err := ParseHeadLazy(body, 1<<20, passes); err != nil || complete {
			b.Fatal(complete, err)
		}
	}
}

// BenchmarkTranslatedSmall is this package's part of the translated row (the bench's
// product-responses: Responses client, Anthropic upstream) for the end-to-end bench's
// small request: the first pass building the request (the model does not pass), the
// encoder over the events an upstream decoder emits for the mock's answer (one text
// delta of its ~700-byte text, the usage, the finish) and the whole Response object.
func BenchmarkTranslatedSmall(b *testing.B) {
	body := []byte(`{"input":[{"content":"Write a short paragraph about the history of the bicycle.","role":"user"}],"instructions":"You are a helpful assistant. Answer concisely and accurately.","max_output_tokens":1024,"model":"resp-bench","store":false,"temperature":0.7}`)
	text := "The bicycle began as the draisine, a wooden running machine built by Karl Drais in 1817, which riders pushed along with their feet. Pedals arrived on the front wheel in the 1860s, and the high wheeler followed, fast but dangerous. The safety bicycle of the 1880s, with two wheels of equal size and a chain driving the rear wheel, made cycling practical for almost everyone. Pneumatic tyres, introduced by John Boyd Dunlop in 1888, smoothed the ride, and by the end of the century bicycles had changed how people travelled to work, courted, and campaigned for the right to vote. Later came derailleur gears, lighter frames made of aluminium and carbon fibre, and in recent years electric assistance."
	events := []translate.Event{
		{Kind: translate.EventTextDelta, Text: text},
		{Kind: translate.EventUsage, Usage: translate.Usage{PromptTokens: 412, CompletionTokens: 187}},
		{Kind: translate.EventFinish, FinishReason: translate.FinishStop},
	}
	translated := func(string) bool { return false }
	var out []byte
	b.ReportAllocs()
	for b.Loop() {
		req, complete, err := ParseHeadLazy(body, 1<<20, translated)
		if err != nil || !complete {
			b.Fatal(complete, err)
		}
		enc := NewEncoder(req, EncoderOptions{ID: "resp_0bee99a5de5b12910068f9669f8f3481", Model: "resp-bench", Created: 1761175200})
		out = out[:0]
		for i := range events {
			out = enc.Encode(out, &events[i])
		}
		out = enc.Finish(out, 1761175201)
		out = enc.AppendResponse(out[:0])
	}
	if !bytes.Contains(out, []byte(`"temperature":0.7`)) || !bytes.Contains(out, []byte(`"id":"msg_0bee99a5de5b12910068f9669f8f3481_0"`)) {
		b.Fatalf("unexpected Response: %s", out)
	}
}

// TestParseHeadLazy_StageAllocs: the gateway's first pass of the bench's small request, in
// a reused Stage, allocates the body's copy, the Request with its Core, which newRequest
// makes in one allocation, and the temperature's float: 3 a parse (4 when the Request and
// its Core were two).
func TestParseHeadLazy_StageAllocs(t *testing.T) {
	body := []byte(`{"input":[{"content":"Write a short paragraph about the history of the bicycle.","role":"user"}],"instructions":"You are a helpful assistant. Answer concisely and accurately.","max_output_tokens":1024,"model":"resp-bench","store":false,"temperature":0.7}`)
	passes := func(string) bool { return true }
	st := new(Stage)
	n := testing.AllocsPerRun(50, func() {
		if _, complete, err := st.ParseHeadLazy(body, 1<<20, passes); err != nil || complete {
			t.Fatal(complete, err)
		}
	})
	if n > 3 {
		t.Errorf("ParseHeadLazy in a Stage: %.1f allocations a parse, want at most 3", n)
	}
}
