package goldentest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/internal/splittest"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/upstream"
)

// AWS event streams (Bedrock's ConverseStream and InvokeModelWithResponseStream) in the
// golden runner: a recording is either the frames themselves, base64
// (upstream.eventstream.b64), or one event a line as vercel/ai records them,
// {"<:event-type>": <payload>} (upstream.eventstream.txt), which EncodeEvents turns into
// frames with the AWS SDK's eventstream Encoder. Either way the frames are read by the
// gateway's pump (upstream.PumpEventStream), split into two reads at every byte offset
// and byte by byte.

// EncodeEvents returns the event-stream frames of a vercel-style event list: each line
// one object whose one member names the event type and holds its payload.
func EncodeEvents(t testing.TB, lines []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	enc := eventstream.NewEncoder()
	for _, line := range bytes.Split(lines, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var ev map[string]json.RawMessage
		if err := json.Unmarshal(line, &ev); err != nil || len(ev) != 1 {
			t.Fatalf("an event line is not one {type: payload} object: %s", line)
		}
		for typ, payload := range ev {
			msg := eventstream.Message{Payload: payload}
			msg.Headers.Set(":event-type", eventstream.StringValue(typ))
			msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
			msg.Headers.Set(":message-type", eventstream.StringValue("event"))
			if err := enc.Encode(&out, msg); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out.Bytes()
}

// chunkReader returns one chunk a Read, as a connection may deliver a stream.
type chunkReader struct{ chunks [][]byte }

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.chunks) > 0 && len(r.chunks[0]) == 0 {
		r.chunks = r.chunks[1:]
	}
	if len(r.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.chunks[0])
	r.chunks[0] = r.chunks[0][n:]
	return n, nil
}

// remaining is the number of bytes not read yet.
func (r *chunkReader) remaining() int {
	n := 0
	for _, c := range r.chunks {
		n += len(c)
	}
	return n
}

// EventStreamChunks pumps event-stream frames delivered in chunks through the gateway's
// own reader (upstream.PumpEventStream, which decodes them with the AWS SDK's Decoder)
// into a fresh decoder, and returns the OpenAI SSE the gateway would send (include_usage
// on). An exception frame is the error p.DecodeError makes of it, with the exception's
// status, and ends the output with the in-band error frame, as for a frame cut short.
func EventStreamChunks(t testing.TB, p translate.Provider, newDecoder func() translate.StreamDecoder, chunks [][]byte) []byte {
	t.Helper()
	return eventStreamChunks(p, newDecoder, chunks, false)
}

// eventStreamChunks is EventStreamChunks; poison overwrites each payload once the
// decoder's call returns (see splittest.Poison).
func eventStreamChunks(p translate.Provider, newDecoder func() translate.StreamDecoder, chunks [][]byte, poison bool) []byte {
	dec := newDecoder()
	o := newOutput()
	r := &chunkReader{chunks: append([][]byte(nil), chunks...)}
	err := upstream.PumpEventStream(context.Background(), r, "aws", p,
		func(typ, data []byte) error {
			err := dec.Event(typ, data, o.emit)
			if poison {
				for i := range data {
					data[i] = 0xFF
				}
			}
			return err
		}, nil,
		func() error { return dec.Close(o.emit) })
	if err != nil && o.upErr == nil {
		if ue := upstream.AsError(err); ue != nil {
			o.upErr = ue
		}
	}
	return o.end(err)
}

// frame is what the gateway reads of one event-stream frame.
type frame struct {
	messageType, eventType, exceptionType string
	payload                               []byte
}

// readFrames decodes event-stream frames from r with the AWS SDK's Decoder, as the
// gateway's pump reads them, and hands each to fn. It returns fn's error, the Decoder's,
// or nil at the end of the frames.
func readFrames(r *chunkReader, fn func(frame) error) error {
	sdk := eventstream.NewDecoder()
	for {
		msg, err := sdk.Decode(r, nil)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		header := func(name string) string {
			if v, ok := msg.Headers.Get(name).(eventstream.StringValue); ok {
				return string(v)
			}
			return ""
		}
		if err := fn(frame{header(":message-type"), header(":event-type"), header(":exception-type"), msg.Payload}); err != nil {
			return err
		}
	}
}

