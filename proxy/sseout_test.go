package proxy

import (
	"bufio"
	"bytes"
	"strings"
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
		t.Run(tt.name, func(t *testing.T) {
			newEnc := func() *openaichat.ChunkEncoder {
				return openaichat.NewChunkEncoder("chatcmpl-1", "gpt", 42, false)
			}
			var want []byte
			ref := newEnc()
			for _, ev := range tt.events {
				want = ref.Encode(want, ev)
			}
			var got bytes.Buffer
			w := bufio.NewWriterSize(&got, streamBufferSize)
			o := &sseOut{c: &requestRun{committed: true}, w: w, enc: newEnc(), cancel: func() {}}
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
		})
	}
}

// TestSSEOut_NoAllocations: once a stream's largest chunk has been seen, no chunk costs an
// allocation, small or large, however full the writer is when it comes.
func TestSSEOut_NoAllocations(t *testing.T) {
	var sink bytes.Buffer
	sink.Grow(1 << 20)
	w := bufio.NewWriterSize(&sink, streamBufferSize)
	o := &sseOut{c: &requestRun{committed: true}, w: w, cancel: func() {},
		enc: openaichat.NewChunkEncoder("chatcmpl-1", "gpt", 42, false)}
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
	round() // the first large chunk grows o.buf
	if n := testing.AllocsPerRun(50, round); n != 0 {
		t.Errorf("%v allocations a round of chunks, want 0", n)
	}
}
