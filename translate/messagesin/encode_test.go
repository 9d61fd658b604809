package messagesin_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/internal/sse"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/spectest"
	"github.com/agate-gateway/agate/translate/messagesin"
)

func encodeAll(t *testing.T, evs []translate.Event) ([]byte, error) {
	t.Helper()
	enc := messagesin.NewEncoder("msg_1", "m")
	var out []byte
	for i := range evs {
		var err error
		if out, err = enc.Encode(out, &evs[i]); err != nil {
			return out, err
		}
	}
	return enc.Finish(out), nil
}

func TestEncoder(t *testing.T) {
	tests := []struct {
		name       string
		evs        []translate.Event
		wantStop   string
		wantBlocks string // content_block_start types in order
		wantUsage  string
	}{
		{name: "no start event", evs: []translate.Event{{Kind: translate.EventTextDelta, Text: "hi"}},
			wantStop: "end_turn", wantBlocks: "text", wantUsage: `{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}`},
		{name: "gemini stop after calls is tool_use", evs: []translate.Event{{Kind: translate.EventStart},
			{Kind: translate.EventToolCallStart, Index: 3, CallID: "c~1rAA", Name: "f"}, {Kind: translate.EventToolCallArgsDelta, Index: 3, Text: "{}"},
			{Kind: translate.EventToolCallEnd, Index: 3}, {Kind: translate.EventFinish, FinishReason: translate.FinishStop}},
			wantStop: "tool_use", wantBlocks: "tool_use", wantUsage: `{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}`},
		{name: "refusal", evs: []translate.Event{{Kind: translate.EventRefusalDelta, Text: "no"}, {Kind: translate.EventFinish, FinishReason: translate.FinishStop}},
			wantStop: "refusal", wantBlocks: "text", wantUsage: `{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}`},
		{name: "reasoning then text, cached usage", evs: []translate.Event{{Kind: translate.EventReasoningDelta, Text: "hmm"}, {Kind: translate.EventTextDelta, Text: "a"},
			{Kind: translate.EventUsage, Usage: translate.Usage{PromptTokens: 100, CachedTokens: 60, CacheCreationTokens: 10, CompletionTokens: 7}},
			{Kind: translate.EventFinish, FinishReason: translate.FinishLength}},
			wantStop: "max_tokens", wantBlocks: "thinking text", wantUsage: `{"input_tokens":30,"cache_creation_input_tokens":10,"cache_read_input_tokens":60,"output_tokens":7}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := encodeAll(t, tt.evs)
			if err != nil {
				t.Fatal(err)
			}
			if err := checkStream(out); err != nil {
				t.Fatalf("invariants: %v\n%s", err, out)
			}
			var blocks, stop, usage string
			for _, line := range splitLines(out) {
				d := gjson.Get(line, "@this")
				switch d.Get("type").Str {
				case "content_block_start":
					if blocks != "" {
						blocks += " "
					}
					blocks += d.Get("content_block.type").Str
				case "message_delta":
					stop, usage = d.Get("delta.stop_reason").Str, d.Get("usage").Raw
				}
			}
			got := []string{blocks, stop, usage}
			if diff := cmp.Diff([]string{tt.wantBlocks, tt.wantStop, tt.wantUsage}, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// splitLines returns the data payloads of an SSE stream.
func splitLines(b []byte) []string {
	s := string(b)
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		line := s[:i]
		if len(line) > 6 && line[:6] == "data: " {
			out = append(out, line[6:])
		}
		if i == len(s) {
			break
		}
		s = s[i+1:]
	}
	return out
}

// TestEncoder_InterleavedToolArguments: a Messages stream cannot reopen a closed block, so
// arguments for an earlier call after a later one started are an upstream error.
func TestEncoder_InterleavedToolArguments(t *testing.T) {
	_, err := encodeAll(t, []translate.Event{
		{Kind: translate.EventToolCallStart, Index: 0, CallID: "a", Name: "f"},
		{Kind: translate.EventToolCallStart, Index: 1, CallID: "b", Name: "g"},
		{Kind: translate.EventToolCallArgsDelta, Index: 0, Text: "{}"},
	})
	var ue *translate.UpstreamError
	if !asUpstream(err, &ue) || ue.Status != 502 {
		t.Errorf("error %v, want an upstream 502", err)
	}
}

func asUpstream(err error, ue **translate.UpstreamError) bool {
	u, ok := err.(*translate.UpstreamError)
	*ue = u
	return ok
}

func TestAppendError_Spec(t *testing.T) {
	s := spectest.Schema(t, "anthropic/messages.json", "#/components/schemas/ErrorResponse")
	for _, status := range []int{400, 401, 403, 404, 413, 429, 500, 502, 503, 504, 529} {
		body := messagesin.AppendError(nil, status, "m", "req_1")
		if err := spectest.Validate(s, body); err != nil {
			t.Errorf("%d: %v\n%s", status, err, body)
		}
	}
}

// BenchmarkEncoder measures the translated path's cost per upstream event: a text delta
// encoded as a content_block_delta.
func BenchmarkEncoder(b *testing.B) {
	enc := messagesin.NewEncoder("msg_1", "m")
	ev := translate.Event{Kind: translate.EventTextDelta, Text: "Hello, this is a typical streamed token run."}
	buf, _ := enc.Encode(nil, &ev)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf, _ = enc.Encode(buf[:0], &ev)
	}
}

func readFile(b *testing.B, wire, name string) []byte {
	data, err := os.ReadFile(filepath.Join(fixturesDir, wire, "stream", name+".sse"))
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func countEvents(data []byte) int {
	var p sse.Parser
	n := 0
	p.Feed(data, func(_, _ []byte) error { n++; return nil })
	return n
}

// BenchmarkReplayPerEvent measures decoding plus encoding per upstream event for a
// recorded Anthropic stream (the translated path with an anthropic upstream).
func BenchmarkReplayPerEvent(b *testing.B) {
	for wire, provider := range wireProviders {
		name := map[string]string{"anthropic": "text-basic.mirascope", "gemini": "text-basic.mirascope",
			"openai-chat": "text-include-usage.mirascope", "responses": "text-basic.mirascope"}[wire]
		upstream := readFile(b, wire, name)
		events := countEvents(upstream)
		b.Run(wire, func(b *testing.B) {
			p := provider()
			b.ReportAllocs()
			b.SetBytes(int64(len(upstream)))
			for i := 0; i < b.N; i++ {
				replay(b, p, [][]byte{upstream})
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/event")
		})
	}
}

// FuzzEncoder: any sequence of core events the encoder accepts makes a stream that keeps
// the Messages stream invariants, and the assembler's Message of the same events is JSON.
func FuzzEncoder(f *testing.F) {
	f.Add([]byte{1, 2, 4, 5, 6, 3, 8, 9})
	f.Add([]byte{4, 5, 5, 6, 4, 5, 6, 2, 9})
	f.Add([]byte{3, 2, 3, 2, 7})
	f.Fuzz(func(t *testing.T, script []byte) {
		enc := messagesin.NewEncoder("msg_1", "m")
		var asm messagesin.Assembler
		var out []byte
		tool := 0
		for i, b := range script {
			ev := translate.Event{Kind: translate.EventKind(b%11 + 1), Text: fmt.Sprintf("t%d\"\n", i), Index: tool,
				CallID: fmt.Sprintf("c~%d", i), Name: "f", FinishReason: []string{"stop", "length", "tool_calls", "content_filter"}[int(b)%4]}
			if ev.Kind == translate.EventToolCallStart {
				tool++
				ev.Index = tool
			}
			if ev.Kind == translate.EventError {
				continue
			}
			asm.Add(&ev)
			var err error
			if out, err = enc.Encode(out, &ev); err != nil {
				return // interleaved arguments: an upstream error, ended by the proxy
			}
		}
		out = enc.Finish(out)
		if err := checkStream(out); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if msg := asm.AppendMessage(nil, "msg_1", "m"); !json.Valid(msg) {
			t.Fatalf("message is not JSON: %s", msg)
		}
	})
}
