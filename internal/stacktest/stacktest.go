// Package stacktest measures the goroutine stack a function leaves behind: what a
// server's connection goroutine keeps, for as long as it runs, of the deepest call it
// made (the client parsers' stack tests). A test helper: imported by tests only.
package stacktest

import (
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
)

// ServerFrames is the stack a server's connection goroutine holds above a client parse:
// fasthttp's worker and serveConn (760 bytes of frame), the proxy's handle (672) and serve
// (496) and the handler's parse closure, some 2.3 KB in the gateway's PGO build (go tool
// objdump), rounded up. A stack test runs a parse under it (PerGoroutine's above).
const ServerFrames = 3 << 10

// Grown is the mean stack (PerGoroutine's figure) above which goroutines that ran the
// same code grew their stacks from 8 KiB to 16: the midpoint, clear of the measure's
// noise either way.
const Grown = 12 << 10

// PerGoroutine returns the goroutine stack memory each of n new goroutines holds after
// running f once (f(i) in the i-th) under about above bytes of frames (ServerFrames, or
// 0 for f alone) and parking: what a server's connection goroutine keeps for a stream's
// whole life after parsing its request on it. A goroutine starts with 8 KiB and doubles
// its stack when a call needs more, so each holds 8 KiB, 16 KiB or more; the figure is
// the runtime's stack spans (MemStats.StackInuse), which other goroutines' stacks share,
// so it is their mean give or take a few spans over n: a test tells 8 KiB from 16 by
// Grown, with n of a few hundred. The collector is off while they run, so that no stack
// is shrunk before it is counted.
func PerGoroutine(t testing.TB, n, above int, f func(i int)) uint64 {
	t.Helper()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var ran sync.WaitGroup
	release := make(chan struct{})
	var parked sync.WaitGroup
	for i := range n {
		ran.Add(1)
		parked.Add(1)
		go func() {
			defer parked.Done()
			under(above, func() { f(i) })
			ran.Done()
			<-release
		}()
	}
	ran.Wait()
	runtime.ReadMemStats(&after)
	close(release)
	parked.Wait()
	if after.StackInuse < before.StackInuse {
		return 0
	}
	return (after.StackInuse - before.StackInuse) / uint64(n)
}

// frame is the stack one call of under takes: its pad, the rest of its frame (0x120
// bytes in all, go build -gcflags=-S), its arguments and return address.
const frame = 312

// under calls f with about above bytes of frames below the caller's (within a frame).
//
//go:noinline
func under(above int, f func()) {
	var pad [256]byte
	if above < frame {
		f()
		return
	}
	under(above-frame, f)
	sink(pad[:]) // keeps pad, and so the frame, alive across the call
}

// sink reads b, so that the compiler keeps the array it is a slice of.
//
//go:noinline
func sink(b []byte) byte { return b[0] }

// Expect runs f in n goroutines under about above bytes of frames (PerGoroutine) and
// fails t unless their stacks stayed at 8 KiB when staged is set (f parses with a Stage,
// its working memory off the stack), or grew past it when it is not (f parses on its
// stack: which shows that the measure sees a parser's frame), or f returned an error (the
// first is reported). Under the race detector, whose frames are larger, it skips t.
func Expect(t *testing.T, n, above int, staged bool, f func(i int) error) {
	t.Helper()
	if Race {
		t.Skip("frames are larger under the race detector")
	}
	var failed sync.Once
	perG := PerGoroutine(t, n, above, func(i int) {
		if err := f(i); err != nil {
			failed.Do(func() { t.Error(err) })
		}
	})
	t.Logf("%d bytes of stack a goroutine", perG)
	if staged && perG > Grown {
		t.Errorf("a parse with a Stage left %d bytes of stack a goroutine, want at most %d (a parser on the stack again?)", perG, Grown)
	}
	if !staged && perG <= Grown {
		t.Errorf("a parse without a Stage left %d bytes of stack a goroutine, want more than %d (the measure does not see the parser)", perG, Grown)
	}
}

// Parse is one row of a parser's stack test: Body parsed in n goroutines, passed through
// or translated as Passes answers, with a Stage or without one (Staged).
type Parse struct {
	Name   string
	Body   string
	Passes func(model string) bool
	Staged bool
}

// ExpectParses runs each row as a subtest of t: Expect over n goroutines under
// ServerFrames, where the i-th calls parse(i, row's body, row) (a body each goroutine may
// not share the bytes of is the caller's to copy).
func ExpectParses(t *testing.T, n int, rows []Parse, parse func(i int, body []byte, row Parse) error) {
	t.Helper()
	for _, row := range rows {
		t.Run(row.Name, func(t *testing.T) {
			body := []byte(row.Body)
			Expect(t, n, ServerFrames, row.Staged, func(i int) error { return parse(i, body, row) })
		})
	}
}
