package responses

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/goldentest"
	"github.com/agate-gateway/agate/translate/openaichat"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/internal/sse"
)

func newResponsesDecoder() translate.StreamDecoder {
	return New().NewStreamDecoder(&translate.Options{})
}

// responsesCheckSplits runs checkSplits on streams up to 16 KB. Larger recordings (the
// 99 KB reasoning stream would take minutes under -race at every offset) are split at
// every offset of their first 2 KB, around every event boundary, at a stride elsewhere,
// and fed byte by byte: the decoder sees whole events whatever the split, so these cover
// every way a split can fall relative to the framing. Both are checked as package
// splittest says.
func responsesCheckSplits(t *testing.T, upstream, want []byte) {
	t.Helper()
	if len(upstream) <= 16<<10 {
		goldentest.CheckSplits(t, newResponsesDecoder, upstream, want)
		return
	}
	offsets := map[int]bool{}
	for i := 1; i < 2048; i++ {
		offsets[i] = true
	}
	for i := 1; i < len(upstream); i += 509 {
		offsets[i] = true
	}
	for i := 0; i+1 < len(upstream); i++ {
		if upstream[i] == '\n' && upstream[i+1] == '\n' {
			for d := -1; d <= 2; d++ {
				offsets[i+d] = true
			}
		}
	}
	var sorted []int
	for i := range offsets {
		if i > 0 && i < len(upstream) {
			sorted = append(sorted, i)
		}
	}
	slices.Sort(sorted)
	goldentest.CheckSplitsAt(t, newResponsesDecoder, upstream, want, sorted)
}

// responsesRun decodes an SSE body and returns the events (strings copied) and the error.
func responsesRun(t *testing.T, body string) ([]translate.Event, error) {
	t.Helper()
	dec := newResponsesDecoder()
	var evs []translate.Event
	emit := func(ev *translate.Event) error {
		e := *ev
		e.ID, e.Model, e.Text, e.CallID, e.Name = strings.Clone(e.ID), strings.Clone(e.Model), strings.Clone(e.Text), strings.Clone(e.CallID), strings.Clone(e.Name)
		if b := e.Block; b != nil {
			e.Block = &translate.ThinkingBlock{Type: strings.Clone(b.Type), Thinking: strings.Clone(b.Thinking),
				Signature: strings.Clone(b.Signature), Data: strings.Clone(b.Data), ID: strings.Clone(b.ID)}
		}
		if it := e.Item; it != nil {
			e.Item = &translate.Item{Dialect: it.Dialect, Type: strings.Clone(it.Type), Raw: strings.Clone(it.Raw)}
		}
		evs = append(evs, e)
		if ev.Kind == translate.EventError {
			return ev.Err
		}
		return nil
	}
	var p sse.Parser
	err := p.Feed([]byte(body), func(typ, data []byte) error { return dec.Event(typ, data, emit) })
	if err == nil {
		err = dec.Close(emit)
	}
	return evs, err
}

func responsesSSE(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		var head struct{ Type string }
		_ = json.Unmarshal([]byte(e), &head)
		b.WriteString("event: " + head.Type + "\ndata: " + e + "\n\n")
	}
	return b.String()
}

const (
	rsCreated   = `{"type":"response.created","response":{"id":"resp_1","model":"gpt-x","status":"in_progress"}}`
	rsCompleted = `{"type":"response.completed","response":{"id":"resp_1","status":"completed","usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":4},"output_tokens":7,"output_tokens_details":{"reasoning_tokens":3}}}}`
)

