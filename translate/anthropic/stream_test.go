package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/goldentest"
	"github.com/agate-gateway/agate/translate/openaichat"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/internal/sse"
)

const anthropicTestdata = "testdata"

func newAnthropicStream() translate.StreamDecoder {
	return New().NewStreamDecoder(&translate.Options{})
}

var anthropicServerResult = regexp.MustCompile(`(?m)^data: \{"type":"content_block_start","index":(\d+),"content_block":\{"type":"web_search_tool_result","tool_use_id":"(\w+)".*$`)

// anthropicCheckSplits runs checkSplits over upstream. Splitting at every offset is
// quadratic in the stream's length, so a long recording is checked in windows of a few KB:
// each window is a complete stream (the recording's message_start, the start event of the
// block open at the window's start, the window's events, a stop for a block still open, the
// recording's message_delta and message_stop), decoded whole for its want. Every byte
// offset of the recording is then split in some window, except inside the opaque
// payloads of web_search_tool_result blocks (up to 30 KB in one event, ignored by the
// decoder), which are cut to a minimal block of the same type first.
func anthropicCheckSplits(t *testing.T, upstream, want []byte) {
	t.Helper()
	const window = 4 << 10
	upstream = anthropicServerResult.ReplaceAll(upstream, []byte(`data: {"type":"content_block_start","index":$1,"content_block":{"type":"web_search_tool_result","tool_use_id":"$2","content":[]}}`))
	if len(upstream) <= 2*window {
		goldentest.CheckSplits(t, newAnthropicStream, upstream, want)
		return
	}
	events := bytes.SplitAfter(upstream, []byte("\n\n"))
	if len(events[len(events)-1]) == 0 {
		events = events[:len(events)-1]
	}
	typeOf := func(ev []byte) string {
		i := bytes.Index(ev, []byte("data: "))
		return gjson.GetBytes(ev[i+6:], "type").Str
	}
	if typeOf(events[0]) != "message_start" || typeOf(events[len(events)-1]) != "message_stop" || typeOf(events[len(events)-2]) != "message_delta" {
		t.Fatalf("long stream does not have the message_start ... message_delta, message_stop shape")
	}
	head, tail, body := events[0], bytes.Join(events[len(events)-2:], nil), events[1:len(events)-2]
	var open []byte // the content_block_start event of the open block
	for i := 0; i < len(body); {
		w := append(append([]byte(nil), head...), open...)
		for n := 0; i < len(body) && n < window; i++ {
			w = append(w, body[i]...)
			n += len(body[i])
			switch typeOf(body[i]) {
			case "content_block_start":
				open = body[i]
			case "content_block_stop":
				open = nil
			}
		}
		if open != nil {
			i := bytes.Index(open, []byte("data: "))
			idx := gjson.GetBytes(open[i+6:], "index").Int()
			w = append(w, fmt.Sprintf("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":%d}\n\n", idx)...)
		}
		w = append(w, tail...)
		got := goldentest.Stream(t, newAnthropicStream, w)
		goldentest.CheckChunks(t, got)
		goldentest.CheckSplits(t, newAnthropicStream, w, got)
	}
}

// anthropicOverloaded is the verbatim payload quoted in
// testdata/fixtures/anthropic/errors/observed-stream-error-events.md (anthropic-sdk-go issue #200).
const anthropicOverloaded = `{"type":"error","error":{"details":null,"type":"overloaded_error","message":"Overloaded"} }`

// TestAnthropicStream_MidStreamError pins the in-band error: content streamed so far is
// kept, the error frame ends the stream, and no finish chunk or [DONE] follows.
func TestAnthropicStream_MidStreamError(t *testing.T) {
	// testdata/openai_anthropic/stream-error-overloaded.txtar: the first events of the
	// recorded text stream, then the observed error payload and the connection closing (no
	// message_delta/message_stop), as observed-stream-error-events.md describes.
	upstream := goldentest.Transcript(t, "stream-error-overloaded", "upstream.sse")
	got := goldentest.Stream(t, newAnthropicStream, upstream)
	if !bytes.Contains(got, []byte(`"message":"Overloaded"`)) || bytes.Contains(got, []byte("[DONE]")) {
		t.Errorf("want an in-band Overloaded error without [DONE]:\n%s", got)
	}

	// The decoder itself: EventError then the same *UpstreamError, 503 and retryable.
	dec := newAnthropicStream()
	var evErr *translate.UpstreamError
	var p sse.Parser
	err := p.Feed(upstream, func(typ, data []byte) error {
		return dec.Event(typ, data, func(ev *translate.Event) error {
			if ev.Kind == translate.EventError {
				evErr = ev.Err
			}
			return nil
		})
	})
	var ue *translate.UpstreamError
	if !errors.As(err, &ue) || ue != evErr {
		t.Fatalf("Event returned %v, want the emitted EventError %v", err, evErr)
	}
	want := &translate.UpstreamError{Status: 503, Type: "api_error", Code: "overloaded_error", Message: "Overloaded", Retryable: true}
	if diff := cmp.Diff(want, ue); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
	if !errors.Is(err, translate.ErrUpstream) {
		t.Errorf("error does not match ErrUpstream")
	}
}

// TestAnthropicStream_Truncated: a stream that ends before message_stop is a 502, and
// Close emits nothing and reports once.
func TestAnthropicStream_Truncated(t *testing.T) {
	rec := goldentest.ReadFixture(t, "anthropic/stream/text-basic.mirascope.sse")
	tests := []struct {
		name, upstream, wantMsg string
	}{
		{"empty", "", "the anthropic stream ended before message_start"},
		{"after message_delta", string(rec[:bytes.Index(rec, []byte("event: message_stop"))]), "the anthropic stream ended before message_stop"},
		{"mid text", string(rec[:bytes.Index(rec, []byte("event: content_block_stop"))]), "the anthropic stream ended before message_stop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dec := newAnthropicStream()
			var kinds []translate.EventKind
			emit := func(ev *translate.Event) error { kinds = append(kinds, ev.Kind); return nil }
			var p sse.Parser
			if err := p.Feed([]byte(tt.upstream), func(typ, data []byte) error { return dec.Event(typ, data, emit) }); err != nil {
				t.Fatal(err)
			}
			n := len(kinds)
			err := dec.Close(emit)
			want := &translate.UpstreamError{Status: 502, Type: "api_error", Message: tt.wantMsg}
			var ue *translate.UpstreamError
			if !errors.As(err, &ue) {
				t.Fatalf("Close = %v, want an *UpstreamError", err)
			}
			if diff := cmp.Diff(want, ue); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if len(kinds) != n {
				t.Errorf("Close emitted %v on a truncated stream", kinds[n:])
			}
			if err := dec.Close(emit); err != nil || len(kinds) != n {
				t.Errorf("second Close = %v, emitted %d", err, len(kinds)-n)
			}
		})
	}
}

