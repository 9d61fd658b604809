package respcache

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agate-gateway/agate/translate"
)

// benchRequest is a chat request of a few turns with a tool, as an eval harness sends.
func benchRequest() *translate.Request {
	temp := 0.0
	req := &translate.Request{Model: "m", MaxTokens: 500, Temperature: &temp,
		Tools: []translate.Tool{{Name: "weather", Description: "the weather of a city", Parameters: `{"type":"object","properties":{"city":{"type":"string"}}}`}}}
	for i := 0; i < 6; i++ {
		role := translate.RoleUser
		if i%2 == 1 {
			role = translate.RoleAssistant
		}
		req.Messages = append(req.Messages, translate.Message{Role: role,
			Content: []translate.Part{{Type: translate.PartText, Text: strings.Repeat("a question about the weather ", 10)}}})
	}
	return req
}

// BenchmarkKey: the cache key of a request (its canonical form and the hash).
func BenchmarkKey(b *testing.B) {
	req := benchRequest()
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = Canonical(buf[:0], req)
		_ = Key([]byte("model:m"), []byte("alice"), []byte("m"), []byte("up"), []byte("gpt"), buf)
	}
	b.SetBytes(int64(len(buf)))
}

// BenchmarkMemoryHit: a hit in the memory store and its replay of a 200-event answer.
func BenchmarkMemoryHit(b *testing.B) {
	var r Recorder
	r.Add(&translate.Event{Kind: translate.EventStart, ID: "chatcmpl-1", Model: "gpt"})
	for i := 0; i < 200; i++ {
		r.Add(&translate.Event{Kind: translate.EventTextDelta, Text: "token "})
	}
	r.Add(&translate.Event{Kind: translate.EventUsage, Usage: translate.Usage{PromptTokens: 100, CompletionTokens: 200}})
	r.Add(&translate.Event{Kind: translate.EventFinish, FinishReason: "stop"})
	entry, _ := r.Entry()
	m := NewMemory(1<<20, nil)
	ctx := context.Background()
	m.Set(ctx, "k", entry, time.Hour)
	n := 0
	emit := func(*translate.Event) error { n++; return nil }
	b.ReportAllocs()
	b.SetBytes(int64(len(entry)))
	for b.Loop() {
		e, _ := m.Get(ctx, "k")
		if err := Replay(e, emit); err != nil {
			b.Fatal(err)
		}
	}
}
