package converse

import (
	"bytes"
	"encoding/base64"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"golang.org/x/tools/txtar"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/goldentest"
)

// events decodes event-stream frames into (type, payload) pairs with the SDK's Decoder.
func events(tb testing.TB, frames []byte) (types, payloads [][]byte) {
	r := bytes.NewReader(frames)
	dec := eventstream.NewDecoder()
	for r.Len() > 0 {
		msg, err := dec.Decode(r, nil)
		if err != nil {
			tb.Fatal(err)
		}
		if v, ok := msg.Headers.Get(":event-type").(eventstream.StringValue); ok {
			types, payloads = append(types, []byte(v)), append(payloads, msg.Payload)
		}
	}
	return types, payloads
}

// FuzzStream: whatever event types and payloads arrive, the ConverseStream decoder emits
// events the chunk encoder can take or fails with an UpstreamError, never panics. Seeded
// with the recorded streams' events.
func FuzzStream(f *testing.F) {
	for _, frames := range goldentest.EventStreamSeeds(f) {
		types, payloads := events(f, frames)
		for i := range types {
			f.Add(string(types[i]), payloads[i], i%3 == 0)
		}
	}
	f.Fuzz(func(t *testing.T, typ string, data []byte, close bool) {
		d := &stream{}
		emit := func(ev *translate.Event) error {
			if ev.Kind == translate.EventToolCallArgsDelta && ev.Index < 0 {
				t.Fatalf("args delta for call %d", ev.Index)
			}
			return nil
		}
		for _, ty := range []string{"messageStart", typ, "contentBlockDelta", typ} {
			if err := d.Event([]byte(ty), data, emit); err != nil {
				var ue *translate.UpstreamError
				if !errors.As(err, &ue) {
					t.Fatalf("error %T %v is not an UpstreamError", err, err)
				}
				if errors.Is(err, translate.ErrMalformedEvent) {
					continue // one unreadable event: the stream goes on
				}
				return
			}
		}
		if close {
			_ = d.Close(emit)
		}
	})
}