// TestAnthropicStream_Malformed: a malformed event is an error, never skipped.
func TestAnthropicStream_Malformed(t *testing.T) {
	start := `{"type":"message_start","message":{"id":"msg_1","model":"claude","usage":{"input_tokens":1,"output_tokens":1}}}`
	tests := []struct {
		name   string
		events []string
		want   string
	}{
		{"not json", []string{start, `{"type":"content_block_delta",`}, "decoding anthropic event: not valid JSON"},
		{"no type", []string{start, `{"index":0}`}, "decoding anthropic event: an event without a type"},
		{"delta before start", []string{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`}, "content_block_delta before message_start"},
		{"delta outside block", []string{start, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`}, "content_block_delta outside a content block"},
		{"second message_start", []string{start, start}, "a second message_start"},
		{"block without index", []string{start, `{"type":"content_block_start","content_block":{"type":"text","text":""}}`}, "content_block_start without an index"},
		{"stop outside block", []string{start, `{"type":"content_block_stop","index":0}`}, "content_block_stop outside a content block"},
		{"tool_use without id", []string{start, `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","name":"f","input":{}}}`}, "tool_use without an id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dec := newAnthropicStream()
			var err error
			for _, e := range tt.events {
				if err = dec.Event(nil, []byte(e), func(*translate.Event) error { return nil }); err != nil {
					break
				}
			}
			var ue *translate.UpstreamError
			if !errors.As(err, &ue) || !strings.Contains(ue.Message, tt.want) || ue.Status != 502 {
				t.Fatalf("got %v, want a 502 containing %q", err, tt.want)
			}
		})
	}
}

