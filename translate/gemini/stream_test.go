package gemini

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/goldentest"
	"github.com/agate-gateway/agate/translate/openaichat"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/agate-gateway/agate/internal/sse"
)

func newGeminiDecoder() translate.StreamDecoder { return New().NewStreamDecoder(&translate.Options{}) }

// geminiJSONArrayToSSE reframes a streamGenerateContent body without alt=sse (one JSON
// array of responses) as the alt=sse stream the gateway asks for: each element compacted
// into one data: event, CRLF framed as Gemini frames them.
func geminiJSONArrayToSSE(t testing.TB, body []byte) []byte {
	t.Helper()
	var elems []json.RawMessage
	if err := json.Unmarshal(body, &elems); err != nil {
		t.Fatalf("stream-json-array body: %v", err)
	}
	var out []byte
	for _, e := range elems {
		var buf bytes.Buffer
		if err := json.Compact(&buf, e); err != nil {
			t.Fatal(err)
		}
		out = append(out, "data: "...)
		out = append(out, buf.Bytes()...)
		out = append(out, "\r\n\r\n"...)
	}
	return out
}

// geminiEvents decodes an SSE body and returns the events, strings copied.
func geminiEvents(t *testing.T, upstream string) ([]translate.Event, error) {
	t.Helper()
	dec := newGeminiDecoder()
	var evs []translate.Event
	emit := func(ev *translate.Event) error {
		c := *ev
		c.ID, c.Model, c.Text, c.CallID, c.Name = strings.Clone(c.ID), strings.Clone(c.Model), strings.Clone(c.Text), strings.Clone(c.CallID), strings.Clone(c.Name)
		evs = append(evs, c)
		return nil
	}
	var p sse.Parser
	if err := p.Feed([]byte(upstream), func(typ, data []byte) error { return dec.Event(typ, data, emit) }); err != nil {
		return evs, err
	}
	return evs, dec.Close(emit)
}

func geminiSSE(chunks ...string) string {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString("data: ")
		b.WriteString(c)
		b.WriteString("\r\n\r\n")
	}
	return b.String()
}

// TestGeminiStream_CallsAfterTextAndAcrossChunks pins that every functionCall gets its
// own index, whether it follows text in the same chunk or arrives in a later chunk, and
// that STOP becomes tool_calls.
func TestGeminiStream_CallsAfterTextAndAcrossChunks(t *testing.T) {
	up := geminiSSE(
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"Let me check."},{"functionCall":{"name":"a","args":{"x":1}}}]},"index":0}],"responseId":"r1","modelVersion":"gemini-2.5-flash"}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"b","args":{}}}]},"index":0}]}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"c"}}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":7}}`,
	)
	evs, err := geminiEvents(t, up)
	if err != nil {
		t.Fatal(err)
	}
	type call struct {
		Index    int
		ID, Name string
		Args     string
	}
	var calls []call
	finish := ""
	for _, ev := range evs {
		switch ev.Kind {
		case translate.EventToolCallStart:
			calls = append(calls, call{Index: ev.Index, ID: ev.CallID, Name: ev.Name})
		case translate.EventToolCallArgsDelta:
			calls[len(calls)-1].Args += ev.Text
		case translate.EventFinish:
			finish = ev.FinishReason
		}
	}
	want := []call{
		{0, "call_r1_0", "a", `{"x":1}`},
		{1, "call_r1_1", "b", `{}`},
		{2, "call_r1_2", "c", ``},
	}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if finish != translate.FinishToolCalls {
		t.Errorf("finish = %q, want tool_calls", finish)
	}
	out := goldentest.Stream(t, newGeminiDecoder, []byte(up))
	goldentest.CheckChunks(t, out)
	if !bytes.Contains(out, []byte(`{"index":2,"function":{"arguments":"{}"}}`)) {
		t.Errorf("call without args does not end as {}:\n%s", out)
	}
}

