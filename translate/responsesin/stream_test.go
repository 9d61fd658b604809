package responsesin

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agate-gateway/agate/internal/openaitest"
	"github.com/agate-gateway/agate/internal/splittest"
	"github.com/agate-gateway/agate/internal/sse"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/anthropic"
	"github.com/agate-gateway/agate/translate/gemini"
	"github.com/agate-gateway/agate/translate/internal/spectest"
	"github.com/agate-gateway/agate/translate/openai"
	"github.com/agate-gateway/agate/translate/responses"
)

var update = flag.Bool("update", false, "rewrite the want files of the goldens")

// golden compares got with the file want, or rewrites the file under -update.
func golden(t *testing.T, want string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(want), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(want, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(want)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(b), string(got)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", want, diff)
	}
}

// fixturesDir holds the recorded upstream traffic (provenance in its SOURCES.md).
var fixturesDir = filepath.Join("..", "..", "testdata", "fixtures")

func readFixture(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixturesDir, rel))
	if err != nil {
		t.Fatalf("reading fixture: %v", err)
	}
	return b
}

// upstreams are the recorded streams of every upstream wire, by the provider that decodes
// them.
var upstreams = []struct {
	dir      string
	provider translate.Provider
}{
	{"anthropic/stream", anthropic.New()},
	{"gemini/stream", gemini.New()},
	{"openai-chat/stream", openai.New()},
	{"responses/stream", responses.New()},
}

func mustParse(t testing.TB, body string) *Request {
	t.Helper()
	r, err := Parse([]byte(body))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return r
}

// replay decodes an upstream stream, fed in pieces cut at splits (byte offsets), and
// encodes its events as a streamed Responses answer, as the proxy does: an upstream error
// ends the stream with an error event.
func replay(t testing.TB, p translate.Provider, stream []byte, splits ...int) []byte {
	t.Helper()
	return replayWrapped(t, p, stream, nil, splits...)
}

// replayWrapped is replay with the parser's handler wrapped by wrap (splittest.Poison),
// if not nil.
func replayWrapped(t testing.TB, p translate.Provider, stream []byte, wrap func(sse.Handler) sse.Handler, splits ...int) []byte {
	t.Helper()
	req := mustParse(t, `{"model":"client-model","input":"hi","stream":true}`)
	enc := NewEncoder(req, EncoderOptions{ID: "resp_test", Model: "client-model", Created: 1700000000, Stream: true})
	dec := p.NewStreamDecoder(&translate.Options{Stream: true})
	var out []byte
	emit := func(ev *translate.Event) error {
		if ev.Kind == translate.EventError {
			return ev.Err
		}
		out = enc.Encode(out, ev)
		return nil
	}
	var ps sse.Parser
	var handler sse.Handler = func(typ, data []byte) error { return dec.Event(typ, data, emit) }
	if wrap != nil {
		handler = wrap(handler)
	}
	prev := 0
	var err error
	for _, s := range append(splits, len(stream)) {
		if err = ps.Feed(stream[prev:s], handler); err != nil {
			break
		}
		prev = s
	}
	if err == nil {
		err = dec.Close(emit)
	}
	if err != nil {
		return enc.AppendError(out, err.Error(), "server_error", "")
	}
	return enc.Finish(out, 1700000001)
}

// frame is one server-sent event of a Responses stream.
type frame struct {
	typ  string
	data []byte
}

func frames(t testing.TB, body []byte) []frame {
	t.Helper()
	var out []frame
	for _, block := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
		typ, data, ok := strings.Cut(block, "\n")
		if !ok || !strings.HasPrefix(typ, "event: ") || !strings.HasPrefix(data, "data: ") {
			t.Fatalf("malformed event %q", block)
		}
		out = append(out, frame{strings.TrimPrefix(typ, "event: "), []byte(strings.TrimPrefix(data, "data: "))})
	}
	return out
}

