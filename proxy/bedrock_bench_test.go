package proxy

import (
	"bytes"
	"context"
	goruntime "runtime"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/converse"
	"github.com/agate-gateway/agate/upstream"
)

// The cost of Bedrock's InvokeModelWithResponseStream per frame, over a recorded Claude
// stream sent as chunk frames (invokeFrames): the event-stream framing (upstream's pump
// over the AWS SDK's eventstream.Decoder), the chunk's JSON and base64, and Claude's own
// events, read by the translated path's decoder (bedrockProvider) or by the Messages
// passthrough's (converse.ChunkReader, then the anthropic decoder). allocs/frame counts
// every allocation of a stream (the pump's reader included) over its frames.
//
// Of BenchmarkBedrockInvokeStreamFraming's 311 allocations a stream of 8 frames, 38 a
// frame are eventstream.Decoder's (aws-sdk-go-v2/aws/protocol/eventstream v1.7.27, the
// latest), for a frame of 3 string headers; the other 7 are the stream's (bufio, the
// Decoder, the closures). By line: decode.go:65 crc32.New 1; :66 io.TeeReader 1; :74 and
// :82 io.LimitReader 2; :156 bytes.NewBuffer 1; :188 decodeUint32's [4]byte 4 (prelude
// length, headers length, prelude CRC, message CRC); :172 decodeUint8's [1]byte 7 (4
// name lengths, the last at the headers' end, 3 value types); header.go:89 the 256-byte
// headerName 4; :102 the name string 3; :29 Headers.Set's append 3; :144 the StringValue
// boxed in Value 3; header_value.go:145 the value bytes 3, :156 their string 3;
// decode.go:178 decodeUint16's [2]byte 3. The memory profile (-memprofilerate 1) shows
// fewer of the 1-4 byte ones: tiny allocations sharing a block are not sampled.

func benchInvokeFrames(b *testing.B) (frames []byte, n int) {
	ar, err := txtar.ParseFile("../translate/anthropic/testdata/stream-text-basic.txtar")
	if err != nil {
		b.Fatal(err)
	}
	frames = invokeFrames(b, section(ar, "upstream.sse"))
	err = upstream.PumpEventStream(context.Background(), bytes.NewReader(frames), "aws", newBedrockProvider(),
		func(_, _ []byte) error { n++; return nil }, nil, func() error { return nil })
	if err != nil || n == 0 {
		b.Fatalf("%d frames: %v", n, err)
	}
	return frames, n
}

// benchFrames runs one stream a loop through pump and reports ns and allocations per frame.
func benchFrames(b *testing.B, frames []byte, n int, pump func(r *bytes.Reader) error) {
	r := bytes.NewReader(frames)
	var before, after goruntime.MemStats
	b.ReportAllocs()
	b.ResetTimer()
	goruntime.ReadMemStats(&before)
	for b.Loop() {
		r.Reset(frames)
		if err := pump(r); err != nil {
			b.Fatal(err)
		}
	}
	goruntime.ReadMemStats(&after)
	frameCount := float64(b.N * n)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/frameCount, "ns/frame")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/frameCount, "allocs/frame")
}

// BenchmarkBedrockInvokeStream is the translated path: pump, chunk, Claude's decoder.
func BenchmarkBedrockInvokeStream(b *testing.B) {
	frames, n := benchInvokeFrames(b)
	p := newBedrockProvider()
	opts := &translate.Options{UpstreamModel: "us.anthropic.claude-sonnet-4-20250514-v1:0"}
	emit := func(*translate.Event) error { return nil }
	benchFrames(b, frames, n, func(r *bytes.Reader) error {
		dec := p.NewStreamDecoder(opts)
		return upstream.PumpEventStream(context.Background(), r, "aws", p, func(typ, data []byte) error { return dec.Event(typ, data, emit) },
			nil, func() error { return dec.Close(emit) })
	})
}

// BenchmarkBedrockInvokeStreamFraming is the framing alone: the pump over the SDK's
// Decoder, each frame handed on untouched.
func BenchmarkBedrockInvokeStreamFraming(b *testing.B) {
	frames, n := benchInvokeFrames(b)
	p := newBedrockProvider()
	benchFrames(b, frames, n, func(r *bytes.Reader) error {
		return upstream.PumpEventStream(context.Background(), r, "aws", p, func(_, _ []byte) error { return nil }, nil, func() error { return nil })
	})
}

// BenchmarkBedrockPassthroughStream is the Messages passthrough's reading: pump, chunk
// (ChunkReader, which also names the event), Claude's decoder for the usage.
func BenchmarkBedrockPassthroughStream(b *testing.B) {
	frames, n := benchInvokeFrames(b)
	p := newBedrockProvider()
	emit := func(*translate.Event) error { return nil }
	var chunks converse.ChunkReader
	benchFrames(b, frames, n, func(r *bytes.Reader) error {
		dec := p.claude.NewStreamDecoder(nil)
		return upstream.PumpEventStream(context.Background(), r, "aws", p, func(typ, data []byte) error {
			ev, evType, err := chunks.Read(typ, data)
			if err != nil {
				return err
			}
			return dec.Event(evType, ev, emit)
		}, nil, func() error { return dec.Close(emit) })
	})
}
