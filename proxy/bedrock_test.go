package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"golang.org/x/tools/txtar"

	"github.com/agate-gateway/agate/internal/splittest"
	"github.com/agate-gateway/agate/internal/sse"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/openaichat"
	"github.com/agate-gateway/agate/upstream"
)

// section returns the named section of a txtar archive, nil if absent.
func section(ar *txtar.Archive, name string) []byte {
	for _, f := range ar.Files {
		if f.Name == name {
			return f.Data
		}
	}
	return nil
}

// pumpInvoke runs frames, delivered in chunks, through the event-stream pump and a
// bedrock backend's Claude stream decoder, and returns the OpenAI SSE a client gets, as
// the golden runner writes it (translate/internal/goldentest: its id, model and created).
func pumpInvoke(t *testing.T, p translate.Provider, opts *translate.Options, chunks [][]byte) []byte {
	return pumpInvokeWrapped(t, p, opts, chunks, nil)
}

// pumpInvokeWrapped is pumpInvoke with the pump's handler wrapped by wrap
// (splittest.Poison), if not nil.
func pumpInvokeWrapped(t *testing.T, p translate.Provider, opts *translate.Options, chunks [][]byte, wrap func(sse.Handler) sse.Handler) []byte {
	dec := p.NewStreamDecoder(opts)
	enc := openaichat.NewChunkEncoder("chatcmpl-golden", "client-model", 1700000000, true)
	var out []byte
	var upErr *translate.UpstreamError
	emit := func(ev *translate.Event) error {
		if ev.Kind == translate.EventError {
			upErr = ev.Err
			return ev.Err
		}
		out = enc.Encode(out, ev)
		return nil
	}
	var fn sse.Handler = func(typ, data []byte) error { return dec.Event(typ, data, emit) }
	if wrap != nil {
		fn = wrap(fn)
	}
	r := &chunked{chunks: append([][]byte(nil), chunks...)}
	err := upstream.PumpEventStream(context.Background(), r, "aws", p, fn, nil, func() error { return dec.Close(emit) })
	if err != nil {
		if upErr == nil {
			upErr = upstream.AsError(err)
		}
		if upErr == nil {
			t.Fatalf("not an upstream error: %v", err)
		}
		return openaichat.AppendErrorEvent(out, upErr.Message, upErr.Type, upErr.Param, upErr.Code)
	}
	return enc.Finish(out)
}

// pumpedEvent is one event the event-stream pump hands over: copies of its type and data.
type pumpedEvent struct{ typ, data string }

// pumpEvents runs frames, delivered in chunks, through the event-stream pump alone and
// returns the events it hands over and its error: what a decoder would be given.
func pumpEvents(p translate.Provider, chunks [][]byte) ([]pumpedEvent, error) {
	var evs []pumpedEvent
	r := &chunked{chunks: append([][]byte(nil), chunks...)}
	err := upstream.PumpEventStream(context.Background(), r, "aws", p, func(typ, data []byte) error {
		evs = append(evs, pumpedEvent{string(typ), string(data)})
		return nil
	}, nil, func() error { return nil })
	return evs, err
}

// chunked returns one chunk a Read.
type chunked struct{ chunks [][]byte }

func (r *chunked) Read(b []byte) (int, error) {
	for len(r.chunks) > 0 && len(r.chunks[0]) == 0 {
		r.chunks = r.chunks[1:]
	}
	if len(r.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(b, r.chunks[0])
	r.chunks[0] = r.chunks[0][n:]
	return n, nil
}

// invokeFrames wraps each data: payload of an Anthropic SSE stream as Bedrock's
// InvokeModelWithResponseStream sends it: a chunk event frame whose payload is
// {"bytes":"<base64 of the event JSON>"} (with the padding member p Bedrock adds).
func invokeFrames(t testing.TB, sse []byte) []byte {
	var out bytes.Buffer
	enc := eventstream.NewEncoder()
	sc := bufio.NewScanner(bytes.NewReader(sse))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		msg := eventstream.Message{Payload: []byte(`{"bytes":"` + base64.StdEncoding.EncodeToString([]byte(data)) + `","p":"abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"}`)}
		msg.Headers.Set(":event-type", eventstream.StringValue("chunk"))
		msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		msg.Headers.Set(":message-type", eventstream.StringValue("event"))
		if err := enc.Encode(&out, msg); err != nil {
			t.Fatal(err)
		}
	}
	return out.Bytes()
}