// checkStream checks the invariants of a Responses stream: the SSE event name is the
// payload's type; sequence numbers count from 0; it opens with response.created and
// response.in_progress; every output item is added once, in output_index order, and done
// once after; deltas refer to an item that is open; exactly one terminal event, last;
// the terminal response's output is the items as done, and it reports usage.
func checkStream(t testing.TB, body []byte) {
	t.Helper()
	openaitest.CheckResponseEvents(t, body)
	fs := frames(t, body)
	type itemState struct{ added, done bool }
	var items []itemState
	var doneItems []json.RawMessage
	terminals := 0
	for i, f := range fs {
		var ev struct {
			Type        string          `json:"type"`
			Seq         *int            `json:"sequence_number"`
			OutputIndex *int            `json:"output_index"`
			Item        json.RawMessage `json:"item"`
			Response    *struct {
				Status string            `json:"status"`
				Output []json.RawMessage `json:"output"`
				Usage  json.RawMessage   `json:"usage"`
			} `json:"response"`
		}
		if err := json.Unmarshal(f.data, &ev); err != nil {
			t.Fatalf("event %d is not JSON: %v: %s", i, err, f.data)
		}
		if ev.Type != f.typ {
			t.Errorf("event %d: event name %q, type %q", i, f.typ, ev.Type)
		}
		if ev.Seq == nil || *ev.Seq != i {
			t.Errorf("event %d (%s): sequence_number %v, want %d", i, ev.Type, ev.Seq, i)
		}
		if i == 0 && ev.Type != "response.created" || i == 1 && ev.Type != "response.in_progress" {
			t.Errorf("event %d is %s", i, ev.Type)
		}
		if terminals > 0 {
			t.Errorf("event %d (%s) after the terminal event", i, ev.Type)
		}
		switch ev.Type {
		case "response.output_item.added":
			if *ev.OutputIndex != len(items) {
				t.Errorf("event %d adds output_index %d, want %d", i, *ev.OutputIndex, len(items))
			}
			items = append(items, itemState{added: true})
		case "response.output_item.done":
			k := *ev.OutputIndex
			if k >= len(items) || items[k].done {
				t.Errorf("event %d: output_item.done for output_index %d not open", i, k)
				continue
			}
			items[k].done = true
			for len(doneItems) <= k {
				doneItems = append(doneItems, nil)
			}
			doneItems[k] = ev.Item
		case "response.completed", "response.incomplete", "response.failed", "error":
			terminals++
			if ev.Response != nil {
				if len(ev.Response.Usage) == 0 || string(ev.Response.Usage) == "null" {
					t.Errorf("terminal %s has no usage", ev.Type)
				}
				if diff := cmp.Diff(compact(t, doneItems), compact(t, ev.Response.Output)); diff != "" {
					t.Errorf("terminal output differs from the items done (-done +output):\n%s", diff)
				}
			}
		case "response.created", "response.in_progress":
		default:
			if ev.OutputIndex == nil || *ev.OutputIndex >= len(items) || items[*ev.OutputIndex].done {
				t.Errorf("event %d (%s) refers to an item that is not open", i, ev.Type)
			}
		}
	}
	if terminals != 1 {
		t.Errorf("%d terminal events, want 1", terminals)
	}
	if terminals == 1 && fs[len(fs)-1].typ != "error" {
		for k, it := range items {
			if !it.done {
				t.Errorf("output item %d never done", k)
			}
		}
	}
}

func compact(t testing.TB, raws []json.RawMessage) []string {
	out := make([]string, len(raws))
	for i, r := range raws {
		var b bytes.Buffer
		if err := json.Compact(&b, r); err != nil {
			t.Fatal(err)
		}
		out[i] = b.String()
	}
	return out
}

// eventSchemas validates Responses stream events against the published schema of their
// type (a ResponseStreamEvent variant), compiled when first needed.
type eventSchemas struct {
	compile func(pointer string) *jsonschema.Schema // of the spec, parsed once
	byType  map[string]string                       // event type -> schema name
	cache   map[string]*jsonschema.Schema
}

func (s *eventSchemas) validate(data []byte) error {
	var ev struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		return err
	}
	name, ok := s.byType[ev.Type]
	if !ok {
		return fmt.Errorf("no ResponseStreamEvent variant has type %q", ev.Type)
	}
	sc, ok := s.cache[name]
	if !ok {
		sc = s.compile("#/components/schemas/" + name)
		s.cache[name] = sc
	}
	return spectest.Validate(sc, data)
}

