package responsesin

import (
	"strings"
	"testing"
)

// benchRequest is a ~4 KB Responses request: instructions, a function tool, a text format
// and a conversation with a function call round trip.
var benchRequest = func() string {
	var b strings.Builder
	b.WriteString(`{"model":"gpt-5","instructions":"You are a careful assistant. Answer briefly.","store":false,"stream":true,` +
		`"reasoning":{"effort":"low","summary":"auto"},"text":{"format":{"type":"text"},"verbosity":"low"},` +
		`"tools":[{"type":"function","name":"get_weather","description":"Weather for a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"strict":true}],` +
		`"tool_choice":"auto","max_output_tokens":1024,"temperature":0.7,"input":[`)
	for i := 0; i < 8; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":"message","role":"user","content":[{"type":"input_text","text":"` + strings.Repeat("Tell me about the weather in Paris. ", 6) + `"}]},` +
			`{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},` +
			`{"type":"function_call_output","call_id":"call_1","output":"sunny, 21 \u00b0C"}`)
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
		if _, err := Parse(body); err != nil {
			b.Fatal(err)
		}
	}
}

// TestParse_AllocBudget keeps parsing the ~4 KB benchmark request within the parse budget's
// allocations (40; the time budget, 20 µs, is BenchmarkParse's).
func TestParse_AllocBudget(t *testing.T) {
	body := []byte(benchRequest)
	if n := testing.AllocsPerRun(20, func() {
		if _, err := Parse(body); err != nil {
			t.Fatal(err)
		}
	}); n > 40 {
		t.Errorf("Parse of a %d-byte request: %.0f allocations, budget 40", len(body), n)
	}
}