// TestAnthropicStream_ParallelToolIndexes pins one OpenAI index per tool_use block in
// order (0, 1) with id and name on the first delta only, and the arguments reassembled.
func TestAnthropicStream_ParallelToolIndexes(t *testing.T) {
	up := goldentest.ReadFixture(t, "anthropic/stream/parallel-tool-use.mirascope.sse")
	var a openaichat.Assembler
	dec := newAnthropicStream()
	var p sse.Parser
	if err := p.Feed(up, func(typ, data []byte) error { return dec.Event(typ, data, a.Add) }); err != nil {
		t.Fatal(err)
	}
	if err := dec.Close(a.Add); err != nil {
		t.Fatal(err)
	}
	a.Finish()
	var got []translate.ToolCall
	for _, c := range a.Choices[0].ToolCalls {
		got = append(got, translate.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	want := []translate.ToolCall{
		{ID: "toolu_015cUijgET79LXjgeYQerN2h", Name: "secret_retrieval_tool", Arguments: `{"password": "mellon"}`},
		{ID: "toolu_01XZTimPexA7h3EVKesnKt5T", Name: "secret_retrieval_tool", Arguments: `{"password": "radiance"}`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s", diff)
	}
	if a.Choices[0].FinishReason != translate.FinishToolCalls {
		t.Errorf("finish %q", a.Choices[0].FinishReason)
	}
}

// TestAnthropicStream_NoArgumentTool: a tool_use with input {} and only an empty
// partial_json ends as "{}".
func TestAnthropicStream_NoArgumentTool(t *testing.T) {
	got := goldentest.Stream(t, newAnthropicStream, goldentest.ReadFixture(t, "anthropic/stream/tool-no-args-exact-bytes.llm-anthropic.sse"))
	if !bytes.Contains(got, []byte(`"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]`)) {
		t.Errorf("no-argument call does not end as {}:\n%s", got)
	}
}

// TestAnthropicStream_ServerToolsAreNotToolCalls: server_tool_use and
// web_search_tool_result blocks never become client tool calls.
func TestAnthropicStream_ServerToolsAreNotToolCalls(t *testing.T) {
	got := goldentest.Stream(t, newAnthropicStream, goldentest.ReadFixture(t, "anthropic/stream/web-search-cache-read-create.mirascope.sse"))
	if bytes.Contains(got, []byte(`tool_calls`)) || bytes.Contains(got, []byte(`srvtoolu_`)) {
		t.Errorf("server tool blocks leaked as tool calls")
	}
	if !bytes.Contains(got, []byte(`"finish_reason":"stop"`)) {
		t.Errorf("want finish_reason stop")
	}
}

// TestAnthropicStream_Usage pins OpenAI usage semantics from message_start merged with
// message_delta: prompt includes cache reads and writes, cached_tokens = cache reads.
func TestAnthropicStream_Usage(t *testing.T) {
	tests := []struct {
		name, file string
		chunks     bool
		want       translate.Usage
	}{
		{"cache read and write", "anthropic/stream/web-search-cache-read-create.mirascope.sse", false, translate.Usage{}},
		{"message_delta corrects input_tokens", "anthropic/vercel-chunks/anthropic-message-delta-input-tokens.chunks.txt", true,
			translate.Usage{PromptTokens: 61, CompletionTokens: 2}},
		{"text", "anthropic/stream/text-basic.mirascope.sse", false, translate.Usage{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := goldentest.ReadFixture(t, tt.file)
			if tt.chunks {
				up = goldentest.ReframeChunks(up, true)
			}
			var a openaichat.Assembler
			dec := newAnthropicStream()
			var p sse.Parser
			if err := p.Feed(up, func(typ, data []byte) error { return dec.Event(typ, data, a.Add) }); err != nil {
				t.Fatal(err)
			}
			if err := dec.Close(a.Add); err != nil {
				t.Fatal(err)
			}
			want := tt.want
			if want == (translate.Usage{}) {
				want = anthropicExpectedUsage(t, up)
			}
			if diff := cmp.Diff(want, a.Usage); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
		})
	}
}

// anthropicExpectedUsage computes the usage independently with encoding/json: the
// message_delta usage fields override message_start's.
func anthropicExpectedUsage(t *testing.T, up []byte) translate.Usage {
	t.Helper()
	counts := map[string]int{}
	var p sse.Parser
	p.Feed(up, func(_, data []byte) error {
		var ev struct {
			Type    string
			Message struct{ Usage map[string]any }
			Usage   map[string]any
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			t.Fatal(err)
		}
		u := ev.Usage
		if ev.Type == "message_start" {
			u = ev.Message.Usage
		}
		for k, v := range u {
			if f, ok := v.(float64); ok {
				counts[k] = int(f)
			}
		}
		return nil
	})
	in, cr, cw := counts["input_tokens"], counts["cache_read_input_tokens"], counts["cache_creation_input_tokens"]
	return translate.Usage{PromptTokens: in + cr + cw, CompletionTokens: counts["output_tokens"], CachedTokens: cr, CacheCreationTokens: cw}
}

func FuzzAnthropicStream(f *testing.F) {
	// The golden transcripts, cut to keep the fuzzer fast; TestGolden covers them whole.
	for _, b := range goldentest.Seeds("upstream.sse", true, 4096) {
		f.Add(b, uint16(len(b)/2))
	}
	f.Add([]byte("event: error\ndata: "+anthropicOverloaded+"\n\n"), uint16(3))
	f.Fuzz(func(t *testing.T, b []byte, split uint16) {
		at := int(split)
		if at > len(b) {
			at = len(b)
		}
		enc := openaichat.NewChunkEncoder("id", "m", 1, true)
		var out []byte
		dec := newAnthropicStream()
		emit := func(ev *translate.Event) error {
			out = enc.Encode(out, ev)
			return nil
		}
		var p sse.Parser
		h := func(typ, data []byte) error { return dec.Event(typ, data, emit) }
		if err := p.Feed(b[:at], h); err != nil {
			return
		}
		if err := p.Feed(b[at:], h); err != nil {
			return
		}
		if err := dec.Close(emit); err == nil {
			out = enc.Finish(out)
		}
	})
}

// anthropicTextStream builds a stream of n text deltas.
func anthropicTextStream(n int) []byte {
	var b bytes.Buffer
	b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-sonnet-4-5\",\"id\":\"msg_01\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":12,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":1}}}\n\n")
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for i := 0; i < n; i++ {
		b.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" and some more words\"}}   \n\n")
	}
	b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	b.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":400}}\n\n")
	b.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return b.Bytes()
}

