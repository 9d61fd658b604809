package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/openaichat"
)

// TestSSEOut_ChunkMemory: whatever the stream writer holds when a chunk comes, the
// client gets every chunk as the encoder makes it, in order: chunks smaller than the free
// space, one larger than the whole buffer, chunks arriving while the buffer is nearly full,
// small ones after a large one, a tool call's.
func TestSSEOut_ChunkMemory(t *testing.T) {
	text := func(n int) *translate.Event {
		return &translate.Event{Kind: translate.EventTextDelta, Text: strings.Repeat("x", n)}
	}
	tests := []struct {
		name   string
		events []*translate.Event
		// syncAfter flushes the writer after the event of that index (an upstream read's end).
		syncAfter map[int]bool
	}{
		{name: "small chunks, one read", events: []*translate.Event{text(10), text(20), text(30)}},
		{name: "small chunks, a read each", events: []*translate.Event{text(10), text(20), text(30)},
			syncAfter: map[int]bool{0: true, 1: true, 2: true}},
		{name: "a chunk larger than the buffer", events: []*translate.Event{text(10), text(3 * streamBufferSize), text(10)}},
		{name: "a chunk larger than the free space", events: []*translate.Event{text(streamBufferSize/2 + 100), text(streamBufferSize / 2), text(5)}},
		{name: "the buffer filling up", events: []*translate.Event{text(900), text(900), text(900), text(900), text(900), text(900), text(900)}},
		{name: "small after large, a read each", events: []*translate.Event{text(3000), text(6000), text(10), text(10)},
			syncAfter: map[int]bool{0: true, 1: true, 2: true, 3: true}},
		{name: "a tool call", events: []*translate.Event{
			{Kind: translate.EventToolCallStart, Index: 0, CallID: "call_1", Name: "get_weather"},
			{Kind: translate.EventToolCallArgsDelta, Index: 0, Text: `{"city":"` + strings.Repeat("P", 2500) + `"}`},
			{Kind: translate.EventToolCallEnd, Index: 0}}},
	}
	for _, tt := range tests {
		for _, pooled := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/pooled=%v", tt.name, pooled), func(t *testing.T) {
				newEnc := func() *openaichat.ChunkEncoder {
					return openaichat.NewChunkEncoder("chatcmpl-1", "gpt", 42, false)
				}
				var want []byte
				ref := newEnc()
				for _, ev := range tt.events {
					want = ref.Encode(want, ev)
				}
				var got countingWriter
				o := &sseOut{c: &requestRun{committed: true}, w: &streamSink{w: &got}, enc: newEnc(), cancel: func() {}}
				if pooled {
					o.pool = new(sync.Pool)
				}
				for i, ev := range tt.events {
					if err := o.Event(ev); err != nil {
						t.Fatalf("event %d: %v", i, err)
					}
					if tt.syncAfter[i] {
						if err := o.sync(); err != nil {
							t.Fatalf("sync after event %d: %v", i, err)
						}
					}
				}
				if err := o.sync(); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), want) {
					t.Errorf("the client got\n%.300q\nwant\n%.300q", got.Bytes(), want)
				}
				// No write is empty.
				for i, n := range got.writes {
					if n == 0 {
						t.Errorf("write %d is empty", i)
					}
				}
			})
		}
	}
}

