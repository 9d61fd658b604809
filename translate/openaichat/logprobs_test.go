package openaichat

import (
	"math"
	"strings"
	"testing"
	"unsafe"

	"github.com/agate-gateway/agate/translate"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
)

// chunkHead is the start of every chunk NewChunkEncoder(goldenID, goldenModel,
// goldenCreated, ...) writes.
const chunkHead = `data: {"id":"chatcmpl-golden","object":"chat.completion.chunk","created":1700000000,"model":"client-model","choices":[`

var (
	lpHello = []translate.TokenLogprob{{Token: "Hello", Logprob: -0.5, Top: []translate.TopLogprob{{Token: "Hello", Logprob: -0.5}, {Token: "Hi", Logprob: -1.25}}}}
	// lpHelloJSON is lpHello as a choice's logprobs object.
	lpHelloJSON = `{"content":[{"token":"Hello","logprob":-0.5,"bytes":[72,101,108,108,111],"top_logprobs":[{"token":"Hello","logprob":-0.5,"bytes":[72,101,108,108,111]},{"token":"Hi","logprob":-1.25,"bytes":[72,105]}]}],"refusal":null}`
)

func TestChunkEncoder_Logprobs(t *testing.T) {
	tests := []struct {
		name   string
		events []translate.Event
		want   []string // the chunks Encode writes, after chunkHead
	}{
		{
			name:   "OnTheContentChunk",
			events: []translate.Event{{Kind: translate.EventStart}, {Kind: translate.EventTextDelta, Text: "Hello", Logprobs: lpHello}},
			want: []string{
				`{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
				`{"index":0,"delta":{"content":"Hello"},"logprobs":` + lpHelloJSON + `,"finish_reason":null}]}`,
			},
		},
		{
			name:   "FirstChunkCarriesRole",
			events: []translate.Event{{Kind: translate.EventTextDelta, Text: "Hello", Logprobs: lpHello}},
			want:   []string{`{"index":0,"delta":{"role":"assistant","content":"Hello"},"logprobs":` + lpHelloJSON + `,"finish_reason":null}]}`},
		},
		{
			name:   "OwnChunkWithEmptyDelta",
			events: []translate.Event{{Kind: translate.EventStart}, {Kind: translate.EventLogprobs, Logprobs: lpHello}},
			want: []string{
				`{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
				`{"index":0,"delta":{},"logprobs":` + lpHelloJSON + `,"finish_reason":null}]}`,
			},
		},
		{
			name:   "OwnChunkFirstCarriesRole",
			events: []translate.Event{{Kind: translate.EventLogprobs, Logprobs: lpHello}},
			want:   []string{`{"index":0,"delta":{"role":"assistant"},"logprobs":` + lpHelloJSON + `,"finish_reason":null}]}`},
		},
		{
			name:   "EmptyTextWithLogprobs",
			events: []translate.Event{{Kind: translate.EventStart}, {Kind: translate.EventTextDelta, Logprobs: lpHello}},
			want: []string{
				`{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
				`{"index":0,"delta":{"content":""},"logprobs":` + lpHelloJSON + `,"finish_reason":null}]}`,
			},
		},
		{
			name: "EmptyLogprobsAreNone",
			events: []translate.Event{
				{Kind: translate.EventStart}, {Kind: translate.EventTextDelta, Text: "a", Logprobs: []translate.TokenLogprob{}},
				{Kind: translate.EventLogprobs}, {Kind: translate.EventLogprobs, Logprobs: []translate.TokenLogprob{}},
			},
			want: []string{
				`{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
				`{"index":0,"delta":{"content":"a"},"logprobs":null,"finish_reason":null}]}`,
			},
		},
		{
			name:   "OnlyContentCarriesThem",
			events: []translate.Event{{Kind: translate.EventStart}, {Kind: translate.EventReasoningDelta, Text: "hm", Logprobs: lpHello}, {Kind: translate.EventRefusalDelta, Text: "no", Logprobs: lpHello}},
			want: []string{
				`{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
				`{"index":0,"delta":{"reasoning_content":"hm"},"logprobs":null,"finish_reason":null}]}`,
				`{"index":0,"delta":{"refusal":"no"},"logprobs":null,"finish_reason":null}]}`,
			},
		},
		{
			name:   "SecondChoice",
			events: []translate.Event{{Kind: translate.EventStart}, {Kind: translate.EventTextDelta, Choice: 1, Text: "Hello", Logprobs: lpHello}},
			want: []string{
				`{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
				`{"index":1,"delta":{"role":"assistant","content":"Hello"},"logprobs":` + lpHelloJSON + `,"finish_reason":null}]}`,
			},
		},
		{
			name: "BytesEscapesAndNonFinite",
			events: []translate.Event{{Kind: translate.EventTextDelta, Text: "\"é", Logprobs: []translate.TokenLogprob{
				{Token: `"`, Logprob: math.Inf(-1)},
				{Token: "bytes:\\xc3", Logprob: -2e-7, Bytes: []byte{0xc3}, Top: []translate.TopLogprob{{Token: "bytes:\\xc3", Logprob: math.NaN(), Bytes: []byte{0xc3}}}},
				{Token: "", Logprob: 0, Bytes: []byte{0xa9}},
			}}},
			want: []string{`{"index":0,"delta":{"role":"assistant","content":"\"é"},"logprobs":{"content":[` +
				`{"token":"\"","logprob":-9999,"bytes":[34],"top_logprobs":[]},` +
				`{"token":"bytes:\\xc3","logprob":-2e-07,"bytes":[195],"top_logprobs":[{"token":"bytes:\\xc3","logprob":-9999,"bytes":[195]}]},` +
				`{"token":"","logprob":0,"bytes":[169],"top_logprobs":[]}` +
				`],"refusal":null},"finish_reason":null}]}`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			enc := NewChunkEncoder(goldenID, goldenModel, goldenCreated, true)
			var out []byte
			for i := range tt.events {
				out = enc.Encode(out, &tt.events[i])
			}
			var got []string
			for _, frame := range strings.Split(strings.TrimSuffix(string(out), "\n\n"), "\n\n") {
				if frame != "" {
					got = append(got, strings.TrimPrefix(frame, chunkHead))
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("chunks (-want +got):\n%s", diff)
			}
			for _, c := range got {
				if !gjson.Valid(strings.TrimPrefix(chunkHead, "data: ") + c) {
					t.Errorf("chunk is not JSON: %s", c)
				}
			}
			checkChunkInvariants(t, enc.Finish(out))
		})
	}
}

