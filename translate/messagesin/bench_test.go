package messagesin_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/messagesin"
)

// benchRequest is a ~4 KB Messages request: a system prompt, a tool and a conversation with
// a tool_use round trip.
var benchRequest = func() string {
	var b strings.Builder
	b.WriteString(`{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":true,` +
		`"system":[{"type":"text","text":"You are a careful assistant. Answer briefly."}],` +
		`"tools":[{"name":"get_weather","description":"Weather for a city","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}],` +
		`"thinking":{"type":"enabled","budget_tokens":2048},"metadata":{"user_id":"u1"},"messages":[`)
	for i := 0; i < 8; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"role":"user","content":[{"type":"text","text":"` + strings.Repeat("Tell me about the weather in Paris. ", 6) + `"}]},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"sunny, 21 \u00b0C"}]}`)
	}
	b.WriteString(`]}`)
	return b.String()
}()

// BenchmarkParse parses a ~4 KB request (budget: 20 µs, 40 allocs).
func BenchmarkParse(b *testing.B) {
	body := []byte(benchRequest)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := messagesin.Parse(body); err != nil {
			b.Fatal(err)
		}
	}
}

// TestParse_AllocBudget keeps parsing the ~4 KB benchmark request within the parse budget's
// allocations (40; the time budget, 20 µs, is BenchmarkParse's).
func TestParse_AllocBudget(t *testing.T) {
	body := []byte(benchRequest)
	if n := testing.AllocsPerRun(20, func() {
		if _, err := messagesin.Parse(body); err != nil {
			t.Fatal(err)
		}
	}); n > 40 {
		t.Errorf("Parse of a %d-byte request: %.0f allocations, budget 40", len(body), n)
	}
}

// BenchmarkParseHeadSmall is the passthrough's first pass (ParseHead, the model passing)
// over the end-to-end bench's small Messages request (apis.patch's messagesSmall).
func BenchmarkParseHeadSmall(b *testing.B) {
	body := []byte(`{"max_tokens":1024,"messages":[{"content":"Write a short paragraph about the history of the bicycle.","role":"user"}],"model":"claude-bench","system":"You are a helpful assistant. Answer concisely and accurately.","temperature":0.7}`)
	passes := func(string) bool { return true }
	b.ReportAllocs()
	for b.Loop() {
		if _, _, complete, err := messagesin.ParseHead(body, 1<<20, passes); err != nil || complete {
			b.Fatal(complete, err)
		}
	}
}

// BenchmarkTranslatedSmall is this package's part of the translated row (the bench's
// product-messages-oai: Messages client, OpenAI chat upstream) for the end-to-end bench's
// small request: the first pass building the request (the model does not pass) and the
// Message object assembled from the events an upstream decoder emits for the mock's
// answer (one text delta of its ~700-byte text, the usage, the finish).
func BenchmarkTranslatedSmall(b *testing.B) {
	body := []byte(`{"max_tokens":1024,"messages":[{"content":"Write a short paragraph about the history of the bicycle.","role":"user"}],"model":"claude-bench","system":"You are a helpful assistant. Answer concisely and accurately.","temperature":0.7}`)
	text := strings.Repeat("The bicycle began as the draisine, a wooden running machine. ", 12)
	events := []translate.Event{
		{Kind: translate.EventTextDelta, Text: text},
		{Kind: translate.EventUsage, Usage: translate.Usage{PromptTokens: 412, CompletionTokens: 187}},
		{Kind: translate.EventFinish, FinishReason: translate.FinishStop},
	}
	translated := func(string) bool { return false }
	var out []byte
	b.ReportAllocs()
	for b.Loop() {
		if _, _, complete, err := messagesin.ParseHead(body, 1<<20, translated); err != nil || !complete {
			b.Fatal(complete, err)
		}
		m := &messagesin.Message{ID: "msg_0bee99a5de5b12910068f966", Model: "claude-bench"}
		for i := range events {
			if err := m.Add(&events[i]); err != nil {
				b.Fatal(err)
			}
		}
		var err error
		if out, err = m.AppendBody(out[:0]); err != nil {
			b.Fatal(err)
		}
	}
	if !bytes.Contains(out, []byte(`{"type":"text","text":"The bicycle`)) {
		b.Fatalf("unexpected Message: %s", out)
	}
}
