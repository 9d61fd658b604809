package responsesin

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/internal/openaitest"
	"github.com/agate-gateway/agate/translate"
)

// TestAppendBody: the forwarded body is the client's with only the model's value replaced.
func TestAppendBody(t *testing.T) {
	r, err := Parse([]byte(`{ "input" : "hi",  "model" : "a" , "x":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(`{ "input" : "hi",  "model" : "up" , "x":1}`, string(r.AppendBody(nil, "up"))); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestAppendWithModel: the Response's model is replaced, at the top or in the member
// response of an event; data without a string model passes as it is.
func TestAppendWithModel(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		inner    bool
		want     string
	}{
		{name: "top", in: `{"id":"r","model":"m-up","x":{"model":"k"}}`, want: `{"id":"r","model":"m","x":{"model":"k"}}`},
		{name: "event", in: `{"type":"response.created","response":{"model":"m-up"}}`, inner: true,
			want: `{"type":"response.created","response":{"model":"m"}}`},
		{name: "no model", in: `{"type":"x","response":{}}`, inner: true, want: `{"type":"x","response":{}}`},
		{name: "model not a string", in: `{"model":1}`, want: `{"model":1}`},
		{name: "not JSON", in: `{"model":"a"`, want: `{"model":"a"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := string(AppendWithModel(nil, []byte(tt.in), tt.inner, []byte(`"m"`)))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadUpstream: what the passthrough reads of stream events and whole answers.
func TestReadUpstream(t *testing.T) {
	ev, ok := ReadStreamEvent([]byte(`{"type":"response.output_text.delta","sequence_number":7}`))
	if diff := cmp.Diff(StreamEvent{Type: "response.output_text.delta", Seq: 7, HasSeq: true, SeqAt: 55, SeqLen: 1}, ev); !ok || diff != "" {
		t.Errorf("event (-want +got):\n%s", diff)
	}
	// The output a delta carries, as written: what the gateway estimates when no usage
	// follows.
	for in, want := range map[string]int{
		`{"type":"response.output_text.delta","sequence_number":8,"delta":"ab\"c"}`:   5,
		`{"type":"response.function_call_arguments.delta","delta":"{\"a\":1}"}`:       9,
		`{"type":"response.output_item.added","item":{"type":"message","delta":"x"}}`: 0,
		`{"type":"response.output_text.delta","delta":null}`:                          0,
	} {
		if ev, ok := ReadStreamEvent([]byte(in)); !ok || ev.DeltaBytes != want {
			t.Errorf("ReadStreamEvent(%s).DeltaBytes = %d (ok %v), want %d", in, ev.DeltaBytes, ok, want)
		}
	}
	for _, in := range []string{`[1]`, ` {"type":"x"}`, `{"type":`, `"x"`} {
		if _, ok := ReadStreamEvent([]byte(in)); ok {
			t.Errorf("ReadStreamEvent(%s) accepted", in)
		}
	}
	resp := `{"id":"resp_1","object":"response","output":[{"type":"message"}],"usage":{"input_tokens":5,"output_tokens":7,` +
		`"input_tokens_details":{"cached_tokens":2},"output_tokens_details":{"reasoning_tokens":3}}}`
	want := Upstream{Response: resp, Output: `[{"type":"message"}]`, ID: "resp_1",
		Usage: translate.Usage{PromptTokens: 5, CompletionTokens: 7, CachedTokens: 2, ReasoningTokens: 3}}
	for _, tt := range []struct {
		name, in string
		want     Upstream
		kind     Body
	}{
		{name: "response", in: resp, want: want},
		{name: "error", in: `{"error":{"message":"x"}}`, kind: BodyError},
		{name: "other object", in: `{"object":"list"}`, kind: BodyOther},
		{name: "array", in: `[{"error":{}}]`, kind: BodyOther},
		{name: "not JSON", in: `{"object":`, kind: BodyNotJSON},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, kind := ReadResponse([]byte(tt.in))
			if diff := cmp.Diff(tt.want, got); kind != tt.kind || diff != "" {
				t.Errorf("kind %d, want %d; (-want +got):\n%s", kind, tt.kind, diff)
			}
		})
	}
	if diff := cmp.Diff(want, ReadEventResponse([]byte(`{"type":"response.completed","response":`+resp+`}`))); diff != "" {
		t.Errorf("event response (-want +got):\n%s", diff)
	}
	if got := ResponseID([]byte(resp)); got != "resp_1" {
		t.Errorf("ResponseID = %q", got)
	}
}

// FuzzReadStreamEvent: ReadStreamEvent reads what the scanner's general reader
// (RootMembers) reads of any event: its type, sequence number and the length of its
// delta's literal.
func FuzzReadStreamEvent(f *testing.F) {
	for _, s := range []string{
		`{"type":"response.output_text.delta","sequence_number":8,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hello"}`,
		`{"type":"response.function_call_arguments.delta","sequence_number":9,"item_id":"fc_1","output_index":1,"delta":"{\"city\":\"Par"}`,
		`{"type":"response.reasoning_summary_text.delta","delta":"\u00e9\n","delta":"x"}`,
		`{"type":"response.completed","response":{"usage":null}}`,
		`{"type":"x","delta":1}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ev, ok := ReadStreamEvent([]byte(s))
		// The same members read by the scanner's general reader (the first of each name).
		sc := jsonx.NewScanner(s)
		var v [3]jsonx.Value
		_, okRoot := sc.RootMembers([]string{"type", "sequence_number", "delta"}, v[:])
		want := StreamEvent{Type: v[0].Str}
		if v[1].Kind == jsonx.Number && plainCount(v[1].Raw) {
			want.Seq, want.HasSeq = int(v[1].Int()), true
		}
		if v[1].Exists() {
			want.SeqAt, want.SeqLen = v[1].At, len(v[1].Raw)
		}
		if v[2].Kind == jsonx.String {
			want.DeltaBytes = len(v[2].Raw) - 2
		}
		if !okRoot || len(s) == 0 || s[0] != '{' {
			okRoot, want = false, StreamEvent{}
		}
		if ok != okRoot || ev != want {
			t.Fatalf("ReadStreamEvent(%q) = %+v, %v; the general reader's %+v, %v", s, ev, ok, want, okRoot)
		}
	})
}

// TestSequencer pins the numbers a Responses client gets on the passthrough: strictly
// increasing, whatever the upstream sent. An event numbered after the last keeps its
// number (gaps too); a repeated, lower, missing or non-numeric one gets the last plus one,
// replaced where it stands or inserted first; the gateway's own events (Next) continue
// the count. An event sent on several data lines comes out on one.
func TestSequencer(t *testing.T) {
	in := []string{
		`{"type":"response.created","sequence_number":0}`,
		`{"type":"response.output_item.added","sequence_number":1}`,
		`{"type":"response.function_call_arguments.delta","sequence_number":1}`, // repeated
		`{"type":"response.function_call_arguments.delta","sequence_number":0}`, // restarted
		`{"type":"response.function_call_arguments.done","sequence_number":7}`,  // a gap: kept
		`{"type":"response.output_item.done"}`,                                  // missing
		`{ }`,                                                                   // missing, empty
		`{"sequence_number":"9","type":"x"}`,                                    // not a number
		`{"type":"x","sequence_number":11.5}`,                                   // not an integer
		"{\"type\":\"y\",\n\"sequence_number\":12,\r\n\"a\":\"b\\nc\"}",         // on several data lines
		"{\"type\":\"y\",\n\"sequence_number\":1}",                              // on several lines and renumbered
	}
	want := []string{
		`{"type":"response.created","sequence_number":0}`,
		`{"type":"response.output_item.added","sequence_number":1}`,
		`{"type":"response.function_call_arguments.delta","sequence_number":2}`,
		`{"type":"response.function_call_arguments.delta","sequence_number":3}`,
		`{"type":"response.function_call_arguments.done","sequence_number":7}`,
		`{"sequence_number":8,"type":"response.output_item.done"}`,
		`{"sequence_number":9 }`,
		`{"sequence_number":10,"type":"x"}`,
		`{"type":"x","sequence_number":11}`,
		`{"type":"y","sequence_number":12,"a":"b\nc"}`,
		`{"type":"y","sequence_number":13}`,
	}
	var s Sequencer
	var got []string
	for _, d := range in {
		ev, ok := ReadStreamEvent([]byte(d))
		if !ok {
			t.Fatalf("ReadStreamEvent(%s) refused", d)
		}
		out, _ := s.Event(nil, []byte(d), ev)
		got = append(got, string(out))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if n := s.Next(); n != 14 {
		t.Errorf("Next() = %d, want 14", n)
	}
}

// FuzzSequencer: whatever the events, each comes out as a JSON object whose
// sequence_number is an integer above the one before, and an event that kept its number
// is passed as it came.
func FuzzSequencer(f *testing.F) {
	f.Add([]byte(`{"type":"response.created","sequence_number":0}`), []byte(`{"type":"x","sequence_number":0}`), []byte(`{}`))
	f.Add([]byte(`{"sequence_number":5}`), []byte(`{"sequence_number":"5" , "a":[1]}`), []byte(`{ "type" : "y" }`))
	f.Add([]byte("{\"type\":\"a\",\r\n\"sequence_number\":0}"), []byte("{\n}"), []byte("{\"a\":\"\\n\"\n,\"sequence_number\":0}"))
	f.Add([]byte(`{"sequence_number":-3}`), []byte(`{"sequence_number":1e3}`), []byte(`{"sequence_number":99999999999999999999}`))
	f.Fuzz(func(t *testing.T, a, b, c []byte) {
		var s Sequencer
		last := -1
		for _, d := range [][]byte{a, b, c} {
			ev, ok := ReadStreamEvent(d)
			if !ok {
				continue
			}
			out, renumbered := s.Event(nil, d, ev)
			got, ok := ReadStreamEvent(out)
			if !ok {
				t.Fatalf("%s became %s, not a JSON object", d, out)
			}
			if !got.HasSeq || got.Seq <= last {
				t.Fatalf("%s became %s: sequence_number not above %d", d, out, last)
			}
			if renumbered && got.Seq != last+1 && got.Seq != ev.Seq || !renumbered && string(out) != string(d) {
				t.Fatalf("%s renumbered to %s, not the next number %d", d, out, last+1)
			}
			if bytes.ContainsAny(out, "\r\n") {
				t.Fatalf("%s came out on several lines: %q", d, out)
			}
			last = got.Seq
		}
	})
}

// TestEncoder_PrettyPrintedRequestStaysOneLine: a client's pretty-printed request (tools,
// their schemas, metadata, text format on several lines, as curl users write it) is echoed
// in response.created, response.in_progress and the terminal event; each event stays one
// SSE data line, so every client reads whole JSON events.
func TestEncoder_PrettyPrintedRequestStaysOneLine(t *testing.T) {
	req, err := Parse([]byte("{\n  \"model\": \"m\",\n  \"input\": \"hi\",\n  \"stream\": true,\n" +
		"  \"metadata\": {\n    \"k\": \"v\"\n  },\n" +
		"  \"text\": {\"format\": {\"type\": \"json_schema\", \"name\": \"s\",\r\n \"schema\": {\"type\": \"object\"}}},\n" +
		"  \"tools\": [\n    {\n      \"type\": \"function\",\n      \"name\": \"f\",\n      \"parameters\": {\n        \"type\": \"object\",\n        \"properties\": {\"a\": {\"type\": \"string\", \"description\": \"line\\nbreak\"}}\n      }\n    },\n" +
		"    {\"type\": \"web_search\",\n \"search_context_size\": \"low\"}\n  ]\n}"))
	if err != nil {
		t.Fatal(err)
	}
	enc := NewEncoder(req, EncoderOptions{ID: "resp_x", Model: "m", Created: 1, Stream: true})
	out := enc.Encode(nil, &translate.Event{Kind: translate.EventTextDelta, Text: "{}"})
	out = enc.Finish(out, 2)
	openaitest.CheckResponseEvents(t, out)
	if !strings.Contains(string(out), `"description":"line\nbreak"`) {
		t.Errorf("a string's escaped line break was changed:\n%s", out)
	}
}

// TestAppendModelAt: a whole answer's model is set where ReadAnswer found it,
// as AppendWithModel sets it.
func TestAppendModelAt(t *testing.T) {
	for _, in := range []string{
		`{"id":"r","object":"response","model":"m-up","output":[],"x":{"model":"k"}}`,
		`{"id":"r", "object" : "response", "model" : "m\"up" ,"usage":{"input_tokens":1}}`,
		`{"object":"response","model":"a","model":"b"}`,
		`{"object":"response","model":null}`,
		`{"object":"response","output":[{"model":"k"}]}`,
	} {
		u, kind, model := ReadAnswer([]byte(in))
		if wu, wkind := ReadResponse([]byte(in)); kind != BodyResponse || wkind != kind || !reflect.DeepEqual(u, wu) {
			t.Fatalf("ReadAnswer(%s) = %+v, %v; ReadResponse's %+v, %v", in, u, kind, wu, wkind)
		}
		want := string(AppendWithModel(nil, []byte(in), false, []byte(`"m"`)))
		if got := string(AppendModelAt(nil, []byte(in), model, []byte(`"m"`))); got != want {
			t.Errorf("AppendModelAt(%s) = %s, want AppendWithModel's %s", in, got, want)
		}
	}
}