// errEnoughFrames ends a split's read once the frames its split can change are read.
var errEnoughFrames = errors.New("the frames a split can change are read")

// checkFrameSplits asserts that, split into two reads at each of offsets, frames are read
// as the same frames (headers and payload), with the same error, as in one read: the
// framing half of "decodes the same however it is split", as splittest.CheckEventSplits
// is for SSE.
//
// The SDK's Decoder keeps nothing from one frame to the next and reads a frame with
// io.ReadFull and io.LimitReader, never past its end; chunkReader ends a read only at
// the end of a chunk or of p. So a split changes the reads of the frame it falls in (or,
// on a boundary, of the frame it ends and the frame after), and every other frame is
// read from the same bytes in the same reads as in one read. Each split is therefore read
// from the start of the frame holding its byte before it: that frame and the next are
// compared, and when the recording ends (or fails) within them, the end or the error
// must be the one read gave. A split costs two frames instead of the recording: under
// -race the whole-recording reads were a fifth to a third of translate/anthropic's and
// translate/converse's test CPU (#54).
func checkFrameSplits(t *testing.T, frames []byte, offsets []int) {
	t.Helper()
	var want []frame
	var ends []int // ends[k]: the offset just past frame k in one read
	whole := &chunkReader{chunks: [][]byte{frames}}
	wantErr := readFrames(whole, func(f frame) error {
		f.payload = bytes.Clone(f.payload)
		want = append(want, f)
		ends = append(ends, len(frames)-whole.remaining())
		return nil
	})
	check := func(i int) error {
		k, _ := slices.BinarySearch(ends, i) // the frame holding byte i-1, or len(want) past the last
		start := 0
		if k > 0 {
			start = ends[k-1]
		}
		n := k
		err := readFrames(&chunkReader{chunks: [][]byte{frames[start:i], frames[i:]}}, func(f frame) error {
			if n >= len(want) || f.messageType != want[n].messageType || f.eventType != want[n].eventType ||
				f.exceptionType != want[n].exceptionType || !bytes.Equal(f.payload, want[n].payload) {
				return fmt.Errorf("frame %d differs: %+v", n, f)
			}
			n++
			if n == k+2 {
				return errEnoughFrames
			}
			return nil
		})
		if errors.Is(err, errEnoughFrames) {
			return nil
		}
		if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
			return fmt.Errorf("error %v, want %v", err, wantErr)
		}
		if n != len(want) {
			return fmt.Errorf("%d frames, want %d", n, len(want))
		}
		return nil
	}
	if i, err := splittest.FirstFailure(offsets, check); err != nil {
		t.Fatalf("split at byte %d: the frames read differ: %v", i, err)
	}
}

// eventStream runs one event-stream recording: want.sse, the chunk contract, every split
// (checked as splittest says: the frames read at every offset, the decoder once with each
// payload poisoned after its call, SampleOffsets decoded in full) and byte by byte.
func (d Dialect) eventStream(t *testing.T, path string, frames []byte) {
	t.Helper()
	got := EventStreamChunks(t, d.Provider, d.NewDecoder, [][]byte{frames})
	Golden(t, path, "want.sse", got)
	CheckChunks(t, got)
	if poisoned := eventStreamChunks(d.Provider, d.NewDecoder, [][]byte{frames}, true); !bytes.Equal(poisoned, got) {
		t.Fatalf("with each payload overwritten after its call, the output differs: the decoder keeps a view of a payload (-want +got):\n%s", cmp.Diff(string(got), string(poisoned)))
	}
	checkFrameSplits(t, frames, frameSplitOffsets(frames))
	for _, i := range splittest.SampleOffsets(len(frames), 8) {
		if split := EventStreamChunks(t, d.Provider, d.NewDecoder, [][]byte{frames[:i], frames[i:]}); !bytes.Equal(split, got) {
			t.Fatalf("split at byte %d differs (-want +got):\n%s", i, cmp.Diff(string(got), string(split)))
		}
	}
	var chunks [][]byte
	for i := range frames {
		chunks = append(chunks, frames[i:i+1])
	}
	if split := EventStreamChunks(t, d.Provider, d.NewDecoder, chunks); !bytes.Equal(split, got) {
		t.Fatalf("byte by byte differs (-want +got):\n%s", cmp.Diff(string(got), string(split)))
	}
}