// BenchmarkAnthropicStream decodes and encodes a 200-event text stream, as the proxy
// does: SSE parsing, decoding, chunk encoding into a reused buffer.
func BenchmarkAnthropicStream(b *testing.B) {
	const n = 200
	up := anthropicTextStream(n)
	out := make([]byte, 0, 64<<10)
	var p sse.Parser
	b.ReportAllocs()
	b.SetBytes(int64(len(up)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p = sse.Parser{}
		dec := &anthropicStream{}
		enc := openaichat.NewChunkEncoder("chatcmpl-1", "claude", 1700000000, true)
		out = out[:0]
		emit := func(ev *translate.Event) error {
			out = enc.Encode(out, ev)
			return nil
		}
		if err := p.Feed(up, func(typ, data []byte) error { return dec.Event(typ, data, emit) }); err != nil {
			b.Fatal(err)
		}
		if err := dec.Close(emit); err != nil {
			b.Fatal(err)
		}
		out = enc.Finish(out)
	}
	b.StopTimer()
	events := float64(n + 5)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/events, "ns/event")
	res := testing.AllocsPerRun(20, func() {
		p = sse.Parser{}
		dec := &anthropicStream{}
		enc := openaichat.NewChunkEncoder("chatcmpl-1", "claude", 1700000000, true)
		out = out[:0]
		emit := func(ev *translate.Event) error { out = enc.Encode(out, ev); return nil }
		p.Feed(up, func(typ, data []byte) error { return dec.Event(typ, data, emit) })
		dec.Close(emit)
		out = enc.Finish(out)
	})
	b.ReportMetric(res/events, "allocs/event")
}

