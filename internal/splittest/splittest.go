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
func CheckEventSplits(t testing.TB, stream []byte, offsets []int) {
	t.Helper()
	want, wantErr := parsedEvents(stream)
	check := func(i int) error {
		var p sse.Parser
		n := 0
		fn := func(typ, data []byte) error {
			if n >= len(want) || !bytes.Equal(typ, want[n].typ) || !bytes.Equal(data, want[n].data) {
				return &errEventDiffers{n: n, typ: bytes.Clone(typ), data: bytes.Clone(data)}
			}
			n++
			return nil
		}
		err := p.Feed(stream[:i], fn)
		if err == nil {
			err = p.Feed(stream[i:], fn)
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
	if i, err := FirstFailure(offsets, check); err != nil {
		t.Fatalf("split at byte %d: the parser hands over different events: %v", i, err)
	}
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
