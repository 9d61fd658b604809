// Package splittest checks that an SSE stream decodes the same however its bytes are
// split into reads, without decoding it again at every offset. It is for tests only (it
// imports testing); it imports internal/sse and nothing else of the module.
//
// A stream that arrives in two reads reaches a decoder only through the SSE parser: the
// decoder is handed the parser's events, one call each, and nothing else. So "the stream
// decodes to the same output however its bytes are split" is the conjunction of two
// checks, each much cheaper than a decode per offset (quadratic in the stream's length):
//
//   - CheckEventSplits: split at each offset, the parser hands over the very events it
//     hands over for the whole stream: the same types and data, byte for byte, in the
//     same order, and the same error (or none);
//   - Poison: decoded with every event given in memory that is overwritten as soon as its
//     call returns, the stream still gives the whole stream's output, so the decoder
//     keeps no view of an event past its call (sse.Handler's contract). Such a view is
//     the only other way a split could reach the output: for an event assembled from two
//     reads the parser hands over its own buffer, which it reuses.
//
// A decoder is a function of the events it is handed (the translate packages are pure:
// no clock or randomness), so from the two the decode of every split follows. The
// callers still decode byte by byte (every event assembled by the parser) and a few
// real splits (SampleOffsets) in full, as a check of that argument.
//
// CheckEventSplits runs the parser alone, a small part of the cost of a decode.
package splittest

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"testing"

	"github.com/agate-gateway/agate/internal/sse"
)

// Poison wraps fn so that it is handed a copy of each event's type and data, which is
// overwritten with 0xFF bytes once fn returns: a decoder (or what it emits to) that keeps
// a view of an event past the call then writes something else than it should.
func Poison(fn sse.Handler) sse.Handler {
	var typ, data []byte
	return func(t, d []byte) error {
		typ = append(typ[:0], t...)
		data = append(data[:0], d...)
		err := fn(typ[:len(t):len(t)], data[:len(d):len(d)])
		fill(typ)
		fill(data)
		return err
	}
}

func fill(b []byte) {
	for i := range b {
		b[i] = 0xFF
	}
}

// event is one event the parser handed over: copies of its type and data.
type event struct{ typ, data []byte }

// parsedEvents returns the events a fresh parser hands over for stream in one read, and
// the parser's error.
func parsedEvents(stream []byte) ([]event, error) {
	var evs []event
	var p sse.Parser
	err := p.Feed(stream, func(typ, data []byte) error {
		evs = append(evs, event{bytes.Clone(typ), bytes.Clone(data)})
		return nil
	})
	return evs, err
}

// errEventDiffers stops a split's parse at the first event that differs from the whole's.
type errEventDiffers struct {
	n         int
	typ, data []byte
}

func (e *errEventDiffers) Error() string {
	return fmt.Sprintf("event %d is %q %q", e.n, e.typ, e.data)
}

// CheckEventSplits asserts that, split into two reads at each of offsets, stream is
// handed over by a fresh sse.Parser as the same events (type and data byte for byte, in
// order) and the same error as in one read. It is the parser half of "decodes the same
// however it is split" (see Poison for the decoder half); the offsets are checked in
// parallel, each with its own parser.
//
// A split is checked on a window of the stream, not the whole of it (which made the
// check quadratic: most of the translate packages' test CPU under -race, #54). A blank
// line leaves the parser as it was before the stream's first byte, but for the BOM check
// (it dispatches or drops the event, and a line end leaves no bytes buffered), so a split
// can change only the events up to the first blank line after it: the parser is fed the
// stream from the end of the last event dispatched before the split (its start for the
// first) to the end of the event after the one the split falls in (to the stream's end
// after the last), split at the offset, and must hand over that window's share of the
// whole stream's events and no error. Where the events end is read off the stream fed
// byte by byte, which must give the whole stream's events; the window in one read must
// give its share too. When any of these does not hold (or the whole stream is an error)
// the split is checked on the whole stream as before, and a failure is always that
// check's: the window only saves the work of a split that passes.
func CheckEventSplits(t testing.TB, stream []byte, offsets []int) {
	t.Helper()
	want, wantErr := parsedEvents(stream)
	whole := func(i int) error { return splitDiffers(stream, i, 0, len(stream), want, wantErr) }
	check := whole
	if ends, ok := eventEnds(stream, want); ok && wantErr == nil {
		check = func(i int) error {
			a, b, evs := window(ends, i, len(stream), want)
			if oneRead, err := parsedEvents(stream[a:b]); err != nil || !sameEvents(oneRead, evs) ||
				splitDiffers(stream, i, a, b, evs, nil) != nil {
				return whole(i)
			}
			return nil
		}
	}
	if i, err := FirstFailure(offsets, check); err != nil {
		t.Fatalf("split at byte %d: the parser hands over different events: %v", i, err)
	}
}