// TestAnthropicStream_ReasoningBlocks: every thinking and redacted_thinking block of a
// stream is also an EventReasoningBlock, its signature or data whole, for client dialects
// that can carry them (the OpenAI chat encoders ignore the event).
func TestAnthropicStream_ReasoningBlocks(t *testing.T) {
	up := goldentest.Transcript(t, "stream-thinking-tool-use", "upstream.sse")
	dec := newAnthropicStream()
	var got []translate.ThinkingBlock
	var text strings.Builder
	emit := func(ev *translate.Event) error {
		if ev.Kind == translate.EventReasoningDelta {
			text.WriteString(ev.Text)
		}
		if ev.Kind == translate.EventReasoningBlock {
			b := *ev.Block
			b.Thinking, b.Signature, b.Data = strings.Clone(b.Thinking), strings.Clone(b.Signature), strings.Clone(b.Data)
			got = append(got, b)
		}
		return nil
	}
	var p sse.Parser
	if err := p.Feed(up, func(typ, data []byte) error { return dec.Event(typ, data, emit) }); err != nil {
		t.Fatal(err)
	}
	if err := dec.Close(emit); err != nil {
		t.Fatal(err)
	}
	want := []translate.ThinkingBlock{
		{Dialect: "anthropic", Type: "thinking", Thinking: text.String(), Signature: anthropicSig},
		{Dialect: "anthropic", Type: "redacted_thinking", Data: "EmwKAhgBEgy3va3pzix"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reasoning blocks (-want +got):\n%s", diff)
	}
}

// BenchmarkAnthropicResponse decodes recorded non-streaming Messages responses (a text
// answer, parallel tool calls) into events and assembles the chat completion, as the proxy
// does for a non-streaming client.
func BenchmarkAnthropicResponse(b *testing.B) {
	for _, name := range []string{"text", "parallel-tool-use", "bench"} {
		path := "../../testdata/fixtures/anthropic/json/" + name + ".mirascope.json"
		if name == "bench" {
			path = "testdata/bench-response.json" // the end-to-end bench's mock answer (scenarios a, b)
		}
		body, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			var out []byte
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				var a openaichat.Assembler
				if err := New().DecodeResponse(body, a.Add); err != nil {
					b.Fatal(err)
				}
				a.Finish()
				out = a.AppendCompletion(out[:0], "chatcmpl-1", "claude", 1700000000)
			}
		})
	}
}

// FuzzAnthropicResponse: whatever an upstream sends as a whole Messages answer,
// DecodeResponse refuses it with an *translate.UpstreamError or emits events an Assembler
// turns into one JSON completion whose content is the text of the text blocks, in order,
// as gjson (whose first-of-a-repeated-name rule the decoder shares) reads the body.
func FuzzAnthropicResponse(f *testing.F) {
	for _, b := range goldentest.Seeds("upstream.json", false, 4096) {
		f.Add(b)
	}
	bench, err := os.ReadFile("testdata/bench-response.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(bench)
	f.Add([]byte(`{"type":"message","content":[{"type":"text","text":"a\u00e9"},{"type":"thinking","thinking":"t"},{"text":"x","type":"text"},{"type":"text","type":"image","text":"y"}],"content":[]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var a openaichat.Assembler
		if err := New().DecodeResponse(body, a.Add); err != nil {
			var ue *translate.UpstreamError
			if !errors.As(err, &ue) || ue.Message == "" {
				t.Fatalf("error %v (%T) is not an upstream error with a message", err, err)
			}
			return
		}
		a.Finish()
		out := a.AppendCompletion(nil, "chatcmpl-1", "claude", 1)
		if !json.Valid(out) {
			t.Fatalf("completion is not JSON: %s\nfrom %q", out, body)
		}
		var want strings.Builder
		for _, b := range gjson.GetBytes(body, "content").Array() {
			if typ := b.Get("type"); typ.Type == gjson.String && typ.Str == "text" {
				if text := b.Get("text"); text.Type == gjson.String {
					want.WriteString(text.Str)
				}
			}
		}
		// A byte that is not UTF-8 goes out as U+FFFD, as encoding/json writes it.
		if got, w := gjson.GetBytes(out, "choices.0.message.content").Str, string([]rune(want.String())); got != w {
			t.Fatalf("content %q, want %q\nfrom %q", got, w, body)
		}
	})
}
