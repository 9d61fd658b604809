package splittest

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/internal/sse"
)

// stream is a small SSE stream with the framings a split can fall in: an event line, two
// data lines joined, CRLF and CR line ends, a comment.
const stream = "event: a\ndata: one\n\n: comment\ndata: two\ndata: lines\r\n\r\nevent: b\rdata: three\r\r"

// TestPoison_CatchesAKeptView: a handler that keeps the data of an event and reads it at
// the next one sees it overwritten under Poison, and intact without.
func TestPoison_CatchesAKeptView(t *testing.T) {
	keeper := func() (sse.Handler, *[]string) {
		var kept []byte
		var seen []string
		return func(_, data []byte) error {
			if kept != nil {
				seen = append(seen, string(kept))
			}
			kept = data
			return nil
		}, &seen
	}
	for _, tt := range []struct {
		name   string
		poison bool
		want   []string
	}{
		{"plain", false, []string{"one", "two\nlines"}},
		// Poison reuses its copy, as the parser does its buffers: the second view, read
		// during the third event, holds that event's data over the poisoned bytes.
		{"poisoned", true, []string{"\xff\xff\xff", "three\xff\xff\xff\xff"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fn, seen := keeper()
			if tt.poison {
				fn = Poison(fn)
			}
			var p sse.Parser
			if err := p.Feed([]byte(stream), fn); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(*seen, tt.want) {
				t.Errorf("the kept views read %q, want %q", *seen, tt.want)
			}
		})
	}
}

// TestPoison_PassesTheEvent: the wrapped handler gets the event's type and data, and its
// error is returned.
func TestPoison_PassesTheEvent(t *testing.T) {
	var got []string
	fn := Poison(func(typ, data []byte) error {
		got = append(got, string(typ)+"="+string(data))
		if bytes.Equal(data, []byte("three")) {
			return errStop
		}
		return nil
	})
	var p sse.Parser
	if err := p.Feed([]byte(stream), fn); err != errStop {
		t.Fatalf("error %v, want the handler's", err)
	}
	if want := []string{"a=one", "=two\nlines", "b=three"}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}

var errStop = stopError("stop")

type stopError string

func (e stopError) Error() string { return string(e) }

// TestCheckEventSplits_EveryOffset: the parser hands over the same events at every offset
// of a stream with every framing; FirstFailure reports the lowest failing offset.
func TestCheckEventSplits_EveryOffset(t *testing.T) {
	var offsets []int
	for i := 1; i < len(stream); i++ {
		offsets = append(offsets, i)
	}
	CheckEventSplits(t, []byte(stream), offsets)
	at, err := FirstFailure(offsets, func(i int) error {
		if i%5 == 3 {
			return stopError(strings.Repeat("x", i))
		}
		return nil
	})
	if at != 3 || err == nil {
		t.Errorf("FirstFailure = %d, %v; want 3 and its error", at, err)
	}
}

// TestSampleOffsets: evenly spread inside the stream, no repeats, none at its ends.
func TestSampleOffsets(t *testing.T) {
	for _, tt := range []struct {
		size, n int
		want    []int
	}{
		{size: 90, n: 8, want: []int{10, 20, 30, 40, 50, 60, 70, 80}},
		{size: 3, n: 8, want: []int{1, 2}},
		{size: 1, n: 8, want: nil},
	} {
		if got := SampleOffsets(tt.size, tt.n); !slices.Equal(got, tt.want) {
			t.Errorf("SampleOffsets(%d, %d) = %v, want %v", tt.size, tt.n, got, tt.want)
		}
	}
}

// TestWindow: the events of stream end after their blank lines (after the LF of a CRLF);
// a split is checked from the end of the event before it to the end of the event after
// the one it falls in (or to the stream's end).
func TestWindow(t *testing.T) {
	want, err := parsedEvents([]byte(stream))
	if err != nil || len(want) != 3 {
		t.Fatalf("%d events, %v", len(want), err)
	}
	ends, ok := eventEnds([]byte(stream), want)
	first := strings.Index(stream, "\n\n") + 2      // after "data: one\n\n"
	second := strings.Index(stream, "\r\n\r\n") + 4 // after "data: lines\r\n\r\n"
	if wantEnds := []int{0, first, second, len(stream)}; !ok || !slices.Equal(ends, wantEnds) {
		t.Fatalf("eventEnds = %v, %v; want %v", ends, ok, wantEnds)
	}
	if _, ok := eventEnds([]byte(stream), want[:2]); ok {
		t.Error("eventEnds accepted events other than the stream's")
	}
	for _, tt := range []struct {
		i, a, b  int
		from, to int // want[from:to]
	}{
		{i: 1, a: 0, b: second, from: 0, to: 2},
		{i: first - 1, a: 0, b: second, from: 0, to: 2},
		{i: first, a: 0, b: len(stream), from: 0, to: 3}, // on an end: the events either side and the next
		{i: first + 1, a: first, b: len(stream), from: 1, to: 3},
		{i: second, a: first, b: len(stream), from: 1, to: 3},
		{i: len(stream) - 1, a: second, b: len(stream), from: 2, to: 3},
	} {
		a, b, evs := window(ends, tt.i, len(stream), want)
		if a != tt.a || b != tt.b || !sameEvents(evs, want[tt.from:tt.to]) {
			t.Errorf("window at %d = %d:%d, %d events; want %d:%d, events %d:%d", tt.i, a, b, len(evs), tt.a, tt.b, tt.from, tt.to)
		}
	}
}