// splitDiffers feeds a fresh parser stream[a:i] and then stream[i:b] and says how what
// it hands over differs from want and wantErr (nil when it does not).
func splitDiffers(stream []byte, i, a, b int, want []event, wantErr error) error {
	var p sse.Parser
	n := 0
	fn := func(typ, data []byte) error {
		if n >= len(want) || !bytes.Equal(typ, want[n].typ) || !bytes.Equal(data, want[n].data) {
			return &errEventDiffers{n: n, typ: bytes.Clone(typ), data: bytes.Clone(data)}
		}
		n++
		return nil
	}
	err := p.Feed(stream[a:i], fn)
	if err == nil {
		err = p.Feed(stream[i:b], fn)
	}
	var differs *errEventDiffers
	switch {
	case errors.As(err, &differs):
		if differs.n < len(want) {
			return fmt.Errorf("%v, want %q %q", err, want[differs.n].typ, want[differs.n].data)
		}
		return fmt.Errorf("%v, beyond the %d events of the whole stream", err, len(want))
	case !errors.Is(err, wantErr) && (err == nil || wantErr == nil || err.Error() != wantErr.Error()):
		return fmt.Errorf("error %v, want %v", err, wantErr)
	case n != len(want):
		return fmt.Errorf("%d events, want %d", n, len(want))
	}
	return nil
}

// eventEnds feeds a fresh parser stream one byte at a time and returns, for each event
// it hands over, the offset after the blank line that dispatched it (after its LF when
// it ends in CRLF), preceded by 0: event k lies in ends[k]:ends[k+1]. ok is false when
// those events are not want or the parser fails.
func eventEnds(stream []byte, want []event) (ends []int, ok bool) {
	ends = []int{0}
	var p sse.Parser
	n := 0
	for j := range stream {
		err := p.Feed(stream[j:j+1], func(typ, data []byte) error {
			if n >= len(want) || !bytes.Equal(typ, want[n].typ) || !bytes.Equal(data, want[n].data) {
				return errors.New("differs")
			}
			n++
			end := j + 1
			if stream[j] == '\r' && end < len(stream) && stream[end] == '\n' {
				end++
			}
			ends = append(ends, end)
			return nil
		})
		if err != nil {
			return nil, false
		}
	}
	return ends, n == len(want)
}

// window returns the bytes a:b of a stream of size bytes a split at i is checked on, and
// the events of want they hold: from the end of the last event dispatched before i to the
// end of the event after the one i falls in (see CheckEventSplits).
func window(ends []int, i, size int, want []event) (a, b int, evs []event) {
	p := sort.SearchInts(ends, i) - 1 // the last end before i (ends[0] is 0, and i > 0)
	q := sort.SearchInts(ends, i+1)   // the first end after i
	if q+1 < len(ends) {
		return ends[p], ends[q+1], want[p : q+1]
	}
	return ends[p], size, want[p:]
}

// sameEvents reports whether a and b are the same events.
func sameEvents(a, b []event) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !bytes.Equal(a[k].typ, b[k].typ) || !bytes.Equal(a[k].data, b[k].data) {
			return false
		}
	}
	return true
}

// FirstFailure runs check on every offset, spread over GOMAXPROCS goroutines, and returns
// the lowest failing offset and its error (-1 and nil when none fails). check must be
// safe to run concurrently with itself.
func FirstFailure(offsets []int, check func(int) error) (int, error) {
	workers := min(runtime.GOMAXPROCS(0), len(offsets))
	var (
		mu       sync.Mutex
		badAt    = -1
		badErr   error
		wg       sync.WaitGroup
		received = make(chan int)
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range received {
				if err := check(i); err != nil {
					mu.Lock()
					if badAt < 0 || i < badAt {
						badAt, badErr = i, err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, i := range offsets {
		received <- i
	}
	close(received)
	wg.Wait()
	return badAt, badErr
}

// SampleOffsets returns up to n offsets spread evenly over the inside of a stream of
// length size: the splits a caller still decodes in full beside CheckEventSplits.
func SampleOffsets(size, n int) []int {
	var out []int
	for k := 1; k <= n; k++ {
		if i := k * size / (n + 1); i > 0 && i < size && (len(out) == 0 || out[len(out)-1] != i) {
			out = append(out, i)
		}
	}
	return out
}
