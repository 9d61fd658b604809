package responsesin

import (
	"bytes"
	"testing"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate/internal/recorded"
)

// benchDelta is a response.output_text.delta event as OpenAI sends it and the bench's mock
// repeats it (testdata/fixtures/responses/stream/text-basic.mirascope.sse's members).
const benchDelta = `{"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_0360bd45725b0a010068f966a601b081958e95c4085b086532","output_index":0,"content_index":0,"delta":" bicycle","logprobs":[],"obfuscation":"2WtQmJ0dTisGL"}`

// recordedEvents is the data of every event of the recorded Responses streams.
func recordedEvents(tb testing.TB) [][]byte {
	var out [][]byte
	for _, f := range recorded.Answers(tb, 5, "../../testdata/fixtures/responses/stream/*.sse") {
		for _, line := range bytes.Split(f, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				out = append(out, d)
			}
		}
	}
	return out
}

// membersRead is what the member loops read of data: readStreamEventMembers' StreamEvent,
// and the scanner's general reader's (RootMembers) output_index, content_index and decoded
// delta, as the continuation of a passthrough reads them.
func membersRead(data []byte) (FlatEvent, bool) {
	ev, ok := readStreamEventMembers(data)
	if !ok {
		return FlatEvent{}, false
	}
	sc := jsonx.NewScanner(string(data))
	var m [3]jsonx.Value
	if _, ok := sc.RootMembers([]string{"output_index", "content_index", "delta"}, m[:]); !ok {
		return FlatEvent{}, false
	}
	fe := FlatEvent{StreamEvent: ev, OutputIndex: -1, ContentIndex: -1}
	if m[0].Kind == jsonx.Number {
		fe.OutputIndex = m[0].Int()
	}
	if m[1].Kind == jsonx.Number {
		fe.ContentIndex = m[1].Int()
	}
	if m[2].Kind == jsonx.String {
		fe.Delta = m[2].Str
	}
	return fe, true
}