// TestSSEOut_SharedPool: streams whose writers share one pool, their events and reads'
// ends interleaved, each get exactly their own events: a buffer one wrote and gave back
// is the next one's, and nothing of the first is left in it.
func TestSSEOut_SharedPool(t *testing.T) {
	pool := new(sync.Pool)
	const streams = 3
	var outs [streams]*sseOut
	var got [streams]countingWriter
	var want [streams][]byte
	var refs [streams]*openaichat.ChunkEncoder
	for i := range outs {
		id := fmt.Sprintf("chatcmpl-%d", i)
		refs[i] = openaichat.NewChunkEncoder(id, "gpt", 42, false)
		outs[i] = &sseOut{c: &requestRun{committed: true}, w: &streamSink{w: &got[i]}, cancel: func() {},
			enc: openaichat.NewChunkEncoder(id, "gpt", 42, false), pool: pool}
	}
	for step := range 60 {
		i := step % streams
		ev := &translate.Event{Kind: translate.EventTextDelta, Text: strings.Repeat(string(rune('a'+i)), 1+step*37%5000)}
		want[i] = refs[i].Encode(want[i], ev)
		if err := outs[i].Event(ev); err != nil {
			t.Fatal(err)
		}
		if step%4 != 3 { // a read's end, but not after every event
			if err := outs[i].sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range outs {
		if err := outs[i].sync(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[i].Bytes(), want[i]) {
			t.Errorf("stream %d got\n%.300q\nwant\n%.300q", i, got[i].Bytes(), want[i])
		}
		if outs[i].buf != nil && cap(outs[i].buf) <= streamOutKeep {
			t.Errorf("stream %d holds a buffer of %d bytes after its write", i, cap(outs[i].buf))
		}
	}
}

// countingWriter is a client connection that notes the size of each write.
type countingWriter struct {
	bytes.Buffer
	writes []int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes = append(w.writes, len(p))
	return w.Buffer.Write(p)
}

// TestSSEOut_WritesAtReadEnd: events are held until the read's end (sync) unless they
// reach streamBufferSize, and a write takes every whole event held.
func TestSSEOut_WritesAtReadEnd(t *testing.T) {
	var got countingWriter
	o := &sseOut{c: &requestRun{committed: true}, w: &streamSink{w: &got}, cancel: func() {},
		enc: openaichat.NewChunkEncoder("chatcmpl-1", "gpt", 42, false)}
	small := &translate.Event{Kind: translate.EventTextDelta, Text: "hello"}
	for range 3 {
		if err := o.Event(small); err != nil {
			t.Fatal(err)
		}
	}
	if len(got.writes) != 0 {
		t.Fatalf("%d writes before the read's end", len(got.writes))
	}
	if err := o.sync(); err != nil {
		t.Fatal(err)
	}
	if len(got.writes) != 1 {
		t.Fatalf("%d writes for one read, want 1", len(got.writes))
	}
	large := &translate.Event{Kind: translate.EventTextDelta, Text: strings.Repeat("x", streamBufferSize)}
	if err := o.Event(large); err != nil {
		t.Fatal(err)
	}
	if len(got.writes) != 2 || got.writes[1] < streamBufferSize {
		t.Fatalf("writes %v: a buffer's worth is written at once", got.writes)
	}
	if len(o.buf) != 0 {
		t.Fatalf("%d bytes held after a write", len(o.buf))
	}
}

// failingStream is an encoder that appends part of an event and fails, as an encoder
// that meets a bad event midway may.
type failingStream struct{ translate.ClientStream }

func (failingStream) AppendEvent(dst []byte, _ *translate.Event) ([]byte, error) {
	return append(dst, "data: {\"half"...), errors.New("bad event")
}

// TestSSEOut_FailedEventLeavesNothing: the bytes of an event whose encoder failed never
// reach the client; the events before it do.
func TestSSEOut_FailedEventLeavesNothing(t *testing.T) {
	var got countingWriter
	good := openaichat.NewChunkEncoder("chatcmpl-1", "gpt", 42, false)
	o := &sseOut{c: &requestRun{committed: true}, w: &streamSink{w: &got}, cancel: func() {}, enc: good}
	ev := &translate.Event{Kind: translate.EventTextDelta, Text: "hello"}
	if err := o.Event(ev); err != nil {
		t.Fatal(err)
	}
	held := string(o.buf)
	o.enc = failingStream{good}
	if err := o.Event(ev); err == nil {
		t.Fatal("the failing encoder's error was lost")
	}
	if err := o.sync(); err != nil {
		t.Fatal(err)
	}
	if got.String() != held {
		t.Fatalf("the client got %q, want only the whole event %q", got.String(), held)
	}
}

// TestSSEOut_NoAllocations: once a stream's largest chunk has been seen, no chunk costs an
// allocation, small or large, however full the writer is when it comes.
func TestSSEOut_NoAllocations(t *testing.T) {
	for _, pooled := range []bool{false, true} {
		t.Run(fmt.Sprintf("pooled=%v", pooled), func(t *testing.T) {
			if pooled && raceEnabled {
				t.Skip("under the race detector sync.Pool drops some of what it is given: the pooled count is checked without -race")
			}
			testSSEOutNoAllocations(t, pooled)
		})
	}
}

func testSSEOutNoAllocations(t *testing.T, pooled bool) {
	var sink bytes.Buffer
	sink.Grow(1 << 20)
	o := &sseOut{c: &requestRun{committed: true}, w: &streamSink{w: &sink}, cancel: func() {},
		enc: openaichat.NewChunkEncoder("chatcmpl-1", "gpt", 42, false)}
	if pooled {
		o.pool = new(sync.Pool)
	}
	large := &translate.Event{Kind: translate.EventTextDelta, Text: strings.Repeat("x", 6000)}
	small := &translate.Event{Kind: translate.EventTextDelta, Text: "hello"}
	round := func() {
		for _, ev := range []*translate.Event{small, large, small, small, large} {
			if err := o.Event(ev); err != nil {
				t.Fatal(err)
			}
		}
		if err := o.sync(); err != nil {
			t.Fatal(err)
		}
		sink.Reset()
	}
	round()            // the first large chunk grows o.buf
	small1 := func() { // a read of one small event: with the pool, the buffer goes back
		if err := o.Event(small); err != nil {
			t.Fatal(err)
		}
		if err := o.sync(); err != nil {
			t.Fatal(err)
		}
		sink.Reset()
	}
	o.buf, o.bp = nil, nil // a writer whose buffer did not grow for a large chunk
	small1()
	if pooled && o.buf != nil {
		t.Fatalf("a buffer of %d bytes held after the read's write, want it back in the pool", cap(o.buf))
	}
	if n := testing.AllocsPerRun(50, small1); n != 0 {
		t.Errorf("%v allocations a read of one small chunk, want 0", n)
	}
	if n := testing.AllocsPerRun(50, round); n != 0 {
		t.Errorf("%v allocations a round of chunks, want 0", n)
	}
}

// FuzzSSEOutPooled: writers that share a pool, fed any interleaving of events of any
// size and reads' ends, each write to their client what a writer with its own buffer (the
// general path, pool nil) fed the same events writes, byte for byte.
func FuzzSSEOutPooled(f *testing.F) {
	f.Add([]byte{0x00, 0x81, 0x02, 0x83})
	f.Add([]byte{0xff, 0x7f, 0x40, 0xc1, 0x05, 0x06})
	f.Add(bytes.Repeat([]byte{0x9a, 0x3b, 0x11}, 40))
	f.Fuzz(func(t *testing.T, steps []byte) {
		const streams = 3
		pool := new(sync.Pool)
		var pooled, own [streams]*sseOut
		var gotPooled, gotOwn [streams]countingWriter
		for i := range streams {
			id := fmt.Sprintf("chatcmpl-%d", i)
			pooled[i] = &sseOut{c: &requestRun{committed: true}, w: &streamSink{w: &gotPooled[i]}, cancel: func() {},
				enc: openaichat.NewChunkEncoder(id, "gpt", 42, false), pool: pool}
			own[i] = &sseOut{c: &requestRun{committed: true}, w: &streamSink{w: &gotOwn[i]}, cancel: func() {},
				enc: openaichat.NewChunkEncoder(id, "gpt", 42, false)}
		}
		for k, b := range steps {
			i := int(b) % streams
			n := int(b>>2&0x1f) * (1 + k%7) * 23 // 0 to ~5,000 bytes of text
			ev := &translate.Event{Kind: translate.EventTextDelta, Text: strings.Repeat(string(rune('a'+k%26)), n)}
			for _, o := range []*sseOut{pooled[i], own[i]} {
				if err := o.Event(ev); err != nil {
					t.Fatal(err)
				}
				if b&0x80 != 0 {
					if err := o.sync(); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		for i := range streams {
			if err := pooled[i].sync(); err != nil {
				t.Fatal(err)
			}
			if err := own[i].sync(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(gotPooled[i].Bytes(), gotOwn[i].Bytes()) {
				t.Fatalf("stream %d: the pooled writer wrote\n%.300q\nthe general path\n%.300q", i, gotPooled[i].Bytes(), gotOwn[i].Bytes())
			}
			if !slices.Equal(gotPooled[i].writes, gotOwn[i].writes) {
				t.Fatalf("stream %d: writes %v pooled, %v the general path", i, gotPooled[i].writes, gotOwn[i].writes)
			}
		}
	})
}
