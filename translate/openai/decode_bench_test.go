package openai

import (
	"os"
	"testing"

	"github.com/agate-gateway/agate/translate"
)

// BenchmarkDecodeResponse is a translated route's decode of a non-streamed chat
// completion into events (a Messages or Responses client answered by an OpenAI-compatible
// backend): the recorded one with parallel tool calls, and the end-to-end bench's answer
// (a ~700-byte text and a full usage object).
func BenchmarkDecodeResponse(b *testing.B) {
	for _, c := range []struct{ name, path string }{
		{"parallel-tool-calls", "../../testdata/fixtures/openai-chat/json/parallel-tool-calls.mirascope.json"},
		{"bench-answer", "testdata/bench-answer.json"},
	} {
		b.Run(c.name, func(b *testing.B) {
			body, err := os.ReadFile(c.path)
			if err != nil {
				b.Fatal(err)
			}
			p := New()
			events := 0
			emit := func(*translate.Event) error { events++; return nil }
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if err := p.DecodeResponse(body, emit); err != nil {
					b.Fatal(err)
				}
			}
			if events == 0 {
				b.Fatal("no events")
			}
		})
	}
}