func TestAssembler_Logprobs(t *testing.T) {
	world := []translate.TokenLogprob{{Token: " world", Logprob: -1, Bytes: []byte(" world")}}
	tests := []struct {
		name   string
		events []translate.Event
		want   []string // choices[i].logprobs of the completion
	}{
		{
			name:   "NoneIsNull",
			events: []translate.Event{{Kind: translate.EventTextDelta, Text: "Hello"}},
			want:   []string{`null`},
		},
		{
			name: "CollectedInOrder",
			events: []translate.Event{
				{Kind: translate.EventTextDelta, Text: "Hello", Logprobs: lpHello},
				{Kind: translate.EventTextDelta, Text: " world"},
				{Kind: translate.EventLogprobs, Logprobs: world},
			},
			want: []string{`{"content":[` +
				`{"token":"Hello","logprob":-0.5,"bytes":[72,101,108,108,111],"top_logprobs":[{"token":"Hello","logprob":-0.5,"bytes":[72,101,108,108,111]},{"token":"Hi","logprob":-1.25,"bytes":[72,105]}]},` +
				`{"token":" world","logprob":-1,"bytes":[32,119,111,114,108,100],"top_logprobs":[]}],"refusal":null}`},
		},
		{
			name: "PerChoice",
			events: []translate.Event{
				{Kind: translate.EventTextDelta, Text: "a"},
				{Kind: translate.EventTextDelta, Choice: 1, Text: "Hello", Logprobs: lpHello},
			},
			want: []string{`null`, lpHelloJSON},
		},
		{
			name:   "ReasoningIgnored",
			events: []translate.Event{{Kind: translate.EventReasoningDelta, Text: "hm", Logprobs: lpHello}, {Kind: translate.EventTextDelta, Text: "a", Logprobs: []translate.TokenLogprob{}}},
			want:   []string{`null`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a Assembler
			for i := range tt.events {
				if err := a.Add(&tt.events[i]); err != nil {
					t.Fatal(err)
				}
			}
			a.Finish()
			body := a.AppendCompletion(nil, goldenID, goldenModel, goldenCreated)
			if !gjson.ValidBytes(body) {
				t.Fatalf("completion is not JSON: %s", body)
			}
			var got []string
			gjson.GetBytes(body, "choices").ForEach(func(_, c gjson.Result) bool {
				got = append(got, c.Get("logprobs").Raw)
				return true
			})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("choices[].logprobs (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAssembler_LogprobsCopyDecoderBuffers pins that the assembler copies logprobs, whose
// strings and slices may alias a decoder buffer that is reused after the callback.
func TestAssembler_LogprobsCopyDecoderBuffers(t *testing.T) {
	buf := []byte("Hello")
	tok := unsafe.String(&buf[0], len(buf))
	raw := []byte{1, 2}
	lp := []translate.TokenLogprob{{Token: tok, Logprob: -1, Bytes: raw, Top: []translate.TopLogprob{{Token: tok, Logprob: -1, Bytes: raw}}}}
	var a Assembler
	if err := a.Add(&translate.Event{Kind: translate.EventTextDelta, Text: tok, Logprobs: lp}); err != nil {
		t.Fatal(err)
	}
	copy(buf, "XXXXX")
	raw[0] = 9
	lp[0].Top[0].Logprob = 0
	want := []translate.TokenLogprob{{Token: "Hello", Logprob: -1, Bytes: []byte{1, 2}, Top: []translate.TopLogprob{{Token: "Hello", Logprob: -1, Bytes: []byte{1, 2}}}}}
	if diff := cmp.Diff(want, a.Choices[0].Logprobs); diff != "" {
		t.Errorf("kept logprobs changed with the decoder's buffer (-want +got):\n%s", diff)
	}
}