// schemas returns the stream event validator and the Response schema.
func schemas(t testing.TB) (*eventSchemas, *jsonschema.Schema) {
	raw, err := os.ReadFile(filepath.Join(spectest.SpecsDir(), "openai", "chat-and-responses.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				AnyOf []struct {
					Ref string `json:"$ref"`
				} `json:"anyOf"`
				Properties struct {
					Type struct {
						Enum []string `json:"enum"`
					} `json:"type"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	compile := spectest.Compiler(t, "openai/chat-and-responses.json")
	es := &eventSchemas{compile: compile, byType: map[string]string{}, cache: map[string]*jsonschema.Schema{}}
	for _, v := range doc.Components.Schemas["ResponseStreamEvent"].AnyOf {
		name := strings.TrimPrefix(v.Ref, "#/components/schemas/")
		if e := doc.Components.Schemas[name].Properties.Type.Enum; len(e) == 1 {
			es.byType[e[0]] = name
		}
	}
	if len(es.byType) < 40 {
		t.Fatalf("found %d ResponseStreamEvent variants", len(es.byType))
	}
	if err := es.validate([]byte(`{"type":"response.output_text.delta","sequence_number":1}`)); err == nil {
		t.Fatal("validator accepted a known-invalid event")
	}
	response := compile("#/components/schemas/Response")
	spectest.MustRejectInvalid(t, response, `{"id":"resp_1","object":"response","output":[]}`)
	return es, response
}

// TestStreamGoldens replays every recorded upstream stream through the Responses encoder,
// whole and split at byte offsets (see package splittest), and checks the stream
// invariants and that every event and the final Response satisfy the published schema.
func TestStreamGoldens(t *testing.T) {
	eventSchema, _ := schemas(t)
	for _, u := range upstreams {
		files, _ := filepath.Glob(filepath.Join(fixturesDir, u.dir, "*.sse"))
		if len(files) == 0 {
			t.Fatalf("no recordings in %s", u.dir)
		}
		for _, file := range files {
			name := u.dir + "/" + filepath.Base(file)
			t.Run(name, func(t *testing.T) {
				stream := readFixture(t, filepath.Join(u.dir, filepath.Base(file)))
				whole := replay(t, u.provider, stream)
				checkStream(t, whole)
				if len(stream) <= 20<<10 {
					golden(t, filepath.Join("testdata", "stream", strings.ReplaceAll(u.dir, "/stream", "")+"_"+strings.TrimSuffix(filepath.Base(file), ".sse")+".want.sse"), whole)
				}
				for i, f := range frames(t, whole) {
					if err := eventSchema.validate(f.data); err != nil {
						t.Errorf("event %d (%s) does not satisfy ResponseStreamEvent: %v\n%s", i, f.typ, err, f.data)
					}
				}
				// Every byte offset for recordings up to 8 KiB; about 200 offsets for longer
				// ones; checked as package splittest says: the parser's events at every
				// offset, one replay with each event's memory poisoned after its call, and a
				// few splits replayed in full.
				if got := replayWrapped(t, u.provider, stream, splittest.Poison); !bytes.Equal(got, whole) {
					t.Fatalf("with each event's memory overwritten after its call, the output differs: a view of an event is kept (-want +got):\n%s", cmp.Diff(string(whole), string(got)))
				}
				step := 1
				if len(stream) > 8<<10 {
					step = len(stream) / 200
				}
				var offsets []int
				for k := 1; k < len(stream); k += step {
					offsets = append(offsets, k)
				}
				splittest.CheckEventSplits(t, stream, offsets)
				for _, k := range splittest.SampleOffsets(len(stream), 8) {
					if got := replay(t, u.provider, stream, k); !bytes.Equal(got, whole) {
						t.Fatalf("split at byte %d: output differs from the whole stream's", k)
					}
				}
				// And cut into pieces of 7 bytes.
				var cuts []int
				for k := 7; k < len(stream); k += 7 {
					cuts = append(cuts, k)
				}
				if got := replay(t, u.provider, stream, cuts...); !bytes.Equal(got, whole) {
					t.Fatalf("split every 7 bytes: output differs from the whole stream's")
				}
			})
		}
	}
}

// TestCompleteGoldens decodes every recorded non-streamed upstream answer and checks the
// Response object against the schema and against the streamed encoding of the same events.
func TestCompleteGoldens(t *testing.T) {
	_, responseSchema := schemas(t)
	dirs := []struct {
		dir      string
		provider translate.Provider
	}{
		{"anthropic/json", anthropic.New()},
		{"gemini/json", gemini.New()},
		{"openai-chat/json", openai.New()},
		{"responses/json", responses.New()},
	}
	for _, d := range dirs {
		files, _ := filepath.Glob(filepath.Join(fixturesDir, d.dir, "*.json"))
		for _, file := range files {
			if strings.HasSuffix(file, ".request.json") {
				continue
			}
			t.Run(d.dir+"/"+filepath.Base(file), func(t *testing.T) {
				body := readFixture(t, filepath.Join(d.dir, filepath.Base(file)))
				req := mustParse(t, `{"model":"client-model","input":"hi"}`)
				enc := NewEncoder(req, EncoderOptions{ID: "resp_test", Model: "client-model", Created: 1700000000})
				err := d.provider.DecodeResponse(body, func(ev *translate.Event) error {
					enc.Encode(nil, ev)
					return nil
				})
				if err != nil {
					t.Skipf("not a decodable answer: %v", err)
				}
				enc.Finish(nil, 1700000001)
				resp := enc.AppendResponse(nil)
				if err := spectest.Validate(responseSchema, resp); err != nil {
					t.Errorf("Response does not satisfy the schema: %v\n%s", err, resp)
				}
			})
		}
	}
}

// TestEncoder_Lifecycles pins the item lifecycle of interleaved kinds: reasoning, then
// text, a refusal part in the same message, then two tool calls whose argument deltas
// interleave, then usage and a length finish (incomplete).
func TestEncoder_Lifecycles(t *testing.T) {
	eventSchema, responseSchema := schemas(t)
	req := mustParse(t, `{"model":"m","input":"hi","stream":true,"max_output_tokens":5}`)
	enc := NewEncoder(req, EncoderOptions{ID: "resp_x", Model: "m", Created: 1, Stream: true})
	evs := []translate.Event{
		{Kind: translate.EventStart, ID: "up", Model: "up-model"},
		{Kind: translate.EventReasoningDelta, Text: "think"},
		{Kind: translate.EventReasoningDelta, Text: "ing"},
		{Kind: translate.EventTextDelta, Text: "Hel"},
		{Kind: translate.EventTextDelta, Text: "lo"},
		{Kind: translate.EventRefusalDelta, Text: "no"},
		{Kind: translate.EventToolCallStart, Index: 3, CallID: "call_a", Name: "a"},
		{Kind: translate.EventToolCallStart, Index: 4, CallID: "call_b", Name: "b"},
		{Kind: translate.EventToolCallArgsDelta, Index: 3, Text: `{"x":`},
		{Kind: translate.EventToolCallArgsDelta, Index: 4, Text: `{}`},
		{Kind: translate.EventToolCallArgsDelta, Index: 3, Text: `1}`},
		{Kind: translate.EventToolCallEnd, Index: 4},
		{Kind: translate.EventUsage, Usage: translate.Usage{PromptTokens: 3, CompletionTokens: 5, CachedTokens: 1, ReasoningTokens: 2}},
		{Kind: translate.EventFinish, FinishReason: translate.FinishLength},
	}
	var out []byte
	for i := range evs {
		out = enc.Encode(out, &evs[i])
	}
	out = enc.Finish(out, 2)
	checkStream(t, out)
	var types []string
	for _, f := range frames(t, out) {
		types = append(types, f.typ)
		if err := eventSchema.validate(f.data); err != nil {
			t.Errorf("%s does not satisfy the schema: %v\n%s", f.typ, err, f.data)
		}
	}
	want := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.reasoning_summary_part.added",
		"response.reasoning_summary_text.delta", "response.reasoning_summary_text.delta",
		"response.reasoning_summary_text.done", "response.reasoning_summary_part.done", "response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done",
		"response.content_part.added", "response.refusal.delta",
		"response.refusal.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.output_item.added",
		"response.function_call_arguments.delta", "response.function_call_arguments.delta", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done",
		"response.function_call_arguments.done", "response.output_item.done",
		"response.incomplete"}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Errorf("event sequence (-want +got):\n%s", diff)
	}
	resp := enc.AppendResponse(nil)
	if err := spectest.Validate(responseSchema, resp); err != nil {
		t.Errorf("Response does not satisfy the schema: %v\n%s", err, resp)
	}
	var got struct {
		Status     string `json:"status"`
		Incomplete struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
		Output []struct {
			Type      string `json:"type"`
			Arguments string `json:"arguments"`
			CallID    string `json:"call_id"`
			Summary   []struct {
				Text string `json:"text"`
			} `json:"summary"`
			Content []struct {
				Type    string `json:"type"`
				Text    string `json:"text"`
				Refusal string `json:"refusal"`
			} `json:"content"`
		} `json:"output"`
		Usage struct {
			Input, Output, Total int
		} `json:"usage"`
		MaxOutput int `json:"max_output_tokens"`
	}
	if err := json.Unmarshal(resp, &got); err != nil {
		t.Fatal(err)
	}
	summary := fmt.Sprintf("%s/%s %d items: %s %q | %s %s %q %q | %s %s %s | %s %s %s | max %d",
		got.Status, got.Incomplete.Reason, len(got.Output),
		got.Output[0].Type, got.Output[0].Summary[0].Text,
		got.Output[1].Type, got.Output[1].Content[0].Type, got.Output[1].Content[0].Text, got.Output[1].Content[1].Refusal,
		got.Output[2].Type, got.Output[2].CallID, got.Output[2].Arguments,
		got.Output[3].Type, got.Output[3].CallID, got.Output[3].Arguments, got.MaxOutput)
	want1 := `incomplete/max_output_tokens 4 items: reasoning "thinking" | message output_text "Hello" "no" | function_call call_a {"x":1} | function_call call_b {} | max 5`
	if summary != want1 {
		t.Errorf("response:\n got %s\nwant %s", summary, want1)
	}
}

// TestEncoder_ErrorAfterStart: a stream that fails after it started ends with one error
// event whose sequence number follows the last one.
func TestEncoder_ErrorAfterStart(t *testing.T) {
	eventSchema, _ := schemas(t)
	req := mustParse(t, `{"model":"m","input":"hi","stream":true}`)
	enc := NewEncoder(req, EncoderOptions{ID: "resp_x", Model: "m", Created: 1, Stream: true})
	out := enc.Encode(nil, &translate.Event{Kind: translate.EventTextDelta, Text: "par"})
	out = enc.AppendError(out, "the upstream of backend b ended the stream mid-event", "api_error", "")
	checkStream(t, out)
	fs := frames(t, out)
	last := fs[len(fs)-1]
	if err := eventSchema.validate(last.data); err != nil {
		t.Errorf("error event does not satisfy the schema: %v\n%s", err, last.data)
	}
	if enc.Status() != StatusFailed {
		t.Errorf("status %s, want failed", enc.Status())
	}
}

// BenchmarkEncodeTextDelta is the per upstream event cost of the Responses encoder on the
// commonest event, a text delta.
func BenchmarkEncodeTextDelta(b *testing.B) {
	req := mustParse(b, `{"model":"m","input":"hi","stream":true}`)
	enc := NewEncoder(req, EncoderOptions{ID: "resp_x", Model: "m", Created: 1, Stream: true})
	ev := translate.Event{Kind: translate.EventTextDelta, Text: " token"}
	buf := enc.Encode(nil, &ev)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf = enc.Encode(buf[:0], &ev)
		if i%4096 == 4095 { // bound the accumulated text, as a long answer would
			enc.items[enc.open].parts[0].text = enc.items[enc.open].parts[0].text[:0]
		}
	}
}

// BenchmarkReplayRecording is the whole-stream cost per upstream event: a recorded
// Anthropic stream decoded and encoded as Responses events (the request parsed once).
func BenchmarkReplayRecording(b *testing.B) {
	stream := readFixture(b, "anthropic/stream/parallel-tool-use.mirascope.sse")
	events := bytes.Count(stream, []byte("\n\n"))
	req := mustParse(b, `{"model":"client-model","input":"hi","stream":true}`)
	p := anthropic.New()
	var out []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		enc := NewEncoder(req, EncoderOptions{ID: "resp_test", Model: "client-model", Created: 1, Stream: true})
		dec := p.NewStreamDecoder(&translate.Options{Stream: true})
		emit := func(ev *translate.Event) error {
			out = enc.Encode(out[:0], ev)
			return nil
		}
		var ps sse.Parser
		if err := ps.Feed(stream, func(typ, data []byte) error { return dec.Event(typ, data, emit) }); err != nil {
			b.Fatal(err)
		}
		if err := dec.Close(emit); err != nil {
			b.Fatal(err)
		}
		out = enc.Finish(out[:0], 2)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/event")
}

// FuzzEncoder drives the encoder with arbitrary event sequences (each input byte picks an
// event) and checks the stream invariants: whatever the upstream decoded, the client gets
// a well-formed Responses stream.
func FuzzEncoder(f *testing.F) {
	f.Add([]byte{0, 1, 1, 2, 3, 4, 5, 6, 7})
	f.Add([]byte{4, 4, 5, 5, 6, 6, 2, 3, 0})
	f.Add([]byte{6, 5, 2, 1, 4, 8, 9})
	f.Add([]byte{1, 1, 10, 14, 11, 4, 5, 6, 8})
	req := mustParse(f, `{"model":"m","input":"hi","stream":true}`)
	// With reasoning.encrypted_content included, reasoning blocks become items of their own.
	withEncrypted := mustParse(f, `{"model":"m","input":"hi","stream":true,"include":["reasoning.encrypted_content"]}`)
	f.Fuzz(func(t *testing.T, script []byte) {
		r := req
		if len(script)%2 == 1 {
			r = withEncrypted
		}
		enc := NewEncoder(r, EncoderOptions{ID: "resp_f", Model: "m", Created: 1, Stream: true})
		var out []byte
		for i, b := range script {
			var ev translate.Event
			text := string(rune('a' + i%26))
			switch b % 12 {
			case 0:
				ev = translate.Event{Kind: translate.EventStart}
			case 1:
				ev = translate.Event{Kind: translate.EventReasoningDelta, Text: text}
			case 2:
				ev = translate.Event{Kind: translate.EventTextDelta, Text: text}
			case 3:
				ev = translate.Event{Kind: translate.EventRefusalDelta, Text: text}
			case 4:
				ev = translate.Event{Kind: translate.EventToolCallStart, Index: int(b/10) % 3, CallID: translate.CarryID("c"+text, []byte(text)), Name: "f"}
			case 5:
				ev = translate.Event{Kind: translate.EventToolCallArgsDelta, Index: int(b/10) % 3, Text: "{" + text}
			case 6:
				ev = translate.Event{Kind: translate.EventToolCallEnd, Index: int(b/10) % 3}
			case 7:
				ev = translate.Event{Kind: translate.EventUsage, Usage: translate.Usage{PromptTokens: 1, CompletionTokens: i}}
			case 8:
				ev = translate.Event{Kind: translate.EventFinish, FinishReason: []string{"stop", "length", "tool_calls", "content_filter"}[int(b/10)%4]}
			case 9:
				ev = translate.Event{Kind: translate.EventTextDelta, Text: text, Choice: 1}
			case 10:
				ev = translate.Event{Kind: translate.EventReasoningBlock, Block: &translate.ThinkingBlock{Dialect: "anthropic", Type: "thinking", Thinking: text, Signature: "s"}}
			case 11:
				ev = translate.Event{Kind: translate.EventReasoningBlock, Block: &translate.ThinkingBlock{Dialect: "gemini", Type: "thought_signature", CallID: "c" + text, Data: text}}
			}
			out = enc.Encode(out, &ev)
		}
		out = enc.Finish(out, 2)
		checkStream(t, out)
		if !json.Valid(enc.AppendResponse(nil)) {
			t.Fatalf("Response is not JSON")
		}
	})
}