// frameSplitOffsets returns the offsets at which TestBedrockInvokeStreamGoldens splits
// an event stream (frames, each a prelude of total length, headers length and prelude
// CRC, then headers, payload and message CRC) into two reads: one of each place a split
// can fall for the pump (a bufio.Reader that peeks at a frame's 4-byte length, then
// AWS's decoder reading prelude, headers, payload and CRC through it) in the first two
// frames and the last: in and at the end of each field; every boundary between frames,
// where the pump's afterRead runs; and around the first two refills of the pump's
// 4 KiB read buffer (upstream's streamReadSize). Before, about 512 offsets spread
// evenly, each decoding the whole stream: 3.2 times the frames decoded (#54).
func frameSplitOffsets(frames []byte) []int {
	var starts []int
	for s := 0; s+12 <= len(frames); s += int(binary.BigEndian.Uint32(frames[s:])) {
		starts = append(starts, s)
		if binary.BigEndian.Uint32(frames[s:]) == 0 {
			break
		}
	}
	var offsets []int
	for k, s := range starts {
		offsets = append(offsets, s)
		if k > 1 && k < len(starts)-1 {
			continue
		}
		n, h := int(binary.BigEndian.Uint32(frames[s:])), int(binary.BigEndian.Uint32(frames[s+4:]))
		pay := s + 12 + h // the payload's first byte
		for _, i := range []int{s + 1, s + 2, s + 3, s + 4, s + 6, s + 8, s + 10, s + 11, s + 12, s + 13,
			s + 12 + h/2, pay - 1, pay, pay + 1, (pay + s + n - 4) / 2, s + n - 4, s + n - 2, s + n - 1} {
			offsets = append(offsets, i)
		}
	}
	for _, r := range []int{4 << 10, 8 << 10} {
		offsets = append(offsets, r-1, r, r+1)
	}
	offsets = slices.DeleteFunc(offsets, func(i int) bool { return i <= 0 || i >= len(frames) })
	slices.Sort(offsets)
	return slices.Compact(offsets)
}