func TestGeminiStream_Edges(t *testing.T) {
	tests := []struct {
		name       string
		upstream   string
		wantFinish []string
		wantUsage  translate.Usage
		wantErr    string
	}{
		{
			name:       "PromptBlockedNoCandidates",
			upstream:   geminiSSE(`{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":8,"totalTokenCount":8},"modelVersion":"gemini-2.5-flash","responseId":"b1"}`),
			wantFinish: []string{translate.FinishContentFilter},
			wantUsage:  translate.Usage{PromptTokens: 8},
		},
		{
			name:       "MaxTokensCandidateWithoutParts",
			upstream:   geminiSSE(`{"candidates":[{"content":{"role":"model"},"finishReason":"MAX_TOKENS","index":0}],"usageMetadata":{"promptTokenCount":9,"thoughtsTokenCount":50,"totalTokenCount":59},"responseId":"m1"}`),
			wantFinish: []string{translate.FinishLength},
			wantUsage:  translate.Usage{PromptTokens: 9, CompletionTokens: 50, ReasoningTokens: 50},
		},
		{
			name:       "SafetyCandidateEmptyContent",
			upstream:   geminiSSE(`{"candidates":[{"content":{},"finishReason":"SAFETY","index":0}],"responseId":"s1"}`),
			wantFinish: []string{translate.FinishContentFilter},
		},
		{
			name:       "CachedTokens",
			upstream:   geminiSSE(`{"candidates":[{"content":{"parts":[{"text":"hi"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":100,"cachedContentTokenCount":60,"candidatesTokenCount":3,"thoughtsTokenCount":4}}`),
			wantFinish: []string{translate.FinishStop},
			wantUsage:  translate.Usage{PromptTokens: 100, CompletionTokens: 7, CachedTokens: 60, ReasoningTokens: 4},
		},
		{
			name: "TwoCandidates",
			upstream: geminiSSE(
				`{"candidates":[{"content":{"parts":[{"text":"a"}]},"index":0},{"content":{"parts":[{"text":"b"}]},"index":1}]}`,
				`{"candidates":[{"content":{"parts":[{"text":"!"}]},"finishReason":"STOP","index":0},{"content":{"parts":[{"text":"?"}]},"finishReason":"MAX_TOKENS","index":1}]}`,
			),
			wantFinish: []string{translate.FinishStop, translate.FinishLength},
		},
		{
			name:     "TruncatedBeforeFinishReason",
			upstream: geminiSSE(`{"candidates":[{"content":{"parts":[{"text":"a"}]},"index":0}]}`),
			wantErr:  "upstream 502 api_error: gemini stream ended before its finishReason",
		},
		{
			name:     "EmptyStream",
			upstream: "",
			wantErr:  "upstream 502 api_error: gemini stream ended before any event",
		},
		{
			name:     "MalformedEvent",
			upstream: geminiSSE(`{"candidates":[`),
			wantErr:  `upstream 502 api_error: decoding gemini event: not valid JSON: {"candidates":[`,
		},
		{
			name:     "MidStreamError",
			upstream: geminiSSE(`{"candidates":[{"content":{"parts":[{"text":"a"}]}}]}`, `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`),
			wantErr:  "upstream 503 api_error: The model is overloaded.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, err := geminiEvents(t, tt.upstream)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var finishes []string
			var usage translate.Usage
			for _, ev := range evs {
				switch ev.Kind {
				case translate.EventFinish:
					finishes = append(finishes, ev.FinishReason)
				case translate.EventUsage:
					usage = ev.Usage
				}
			}
			if diff := cmp.Diff(tt.wantFinish, finishes); diff != "" {
				t.Errorf("finish reasons (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantUsage, usage); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
			out := goldentest.Stream(t, newGeminiDecoder, []byte(tt.upstream))
			goldentest.CheckChunks(t, out)
		})
	}
}

// TestGeminiStream_MidStreamErrorEvent pins that an error object inside the stream is
// emitted as EventError and returned as the same error.
func TestGeminiStream_MidStreamErrorEvent(t *testing.T) {
	dec := newGeminiDecoder()
	var got *translate.UpstreamError
	err := dec.Event(nil, []byte(`{"error":{"code":429,"message":"slow down","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"2s"}]}}`), func(ev *translate.Event) error {
		if ev.Kind == translate.EventError {
			got = ev.Err
		}
		return nil
	})
	if got == nil || err != error(got) {
		t.Fatalf("err %v, event error %v: want the same *UpstreamError", err, got)
	}
	want := &translate.UpstreamError{Status: 429, Type: "rate_limit_error", Code: "resource_exhausted", Message: "slow down", RetryAfter: 2 * time.Second, Retryable: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if err := dec.Close(func(*translate.Event) error { t.Error("event after close"); return nil }); err != nil {
		t.Errorf("close after error: %v", err)
	}
}

// TestGeminiDecodeResponse_PromptBlocked pins that a non-streamed response refused by
// promptFeedback is a content_filter completion, not an error or an empty 200.
func TestGeminiDecodeResponse_PromptBlocked(t *testing.T) {
	got := goldentest.Response(t, New(), []byte(`{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":12,"totalTokenCount":12},"modelVersion":"gemini-2.5-flash","responseId":"x"}`))
	want := `{"id":"chatcmpl-golden","object":"chat.completion","created":1700000000,"model":"client-model","choices":[{"index":0,"message":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":"content_filter"}],"usage":{"prompt_tokens":12,"completion_tokens":0,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestGeminiDecodeError(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   *translate.UpstreamError
	}{
		{"400InvalidArgument", 400, `{"error":{"code":400,"message":"bad field","status":"INVALID_ARGUMENT"}}`,
			&translate.UpstreamError{Status: 400, Type: "invalid_request_error", Code: "invalid_argument", Message: "bad field"}},
		{"401Unauthenticated", 401, `{"error":{"code":401,"message":"no creds","status":"UNAUTHENTICATED"}}`,
			&translate.UpstreamError{Status: 401, Type: "authentication_error", Code: "unauthenticated", Message: "no creds"}},
		{"403PermissionDenied", 403, `{"error":{"code":403,"message":"denied","status":"PERMISSION_DENIED"}}`,
			&translate.UpstreamError{Status: 403, Type: "permission_error", Code: "permission_denied", Message: "denied"}},
		{"404NotFound", 404, `{"error":{"code":404,"message":"no model","status":"NOT_FOUND"}}`,
			&translate.UpstreamError{Status: 404, Type: "invalid_request_error", Code: "not_found", Message: "no model"}},
		{"429ResourceExhausted", 429, `{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"13s"}]}}`,
			&translate.UpstreamError{Status: 429, Type: "rate_limit_error", Code: "resource_exhausted", Message: "quota", RetryAfter: 13 * time.Second, Retryable: true}},
		{"500Internal", 500, `{"error":{"code":500,"message":"oops","status":"INTERNAL"}}`,
			&translate.UpstreamError{Status: 500, Type: "api_error", Code: "internal", Message: "oops", Retryable: true}},
		{"503Unavailable", 503, `{"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}`,
			&translate.UpstreamError{Status: 503, Type: "api_error", Code: "unavailable", Message: "overloaded", Retryable: true}},
		{"ArrayWrapped", 400, `[{"error":{"code":400,"message":"bad","status":"INVALID_ARGUMENT"}}]`,
			&translate.UpstreamError{Status: 400, Type: "invalid_request_error", Code: "invalid_argument", Message: "bad"}},
		{"SSEFramed", 500, "data: {\"error\":{\"code\":500,\"message\":\"boom\",\"status\":\"INTERNAL\"}}\r\n\r\n",
			&translate.UpstreamError{Status: 500, Type: "api_error", Code: "internal", Message: "boom", Retryable: true}},
		{"Unparseable", 502, `<html>Bad Gateway</html>`,
			&translate.UpstreamError{Status: 502, Type: "api_error", Message: "gemini returned HTTP 502: <html>Bad Gateway</html>", Retryable: true}},
		{"UnparseableLong", 503, strings.Repeat("x", 1000),
			&translate.UpstreamError{Status: 503, Type: "api_error", Message: "gemini returned HTTP 503: " + strings.Repeat("x", 200) + "...", Retryable: true}},
		{"Empty", 500, ``,
			&translate.UpstreamError{Status: 500, Type: "api_error", Message: "gemini returned HTTP 500", Retryable: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := New().DecodeError(tt.status, []byte(tt.body))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestGeminiStream_PartialArgsNested pins the Vertex AI streamFunctionCallArguments
// decoding for nested paths and non-string values.
func TestGeminiStream_PartialArgsNested(t *testing.T) {
	up := geminiSSE(
		`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","willContinue":true}}]}}],"responseId":"p"}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"partialArgs":[{"jsonPath":"$.a.b","stringValue":"he","willContinue":true}],"willContinue":true}}]}}]}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"partialArgs":[{"jsonPath":"$.a.b","stringValue":"llo \""}],"willContinue":true}}]}}]}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"partialArgs":[{"jsonPath":"$.n","numberValue":3},{"jsonPath":"$.list[0]","boolValue":true},{"jsonPath":"$['x.y']","nullValue":null}],"willContinue":true}}]}}]}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{}}]},"finishReason":"STOP"}]}`,
	)
	evs, err := geminiEvents(t, up)
	if err != nil {
		t.Fatal(err)
	}
	args := ""
	for _, ev := range evs {
		if ev.Kind == translate.EventToolCallArgsDelta {
			args += ev.Text
		}
	}
	if want := `{"a":{"b":"hello \""},"n":3,"list":[true],"x.y":null}`; args != want {
		t.Errorf("args = %s, want %s", args, want)
	}
}

func FuzzGeminiStream(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	for _, path := range files {
		ar, err := txtar.ParseFile(path)
		if err != nil {
			f.Fatal(err)
		}
		for _, s := range ar.Files {
			switch s.Name {
			case "upstream.sse":
				f.Add(s.Data, uint16(len(s.Data)/2))
			case "upstream.chunks.txt":
				up := goldentest.ReframeChunks(s.Data, false)
				f.Add(up, uint16(len(up)/3))
			}
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, split uint16) {
		at := int(split) % (len(body) + 1)
		for _, chunks := range [][][]byte{{body}, {body[:at], body[at:]}} {
			dec := newGeminiDecoder()
			var p sse.Parser
			emit := func(*translate.Event) error { return nil }
			var err error
			for _, c := range chunks {
				if err = p.Feed(c, func(typ, data []byte) error { return dec.Event(typ, data, emit) }); err != nil {
					break
				}
			}
			if err == nil {
				_ = dec.Close(emit)
			}
			_ = New().DecodeResponse(body, emit)
			_ = New().DecodeError(500, body)
		}
	})
}

// BenchmarkGeminiStream decodes and encodes a 200-event text stream, per event.
func BenchmarkGeminiStream(b *testing.B) {
	var events [][]byte
	for i := 0; i < 200; i++ {
		ev := `{"candidates": [{"content": {"parts": [{"text": "The quick brown fox jumps over the lazy dog, token ` + strconv.Itoa(i) + `.\n"}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 13,"candidatesTokenCount": ` + strconv.Itoa(i) + `,"totalTokenCount": 151,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 13}],"thoughtsTokenCount": 75},"modelVersion": "gemini-2.5-flash","responseId": "VJfyaP7eE_6zmtkP4qLV6Ao"}`
		if i == 199 {
			ev = strings.Replace(ev, `"index": 0`, `"finishReason": "STOP","index": 0`, 1)
		}
		events = append(events, []byte(ev))
	}
	p := New()
	out := make([]byte, 0, 1<<16)
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		dec := p.NewStreamDecoder(nil)
		enc := openaichat.NewChunkEncoder("chatcmpl-x", "fast", 1700000000, true)
		out = out[:0]
		emit := func(ev *translate.Event) error {
			out = enc.Encode(out, ev)
			return nil
		}
		for _, ev := range events {
			if err := dec.Event(nil, ev, emit); err != nil {
				b.Fatal(err)
			}
		}
		if err := dec.Close(emit); err != nil {
			b.Fatal(err)
		}
		out = enc.Finish(out)
	}
	runtime.ReadMemStats(&after)
	n := float64(b.N * len(events))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/event")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/event")
}