// TestReadFlatEvent: ReadFlatEvent takes the recorded text deltas and refuses what is not
// in its layout, and ReadStreamEvent reads every recorded event as the member loop does.
func TestReadFlatEvent(t *testing.T) {
	taken := 0
	for _, d := range recordedEvents(t) {
		ev, ok := ReadStreamEvent(d)
		want, wantOK := readStreamEventMembers(d)
		if ok != wantOK || ev != want {
			t.Fatalf("ReadStreamEvent(%s) = %+v, %v; the member loop's %+v, %v", d, ev, ok, want, wantOK)
		}
		if _, ok := ReadFlatEvent(d); ok {
			taken++
		} else if bytes.Contains(d, []byte(`"type":"response.output_text.delta"`)) && !bytes.Contains(d, []byte(`\`)) {
			t.Errorf("ReadFlatEvent refused a plain text delta: %s", d)
		}
	}
	if taken < 100 {
		t.Errorf("ReadFlatEvent took %d recorded events, want the text deltas (>= 100)", taken)
	}
	for _, tt := range []struct {
		in    string
		taken bool
		want  FlatEvent
	}{
		{in: benchDelta, taken: true, want: FlatEvent{StreamEvent: StreamEvent{Type: "response.output_text.delta", Seq: 5, HasSeq: true, SeqAt: 55, SeqLen: 1, DeltaBytes: 8},
			OutputIndex: 0, ContentIndex: 0, Delta: " bicycle"}},
		{in: `{}`, taken: true, want: FlatEvent{OutputIndex: -1, ContentIndex: -1}},
		{in: `{"type":"x","type":"y","delta":null,"delta":"ab","sequence_number":12}`, taken: true,
			want: FlatEvent{StreamEvent: StreamEvent{Type: "x", Seq: 12, HasSeq: true, SeqAt: 67, SeqLen: 2}, OutputIndex: -1, ContentIndex: -1}},
		{in: `{"sequence_number":true,"a":false,"output_index":"1","content_index":3,"content_index":4}`, taken: true,
			want: FlatEvent{StreamEvent: StreamEvent{SeqAt: 19, SeqLen: 4}, OutputIndex: -1, ContentIndex: 3}},
		{in: `{"delta":"a","type":"t","output_index":7}`, taken: true,
			want: FlatEvent{StreamEvent: StreamEvent{Type: "t", DeltaBytes: 1}, OutputIndex: 7, ContentIndex: -1, Delta: "a"}},
		{in: `{"type":"x","delta":"a\"b"}`},                        // an escape: the member loop's
		{in: `{"type":"x","delta":"é"}`},                           // beyond ASCII
		{in: `{"type":"x","sequence_number":-1}`},                  // a sign
		{in: `{"type":"x","sequence_number":1.5}`},                 // a fraction
		{in: `{"type":"x","sequence_number":01}`},                  // a leading zero: not JSON
		{in: `{"type":"x","item":{"id":"a"}}`},                     // nested
		{in: `{"type":"x","logprobs":[1]}`},                        // a non-empty array
		{in: `{"type":1}`},                                         // a type that is not a string
		{in: `{"type":"x"} `},                                      // whitespace after
		{in: `{"type": "x"}`},                                      // whitespace inside
		{in: `{"type":"x",}`},                                      // a trailing comma
		{in: `{"type":"x"`},                                        // cut
		{in: `{"type":"x","delta":nul}`},                           // a bad literal
		{in: `{"type":"x"}}`},                                      // a second brace
		{in: `{"type":"x","sequence_number":1234567890123456789}`}, // 19 digits
		{in: `{"type":"x","":1}`, taken: true, want: FlatEvent{StreamEvent: StreamEvent{Type: "x"}, OutputIndex: -1, ContentIndex: -1}},
		{in: `{"type":"x",":1}`},  // a name cut
		{in: `{"type":"x","a":}`}, // no value
		{in: `{"type":"x","a"`},   // no colon
	} {
		got, taken := ReadFlatEvent([]byte(tt.in))
		if taken != tt.taken || got != tt.want {
			t.Errorf("ReadFlatEvent(%s) = %+v, %v; want %+v, %v", tt.in, got, taken, tt.want, tt.taken)
		}
		if taken {
			if want, ok := membersRead([]byte(tt.in)); !ok || want != got {
				t.Errorf("ReadFlatEvent(%s) = %+v; the member loops' %+v, %v", tt.in, got, want, ok)
			}
		}
	}
}

// FuzzFlatEventMatchesMembers: whatever ReadFlatEvent takes is a JSON object of which the
// member loops (membersRead) read exactly what ReadFlatEvent read. Seeded with every
// recorded Responses stream event.
func FuzzFlatEventMatchesMembers(f *testing.F) {
	for _, d := range recordedEvents(f) {
		f.Add(string(d))
	}
	f.Add(benchDelta)
	f.Add(`{"type":"x","type":"y","delta":null,"delta":"ab","sequence_number":12}`)
	f.Fuzz(func(t *testing.T, s string) {
		ev, taken := ReadFlatEvent([]byte(s))
		if !taken {
			return
		}
		want, ok := membersRead([]byte(s))
		if !ok || ev != want {
			t.Fatalf("ReadFlatEvent(%q) = %+v; the member loops' %+v, %v", s, ev, want, ok)
		}
	})
}

// BenchmarkReadStreamEvent is the passthrough's read of one text delta event.
func BenchmarkReadStreamEvent(b *testing.B) {
	for _, bc := range []struct{ name, data string }{
		{"text-delta", benchDelta},
		{"escaped-delta", `{"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_0360bd45725b0a010068f966a601b081958e95c4085b086532","output_index":0,"content_index":0,"delta":"\n\n","logprobs":[],"obfuscation":"2WtQmJ0dTisGL"}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			data := []byte(bc.data)
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := ReadStreamEvent(data); !ok {
					b.Fatal("refused")
				}
			}
		})
	}
}