// TestBedrockInvokeStreamGoldens: every recorded Anthropic stream of translate/anthropic,
// sent as Bedrock's InvokeModelWithResponseStream frames it, reaches the client exactly as
// it does from Anthropic's API (that recording's want.sse), split into two reads at each
// of frameSplitOffsets. The splits are checked as package splittest says: the events the
// pump hands over at every offset, the decoder once with each event poisoned after its
// call, and a few splits decoded in full.
func TestBedrockInvokeStreamGoldens(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	files, _ := filepath.Glob("../translate/anthropic/testdata/*.txtar")
	p := newBedrockProvider()
	opts := &translate.Options{UpstreamModel: "us.anthropic.claude-sonnet-4-20250514-v1:0", Stream: true}
	n := 0
	for _, path := range files {
		ar, err := txtar.ParseFile(path)
		if err != nil {
			t.Fatal(err)
		}
		sse := section(ar, "upstream.sse")
		if c := section(ar, "upstream.chunks.txt"); c != nil {
			// vercel's chunks: one data payload a line (goldentest.ReframeChunks)
			for line := range strings.SplitSeq(string(c), "\n") {
				if strings.TrimSpace(line) != "" {
					sse = append(append(append(sse, "data: "...), strings.TrimRight(line, "\r")...), "\n\n"...)
				}
			}
		}
		want := section(ar, "want.sse")
		if sse == nil || want == nil {
			continue
		}
		n++
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			frames := invokeFrames(t, sse)
			if got := pumpInvoke(t, p, opts, [][]byte{frames}); !bytes.Equal(got, want) {
				t.Fatalf("through InvokeModelWithResponseStream frames\n%s\nfrom Anthropic's API\n%s", got, want)
			}
			if got := pumpInvokeWrapped(t, p, opts, [][]byte{frames}, splittest.Poison); !bytes.Equal(got, want) {
				t.Fatalf("with each event's memory overwritten after its call\n%s\nwithout\n%s", got, want)
			}
			whole, wholeErr := pumpEvents(p, [][]byte{frames})
			offsets := frameSplitOffsets(frames)
			if i, err := splittest.FirstFailure(offsets, func(i int) error {
				evs, err := pumpEvents(p, [][]byte{frames[:i], frames[i:]})
				if !slices.Equal(evs, whole) || fmt.Sprint(err) != fmt.Sprint(wholeErr) {
					return fmt.Errorf("the pump handed over %d events (error %v), whole %d (error %v)", len(evs), err, len(whole), wholeErr)
				}
				return nil
			}); err != nil {
				t.Fatalf("split at byte %d differs: %v", i, err)
			}
			for _, i := range splittest.SampleOffsets(len(frames), 8) {
				if got := pumpInvoke(t, p, opts, [][]byte{frames[:i], frames[i:]}); !bytes.Equal(got, want) {
					t.Fatalf("split at byte %d differs", i)
				}
			}
		})
	}
	if n < 5 {
		t.Fatalf("only %d anthropic stream recordings found", n)
	}
}

// TestBedrockPaths: the model id picks the API; ids are one escaped path segment.
func TestBedrockPaths(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	p := newBedrockProvider()
	for _, c := range []struct {
		model  string
		stream bool
		want   string
	}{
		{"anthropic.claude-3-5-haiku-20241022-v1:0", false, "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/invoke"},
		{"us.anthropic.claude-sonnet-4-20250514-v1:0", true, "/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/invoke-with-response-stream"},
		{"arn:aws:bedrock:us-east-1:123456789012:inference-profile/global.anthropic.claude-opus-4-1-20250805-v1:0", false,
			"/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fglobal.anthropic.claude-opus-4-1-20250805-v1%3A0/invoke"},
		{"amazon.nova-pro-v1:0", false, "/model/amazon.nova-pro-v1%3A0/converse"},
		{"meta.llama3-70b-instruct-v1:0", true, "/model/meta.llama3-70b-instruct-v1%3A0/converse-stream"},
	} {
		if got := p.Path(c.model, c.stream); got != c.want {
			t.Errorf("Path(%q, %v) = %q, want %q", c.model, c.stream, got, c.want)
		}
	}
}

// TestBedrockContextExceeded: Bedrock's recorded refusals of a prompt over the context
// window (Claude and Nova, translate/converse/testdata) are context errors for the
// bedrock provider, so context_fallbacks apply; another 400 is not.
func TestBedrockContextExceeded(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	p := newBedrockProvider()
	for _, tt := range []struct {
		file string
		want bool
	}{
		{"error-400-input-too-long-claude.pydantic-ai.txtar", true},
		{"error-400-input-tokens-exceeded-nova.pydantic-ai.txtar", true},
	} {
		t.Run(tt.file, func(t *testing.T) {
			ar, err := txtar.ParseFile(filepath.Join("..", "translate", "converse", "testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			e := p.DecodeError(400, bytes.TrimSpace(section(ar, "upstream.json")))
			if got := translate.ContextExceeded(p, e); got != tt.want {
				t.Fatalf("ContextExceeded(%q) = %v, want %v", e.Message, got, tt.want)
			}
		})
	}
	other := p.DecodeError(400, []byte(`{"message":"Malformed input request: #: extraneous key [foo] is not permitted"}`))
	if translate.ContextExceeded(p, other) {
		t.Fatalf("ContextExceeded(%q) = true, want false", other.Message)
	}
}