// frameSplitOffsets are the offsets a recording of event-stream frames is split at:
// every offset of a recording up to 4 KiB; of one up to 16 KiB every offset of its first
// 512 and last 256 bytes, every offset within 3 bytes of a frame boundary or of the end
// of a frame's prelude (12 bytes in), and every 31st elsewhere, which keeps the check
// linear-ish under -race. A longer one (a recorded thinking answer is 72 KB) is split
// where longFrameSplitOffsets says, so that the whole check decodes about 16 MiB.
func frameSplitOffsets(frames []byte) []int {
	n := len(frames)
	var out []int
	if n <= 4096 {
		for i := 1; i < n; i++ {
			out = append(out, i)
		}
		return out
	}
	if n > 16<<10 {
		return longFrameSplitOffsets(frames)
	}
	near := make([]bool, n+1)
	for at := 0; at+4 <= n; {
		for d := -3; d <= 3; d++ {
			for _, j := range []int{at + d, at + 12 + d} {
				if j > 0 && j < n {
					near[j] = true
				}
			}
		}
		size := int(frames[at])<<24 | int(frames[at+1])<<16 | int(frames[at+2])<<8 | int(frames[at+3])
		if size <= 0 {
			break
		}
		at += size
	}
	for i := 1; i < n; i++ {
		if i < 512 || i > n-256 || near[i] || i%31 == 0 {
			out = append(out, i)
		}
	}
	return out
}

// longFrameSplitOffsets are the split offsets of a recording over 16 KiB: every offset of
// its first 128 and last 64 bytes, every offset within 3 bytes of the boundaries and
// prelude ends of its first 4 and last 4 frames, and about 16 MiB / len(frames) offsets
// evenly spaced over the rest (each split decodes the whole recording).
func longFrameSplitOffsets(frames []byte) []int {
	n := len(frames)
	var starts []int
	for at := 0; at+4 <= n; {
		starts = append(starts, at)
		size := int(frames[at])<<24 | int(frames[at+1])<<16 | int(frames[at+2])<<8 | int(frames[at+3])
		if size <= 0 {
			break
		}
		at += size
	}
	pick := make([]bool, n)
	for i := 1; i < n && i < 128; i++ {
		pick[i] = true
	}
	for i := max(1, n-64); i < n; i++ {
		pick[i] = true
	}
	for k, at := range starts {
		if k >= 4 && k < len(starts)-4 {
			continue
		}
		for d := -3; d <= 3; d++ {
			for _, j := range []int{at + d, at + 12 + d} {
				if j > 0 && j < n {
					pick[j] = true
				}
			}
		}
	}
	even := max(1, (16<<20)/n)
	for k := 1; k <= even; k++ {
		if j := k * n / (even + 1); j > 0 && j < n {
			pick[j] = true
		}
	}
	var out []int
	for i, ok := range pick {
		if ok {
			out = append(out, i)
		}
	}
	return out
}

// decodeBase64 reads an upstream.eventstream.b64 section.
func decodeBase64(t testing.TB, b []byte) []byte {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(b)))
	if err != nil {
		t.Fatalf("upstream.eventstream.b64: %v", err)
	}
	return raw
}

// EventStreamSeeds returns the frames of every event-stream recording in testdata: fuzz
// seeds.
func EventStreamSeeds(t testing.TB) [][]byte {
	var out [][]byte
	for _, sec := range []string{"upstream.eventstream.txt", "upstream.eventstream.b64"} {
		for _, b := range Seeds(sec, false, 0) {
			if sec == "upstream.eventstream.txt" {
				out = append(out, EncodeEvents(t, b))
			} else {
				out = append(out, decodeBase64(t, b))
			}
		}
	}
	return out
}