func TestResponsesStream_Quirks(t *testing.T) {
	start := translate.Event{Kind: translate.EventStart, ID: "resp_1", Model: "gpt-x"}
	usage := translate.Event{Kind: translate.EventUsage, Usage: translate.Usage{PromptTokens: 10, CompletionTokens: 7, CachedTokens: 4, ReasoningTokens: 3}}
	tests := []struct {
		name    string
		body    string
		want    []translate.Event
		wantErr string
	}{
		{
			name: "NoArgumentTool",
			body: responsesSSE(rsCreated,
				`{"type":"response.output_item.added","output_index":0,"item":{"id":"fc_1","type":"function_call","arguments":"","call_id":"call_1","name":"now"}}`,
				`{"type":"response.function_call_arguments.done","item_id":"fc_1","output_index":0,"arguments":""}`,
				`{"type":"response.output_item.done","output_index":0,"item":{"id":"fc_1","type":"function_call","arguments":"","call_id":"call_1","name":"now"}}`,
				rsCompleted),
			want: []translate.Event{start,
				{Kind: translate.EventToolCallStart, Index: 0, CallID: "call_1", Name: "now"},
				{Kind: translate.EventToolCallEnd, Index: 0}, usage,
				{Kind: translate.EventFinish, FinishReason: translate.FinishToolCalls}},
		},
		{
			name: "ArgumentsOnlyInDone",
			body: responsesSSE(rsCreated,
				`{"type":"response.output_item.added","output_index":0,"item":{"id":"fc_1","type":"function_call","arguments":"","call_id":"call_1","name":"f"}}`,
				`{"type":"response.output_item.done","output_index":0,"item":{"id":"fc_1","type":"function_call","arguments":"{\"a\":1}","call_id":"call_1","name":"f"}}`,
				rsCompleted),
			want: []translate.Event{start,
				{Kind: translate.EventToolCallStart, Index: 0, CallID: "call_1", Name: "f"},
				{Kind: translate.EventToolCallArgsDelta, Index: 0, Text: `{"a":1}`},
				{Kind: translate.EventToolCallEnd, Index: 0}, usage,
				{Kind: translate.EventFinish, FinishReason: translate.FinishToolCalls}},
		},
		{
			name: "InterleavedArgumentDeltasMappedByItemID",
			body: responsesSSE(rsCreated,
				`{"type":"response.output_item.added","output_index":0,"item":{"id":"fc_a","type":"function_call","arguments":"","call_id":"call_a","name":"f"}}`,
				`{"type":"response.output_item.added","output_index":1,"item":{"id":"fc_b","type":"function_call","arguments":"","call_id":"call_b","name":"g"}}`,
				`{"type":"response.function_call_arguments.delta","item_id":"fc_b","output_index":1,"delta":"{\"b\""}`,
				`{"type":"response.function_call_arguments.delta","item_id":"fc_a","output_index":0,"delta":"{}"}`,
				`{"type":"response.function_call_arguments.delta","item_id":"fc_b","output_index":1,"delta":":2}"}`,
				rsCompleted),
			want: []translate.Event{start,
				{Kind: translate.EventToolCallStart, Index: 0, CallID: "call_a", Name: "f"},
				{Kind: translate.EventToolCallStart, Index: 1, CallID: "call_b", Name: "g"},
				{Kind: translate.EventToolCallArgsDelta, Index: 1, Text: `{"b"`},
				{Kind: translate.EventToolCallArgsDelta, Index: 0, Text: `{}`},
				{Kind: translate.EventToolCallArgsDelta, Index: 1, Text: `:2}`},
				usage, {Kind: translate.EventFinish, FinishReason: translate.FinishToolCalls}},
		},
		{
			name: "BuiltInWebSearchIsABuiltinItemNotAClientToolCall",
			body: responsesSSE(rsCreated,
				`{"type":"response.output_item.added","output_index":0,"item":{"id":"ws_1","type":"web_search_call","status":"in_progress"}}`,
				`{"type":"response.web_search_call.searching","output_index":0,"item_id":"ws_1"}`,
				`{"type":"response.output_item.done","output_index":0,"item":{"id":"ws_1","type":"web_search_call","status":"completed","action":{"type":"search","query":"q"}}}`,
				`{"type":"response.output_item.added","output_index":1,"item":{"id":"msg_1","type":"message","role":"assistant","content":[]}}`,
				`{"type":"response.output_text.delta","item_id":"msg_1","output_index":1,"content_index":0,"delta":"found"}`,
				rsCompleted),
			want: []translate.Event{start,
				{Kind: translate.EventBuiltinItem, Item: &translate.Item{Dialect: translate.DialectResponses, Type: "web_search_call",
					Raw: `{"id":"ws_1","type":"web_search_call","status":"completed","action":{"type":"search","query":"q"}}`}},
				{Kind: translate.EventTextDelta, Text: "found"}, usage, {Kind: translate.EventFinish, FinishReason: translate.FinishStop}},
		},
		{
			name: "RefusalParts",
			body: responsesSSE(rsCreated,
				`{"type":"response.output_item.added","output_index":0,"item":{"id":"msg_1","type":"message","role":"assistant","content":[]}}`,
				`{"type":"response.content_part.added","item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"refusal","refusal":""}}`,
				`{"type":"response.refusal.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"I can't"}`,
				`{"type":"response.refusal.done","item_id":"msg_1","output_index":0,"content_index":0,"refusal":"I can't"}`,
				`{"type":"response.output_item.done","output_index":0,"item":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"refusal","refusal":"I can't"}]}}`,
				rsCompleted),
			want: []translate.Event{start, {Kind: translate.EventRefusalDelta, Text: "I can't"}, usage, {Kind: translate.EventFinish, FinishReason: translate.FinishStop}},
		},
		{
			name: "IncompleteContentFilter",
			body: responsesSSE(rsCreated,
				`{"type":"response.incomplete","response":{"id":"resp_1","status":"incomplete","incomplete_details":{"reason":"content_filter"}}}`),
			want: []translate.Event{start, {Kind: translate.EventFinish, FinishReason: translate.FinishContentFilter}},
		},
		{
			name: "ErrorThenFailedEmitsOneError",
			body: responsesSSE(rsCreated,
				`{"type":"error","sequence_number":2,"error":{"type":"insufficient_quota","code":"insufficient_quota","message":"quota","param":null}}`,
				`{"type":"response.failed","response":{"id":"resp_1","status":"failed","error":{"code":"insufficient_quota","message":"quota"}}}`),
			want:    []translate.Event{start, {Kind: translate.EventError, Err: &translate.UpstreamError{Status: 429, Type: "insufficient_quota", Code: "insufficient_quota", Message: "quota"}}},
			wantErr: "upstream 429 insufficient_quota: quota",
		},
		{
			name:    "FlatErrorEventFromTheSpec",
			body:    responsesSSE(rsCreated, `{"type":"error","code":"server_error","message":"boom","param":null,"sequence_number":1}`),
			want:    []translate.Event{start, {Kind: translate.EventError, Err: &translate.UpstreamError{Status: 502, Type: "api_error", Code: "server_error", Message: "boom", Retryable: true}}},
			wantErr: "upstream 502 api_error: boom",
		},
		{
			name:    "FailedWithoutErrorEvent",
			body:    responsesSSE(rsCreated, `{"type":"response.failed","response":{"id":"resp_1","status":"failed","error":{"code":"rate_limit_exceeded","message":"slow down"}}}`),
			want:    []translate.Event{start, {Kind: translate.EventError, Err: &translate.UpstreamError{Status: 429, Type: "rate_limit_error", Code: "rate_limit_exceeded", Message: "slow down", Retryable: true}}},
			wantErr: "upstream 429 rate_limit_error: slow down",
		},
		{
			name:    "TruncatedStream",
			body:    responsesSSE(rsCreated, `{"type":"response.output_text.delta","item_id":"m","output_index":0,"content_index":0,"delta":"hi"}`),
			want:    []translate.Event{start, {Kind: translate.EventTextDelta, Text: "hi"}},
			wantErr: "upstream 502 api_error: responses stream ended mid-response, before response.completed",
		},
		{
			name:    "EmptyStream",
			body:    "",
			wantErr: "upstream 502 api_error: responses stream ended before response.created, before response.completed",
		},
		{
			name:    "MalformedEvent",
			body:    responsesSSE(rsCreated) + "event: response.output_text.delta\ndata: {\"delta\":\n\n",
			want:    []translate.Event{start},
			wantErr: `upstream 502 api_error: decoding responses event "response.output_text.delta": not valid JSON`,
		},
		{
			name:    "DeltaBeforeCreated",
			body:    responsesSSE(`{"type":"response.output_text.delta","delta":"x"}`),
			wantErr: `upstream 502 api_error: decoding responses event "response.output_text.delta": before response.created`,
		},
		{
			name:    "ArgumentDeltaForUnknownItem",
			body:    responsesSSE(rsCreated, `{"type":"response.function_call_arguments.delta","item_id":"fc_x","delta":"{"}`),
			want:    []translate.Event{start},
			wantErr: `upstream 502 api_error: decoding responses event "response.function_call_arguments.delta": for an unknown item_id`,
		},
		{
			name: "DataOnlyEventsUseTheTypeField",
			body: "data: " + rsCreated + "\n\ndata: " + `{"type":"response.output_text.delta","delta":"x"}` + "\n\ndata: " + rsCompleted + "\n\n",
			want: []translate.Event{start, {Kind: translate.EventTextDelta, Text: "x"}, usage, {Kind: translate.EventFinish, FinishReason: translate.FinishStop}},
		},
		{
			name: "ReasoningSummaryPartsSeparated",
			body: responsesSSE(rsCreated,
				`{"type":"response.output_item.added","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}`,
				`{"type":"response.reasoning_summary_part.added","item_id":"rs_1","summary_index":0,"part":{"type":"summary_text","text":""}}`,
				`{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","summary_index":0,"delta":"one"}`,
				`{"type":"response.reasoning_summary_part.added","item_id":"rs_1","summary_index":1,"part":{"type":"summary_text","text":""}}`,
				`{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","summary_index":1,"delta":"two"}`,
				`{"type":"response.output_item.done","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"one"},{"type":"summary_text","text":"two"}]}}`,
				rsCompleted),
			want: []translate.Event{start,
				{Kind: translate.EventReasoningDelta, Text: "one"}, {Kind: translate.EventReasoningDelta, Text: "\n\n"}, {Kind: translate.EventReasoningDelta, Text: "two"},
				{Kind: translate.EventReasoningBlock, Block: &translate.ThinkingBlock{Type: "reasoning", Thinking: "one\n\ntwo", ID: "rs_1"}},
				usage, {Kind: translate.EventFinish, FinishReason: translate.FinishStop}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := responsesRun(t, tt.body)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
				if !errors.Is(err, translate.ErrUpstream) {
					t.Errorf("error %v does not match ErrUpstream", err)
				}
			}
			if gotErr != tt.wantErr {
				t.Errorf("error = %q, want %q", gotErr, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestResponsesStream_ReasoningCarriedOnFirstCall pins the stateless reasoning round trip
// on the decoder side: the reasoning item (id, summary, final encrypted_content) that
// precedes the calls rides on the first call id only.
func TestResponsesStream_ReasoningCarriedOnFirstCall(t *testing.T) {
	body := responsesSSE(rsCreated,
		`{"type":"response.output_item.added","output_index":0,"item":{"id":"rs_1","type":"reasoning","encrypted_content":"early","summary":[]}}`,
		`{"type":"response.output_item.done","output_index":0,"item":{"id":"rs_1","type":"reasoning","encrypted_content":"final","summary":[{"type":"summary_text","text":"think"}]}}`,
		`{"type":"response.output_item.added","output_index":1,"item":{"id":"fc_1","type":"function_call","arguments":"","call_id":"call_1","name":"f"}}`,
		`{"type":"response.output_item.added","output_index":2,"item":{"id":"fc_2","type":"function_call","arguments":"","call_id":"call_2","name":"f"}}`,
		rsCompleted)
	evs, err := responsesRun(t, body)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range evs {
		if e.Kind == translate.EventToolCallStart {
			ids = append(ids, e.CallID)
		}
	}
	if len(ids) != 2 {
		t.Fatalf("calls = %q", ids)
	}
	id, state := translate.SplitID(ids[0])
	want := `{"id":"fc_1","reasoning":[{"id":"rs_1","summary":[{"text":"think"}],"encrypted_content":"final"}]}`
	if id != "call_1" || string(state) != want {
		t.Errorf("first call = %q, %s; want call_1, %s", id, state, want)
	}
	if ids[1] != "call_2" {
		t.Errorf("second call id = %q, want the plain call_2", ids[1])
	}
}

func FuzzResponsesStream(f *testing.F) {
	for _, b := range goldentest.Seeds("upstream.sse", true, 6000) {
		f.Add(b, uint16(len(b)/2))
	}
	f.Add([]byte(responsesSSE(rsCreated, `{"type":"response.output_item.added","item":{"id":"fc","type":"function_call","call_id":"c"}}`, rsCompleted)), uint16(7))
	f.Fuzz(func(t *testing.T, body []byte, cut uint16) {
		at := int(cut) % (len(body) + 1)
		dec := newResponsesDecoder()
		enc := openaichat.NewChunkEncoder("id", "m", 1, true)
		var out []byte
		emit := func(ev *translate.Event) error {
			if ev.Kind == translate.EventError {
				return ev.Err
			}
			out = enc.Encode(out, ev)
			return nil
		}
		var p sse.Parser
		h := func(typ, data []byte) error { return dec.Event(typ, data, emit) }
		err := p.Feed(body[:at], h)
		if err == nil {
			err = p.Feed(body[at:], h)
		}
		if err == nil {
			err = dec.Close(emit)
		}
		if err == nil {
			enc.Finish(out)
		}
	})
}

// BenchmarkResponsesStream decodes and encodes a 200-event text stream.
func BenchmarkResponsesStream(b *testing.B) {
	var events []string
	events = append(events, rsCreated, `{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_0bee99a5de5b12910068f966a1fb3c819587e157227fc327ff","type":"message","status":"in_progress","content":[],"role":"assistant"}}`)
	const deltas = 200
	for i := 0; i < deltas; i++ {
		events = append(events, `{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_0bee99a5de5b12910068f966a1fb3c819587e157227fc327ff","output_index":0,"content_index":0,"delta":" word","logprobs":[],"obfuscation":"qYnPZbF2Ds0"}`)
	}
	events = append(events, rsCompleted)
	benchmarkResponsesEvents(b, events)
}

// BenchmarkResponsesStreamArguments decodes and encodes one function call whose
// arguments stream in 200 deltas, in the layout of the recordings.
func BenchmarkResponsesStreamArguments(b *testing.B) {
	const id = "fc_0c3b09d20eedf2d30068f966bad8b88190af96d232f504ef1f"
	events := []string{rsCreated, `{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"` + id +
		`","type":"function_call","status":"in_progress","arguments":"","call_id":"call_x","name":"secret_retrieval_tool"}}`}
	for i := 0; i < 200; i++ {
		events = append(events, `{"type":"response.function_call_arguments.delta","sequence_number":3,"item_id":"`+id+`","output_index":0,"delta":"\"pass","obfuscation":"E0RUrpZ"}`)
	}
	events = append(events, rsCompleted)
	benchmarkResponsesEvents(b, events)
}

// benchmarkResponsesEvents decodes and encodes the events as one stream, per event.
func benchmarkResponsesEvents(b *testing.B, events []string) {
	type ev struct{ typ, data []byte }
	var parsed []ev
	for _, e := range events {
		var head struct{ Type string }
		_ = json.Unmarshal([]byte(e), &head)
		parsed = append(parsed, ev{[]byte(head.Type), []byte(e)})
	}
	out := make([]byte, 0, 64<<10)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dec := &responsesStream{}
		enc := openaichat.NewChunkEncoder("chatcmpl-1", "m", 1, true)
		out = out[:0]
		emit := func(e *translate.Event) error { out = enc.Encode(out, e); return nil }
		for _, e := range parsed {
			if err := dec.Event(e.typ, e.data, emit); err != nil {
				b.Fatal(err)
			}
		}
		if err := dec.Close(emit); err != nil {
			b.Fatal(err)
		}
		out = enc.Finish(out)
	}
	b.StopTimer()
	per := float64(b.Elapsed().Nanoseconds()) / float64(b.N) / float64(len(parsed))
	b.ReportMetric(per, "ns/event")
	allocs := testing.AllocsPerRun(10, func() {
		dec := &responsesStream{}
		enc := openaichat.NewChunkEncoder("chatcmpl-1", "m", 1, true)
		out = out[:0]
		emit := func(e *translate.Event) error { out = enc.Encode(out, e); return nil }
		for _, e := range parsed {
			_ = dec.Event(e.typ, e.data, emit)
		}
		_ = dec.Close(emit)
		out = enc.Finish(out)
	})
	b.ReportMetric(allocs/float64(len(parsed)), "allocs/event")
}