// TestGeminiStream_TextSignatureBeforeCall pins that a signature on a text part before a
// call travels in that call's id and comes back on the model's text in the next request.
func TestGeminiStream_TextSignatureBeforeCall(t *testing.T) {
	up := geminiSSE(
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"Looking.","thoughtSignature":"dGV4dHNpZw=="}]}}],"responseId":"t1","modelVersion":"gemini-3-pro-preview"}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","args":{"a":1},"id":"fc_1"},"thoughtSignature":"Y2FsbHNpZw=="}]},"finishReason":"STOP"}]}`,
	)
	var asm openaichat.Assembler
	if err := geminiFeed(newGeminiDecoder(), []byte(up), asm.Add); err != nil {
		t.Fatal(err)
	}
	asm.Finish()
	msg := geminiAssistantJSON(t, asm.Message(0))
	call := asm.Choices[0].ToolCalls[0].ID
	body, err := geminiRequest(t, `{"model":"gemini-3-pro-preview","messages":[{"role":"user","content":"go"},`+msg+`,{"role":"tool","tool_call_id":`+string(jsonx.AppendString(nil, call))+`,"content":"1"}]}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"contents":[{"role":"user","parts":[{"text":"go"}]},{"role":"model","parts":[{"text":"Looking.","thoughtSignature":"dGV4dHNpZw=="},{"functionCall":{"name":"f","args":{"a":1},"id":"fc_1"},"thoughtSignature":"Y2FsbHNpZw=="}]},{"role":"user","parts":[{"functionResponse":{"name":"f","id":"fc_1","response":{"output":"1"}}}]}]}`
	if diff := cmp.Diff(want, string(body)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestGeminiStream_EventFullyValidated pins that a chunk is checked whole before any of it
// is used: a syntax error anywhere (in a member the decoder ignores, inside usageMetadata,
// after the object) fails the event with nothing emitted from it, and a valid chunk that is
// not an object is told apart from text that is not JSON.
func TestGeminiStream_EventFullyValidated(t *testing.T) {
	const good = `{"candidates":[{"content":{"parts":[{"text":"a"}]},"index":0}],"responseId":"r1"}`
	notJSON := "upstream 502 api_error: decoding gemini event: not valid JSON: "
	tests := []struct {
		name    string
		event   string
		wantErr string
	}{
		{name: "TrailingGarbage", event: good + `x`, wantErr: notJSON + good + `x`},
		{name: "SecondValue", event: good + ` {}`, wantErr: notJSON + good + ` {}`},
		{name: "TrailingVerticalTab", event: good + "\v", wantErr: notJSON + good},
		{name: "BadNumberInUsage", event: `{"usageMetadata":{"promptTokenCount":01},"candidates":[]}`, wantErr: notJSON + `{"usageMetadata":{"promptTokenCount":01},"candidates":[]}`},
		{name: "BadIgnoredMember", event: `{"candidates":[{"content":{"parts":[{"text":"a"}]}}],"extra":[1,}`, wantErr: notJSON + `{"candidates":[{"content":{"parts":[{"text":"a"}]}}],"extra":[1,}`},
		{name: "BadEscapeInCandidate", event: `{"candidates":[{"content":{"parts":[{"text":"\q"}]}}]}`, wantErr: notJSON + `{"candidates":[{"content":{"parts":[{"text":"\q"}]}}]}`},
		{name: "ControlCharInKey", event: "{\"a\x01\":1}", wantErr: notJSON + "{\"a\x01\":1}"},
		{name: "MissingColon", event: `{"responseId" "r1"}`, wantErr: notJSON + `{"responseId" "r1"}`},
		{name: "NotJSON", event: `data`, wantErr: notJSON + `data`},
		{name: "ArrayNotObject", event: ` [1] `, wantErr: "upstream 502 api_error: decoding gemini event: not a JSON object: [1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dec := newGeminiDecoder()
			var got []translate.EventKind
			err := dec.Event(nil, []byte(tt.event), func(ev *translate.Event) error {
				got = append(got, ev.Kind)
				return nil
			})
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("err = %v, want %s", err, tt.wantErr)
			}
			if diff := cmp.Diff([]translate.EventKind(nil), got); diff != "" {
				t.Errorf("events emitted from a malformed chunk (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzGeminiEventValidation checks the decoder against jsonx.Valid: an event that is not
// valid JSON fails with "not valid JSON" and emits nothing, and a valid one never does.
func FuzzGeminiEventValidation(f *testing.F) {
	f.Add([]byte(`{"candidates":[{"content":{"parts":[{"text":"a"}]},"index":0}],"usageMetadata":{"promptTokenCount":1}}`))
	f.Add([]byte(`{"candidates":[{"content":{"parts":[{"text":"a"}]}}]} x`))
	f.Add([]byte(`{"error":{"code":429,"message":"slow"}}`))
	f.Add([]byte(` [1] `))
	f.Fuzz(func(t *testing.T, data []byte) {
		valid := jsonx.Valid(string(data))
		emitted := 0
		err := newGeminiDecoder().Event(nil, data, func(*translate.Event) error { emitted++; return nil })
		notJSON := err != nil && strings.Contains(err.Error(), "decoding gemini event: not valid JSON")
		if notJSON == valid {
			t.Fatalf("jsonx.Valid = %v, err = %v", valid, err)
		}
		if !valid && emitted != 0 {
			t.Fatalf("%d events emitted from invalid JSON", emitted)
		}
	})
}
