package responsesin

import (
	"os"
	"testing"
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