// FuzzInvokeStream: the chunk unwrapper hands its inner decoder only what base64-decodes,
// bounded, never panics; nor does ChunkReader.Read. Seeded with the chunk payloads of
// the recorded InvokeModelWithResponseStream answers (translate/anthropic/testdata/bedrock).
func FuzzInvokeStream(f *testing.F) {
	recorded, _ := filepath.Glob(filepath.Join("..", "anthropic", "testdata", "bedrock", "stream-*.txtar"))
	if len(recorded) == 0 {
		f.Fatal("no recorded InvokeModelWithResponseStream answers")
	}
	for _, path := range recorded {
		ar, err := txtar.ParseFile(path)
		if err != nil {
			f.Fatal(err)
		}
		frames, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(goldentest.Section(f, ar, "upstream.eventstream.b64"))))
		if err != nil {
			f.Fatal(err)
		}
		_, payloads := events(f, frames)
		for _, p := range payloads {
			f.Add(p)
		}
	}
	f.Add([]byte(`{"bytes":"eyJ0eXBlIjoibWVzc2FnZV9zdG9wIn0=","p":"abcdefgh"}`))
	f.Add([]byte(`{"bytes":"!!"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := InvokeStream(&stream{})
		_ = d.Event([]byte("chunk"), data, func(*translate.Event) error { return nil })
		var r ChunkReader // the passthrough's reading, which also names the event
		if ev, evType, err := r.Read([]byte("chunk"), data); err == nil && len(evType) > len(ev) {
			t.Fatalf("type %q longer than its event %q", evType, ev)
		}
	})
}

// TestStream_UnreadableEvent: an event whose JSON is cut short, in a recorded stream
// (stream-text-nova.pydantic-ai.txtar), is one malformed event (translate.ErrMalformedEvent)
// that leaves the decoder as it was: the events after it decode to the rest of the
// answer, as if it had not come. An event that parses but is not what its type says still
// ends the stream.
func TestStream_UnreadableEvent(t *testing.T) {
	ar, err := txtar.ParseFile(filepath.Join("testdata", "stream-text-nova.pydantic-ai.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	var b64 []byte
	for _, f := range ar.Files {
		if f.Name == "upstream.eventstream.b64" {
			b64 = f.Data
		}
	}
	raw, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(string(b64), "\n", ""))
	if err != nil {
		t.Fatal(err)
	}
	types, payloads := events(t, raw)
	decode := func(skip int, cut []byte) (text string, errs []error) {
		d := &stream{}
		emit := func(ev *translate.Event) error {
			if ev.Kind == translate.EventTextDelta {
				text += ev.Text
			}
			return nil
		}
		for i := range types {
			data := payloads[i]
			if i == skip {
				data = cut
			}
			if err := d.Event(types[i], data, emit); err != nil {
				errs = append(errs, err)
			}
		}
		return text, errs
	}
	whole, errs := decode(-1, nil)
	if len(errs) != 0 || whole == "" {
		t.Fatalf("the recording decodes to %q, %v", whole, errs)
	}
	for _, tt := range []struct {
		name string
		at   int    // which event
		data string // its payload instead
		// lost is the text missing from the answer; fatal, that the stream ends there.
		lost  string
		fatal bool
	}{
		{"a text delta cut short", 1, `{"contentBlockIndex":0,"delta":{"text":"Th`, "The", false},
		{"messageStart cut short", 0, `{"p":"abc`, "", false},
		{"contentBlockStop not JSON", len(types) - 3, `contentBlockStop`, "", false},
		{"a delta that is not an object", 1, `{"contentBlockIndex":0,"delta":"The"}`, "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			text, errs := decode(tt.at, []byte(tt.data))
			if len(errs) == 0 {
				t.Fatalf("no error for %s", tt.data)
			}
			if errors.Is(errs[0], translate.ErrMalformedEvent) == tt.fatal {
				t.Fatalf("error %v; want fatal %v", errs[0], tt.fatal)
			}
			if tt.fatal {
				return
			}
			if len(errs) != 1 || text != strings.Replace(whole, tt.lost, "", 1) {
				t.Errorf("after the skipped event: %q, errors %v; want %q", text, errs, strings.Replace(whole, tt.lost, "", 1))
			}
		})
	}
}

// TestChunkReader: a chunk's bytes are the model's event, returned with its type; a chunk
// without base64 bytes is one malformed event, another event type an error.
func TestChunkReader(t *testing.T) {
	chunk := func(ev string) string {
		return `{"bytes":"` + base64.StdEncoding.EncodeToString([]byte(ev)) + `","p":"abcdefgh"}`
	}
	for _, tt := range []struct {
		name, typ, data string
		ev, evType      string
		malformed       bool
	}{
		{"an event", "chunk", chunk(`{"type":"message_stop"}`), `{"type":"message_stop"}`, "message_stop", false},
		{"an escaped type", "chunk", chunk(`{"index":0,"type":"ping\u0021"}`), `{"index":0,"type":"ping\u0021"}`, "ping!", false},
		{"no type", "chunk", chunk(`{"index":0}`), `{"index":0}`, "", false},
		{"not a chunk", "metadata", chunk(`{}`), "", "", false},
		{"no bytes", "chunk", `{"p":"x"}`, "", "", true},
		{"not base64", "chunk", `{"bytes":"!!"}`, "", "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var r ChunkReader
			ev, evType, err := r.Read([]byte(tt.typ), []byte(tt.data))
			if tt.typ != "chunk" {
				if err == nil || errors.Is(err, translate.ErrMalformedEvent) {
					t.Errorf("error %v, want one that ends the stream", err)
				}
				return
			}
			if tt.malformed {
				if !errors.Is(err, translate.ErrMalformedEvent) {
					t.Errorf("error %v, want a malformed event", err)
				}
				return
			}
			if err != nil || string(ev) != tt.ev || string(evType) != tt.evType {
				t.Errorf("Read = %s, %q, %v; want %s, %q", ev, evType, err, tt.ev, tt.evType)
			}
		})
	}
}

// BenchmarkStreamEvent is the ConverseStream decoder's cost per event, over the recorded
// reasoning-then-text stream (the frames already decoded: see upstream's
// BenchmarkPumpEventStream for the framing).
func BenchmarkStreamEvent(b *testing.B) {
	frames := goldentest.EncodeEvents(b, goldentest.Transcript(b, "stream-reasoning.vercel", "upstream.eventstream.txt"))
	types, payloads := events(b, frames)
	emit := func(*translate.Event) error { return nil }
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		d := stream{}
		for i := range types {
			if err := d.Event(types[i], payloads[i], emit); err != nil {
				b.Fatal(err)
			}
		}
		if err := d.Close(emit); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(types)), "ns/event")
}

// BenchmarkInvokeStreamChunk is the cost of unwrapping one InvokeModelWithResponseStream
// chunk (JSON, base64) before the model's own decoder reads it.
func BenchmarkInvokeStreamChunk(b *testing.B) {
	payload := []byte(`{"bytes":"` + base64.StdEncoding.EncodeToString([]byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+strings.Repeat("word ", 12)+`"}}`)) + `","p":"abcdefghijklmnopqrstuvwxyz"}`)
	d := InvokeStream(nop{})
	b.ReportAllocs()
	for b.Loop() {
		if err := d.Event([]byte("chunk"), payload, nil); err != nil {
			b.Fatal(err)
		}
	}
}

type nop struct{}

func (nop) Event(_, _ []byte, _ translate.Emit) error { return nil }
func (nop) Close(translate.Emit) error                { return nil }
