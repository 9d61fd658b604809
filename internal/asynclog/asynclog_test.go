package asynclog

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/internal/logjson"
)

// lockedBuffer is an output that records every Write call.
type lockedBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.writes++
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// ways are the two ways a line reaches a Writer: Write, and appended in place
// (BeginLine and EndLine, as the JSON log handler gives its lines); after Close a line
// appended in place is refused and written instead.
var ways = []struct {
	name string
	put  func(w *Writer, line string)
}{
	{"Write", func(w *Writer, line string) { io.WriteString(w, line) }},
	{"BeginLine", func(w *Writer, line string) {
		b, ok := w.BeginLine()
		if !ok {
			io.WriteString(w, line)
			return
		}
		w.EndLine(append(b, line...))
	}},
}

// TestWriter_NoLineLostAtClose: every line written before Close is in the output after it,
// each writer's lines in their order, and lines written after Close go straight through.
func TestWriter_NoLineLostAtClose(t *testing.T) {
	tests := []struct {
		name             string
		writers, perEach int
		opts             Options
	}{
		{name: "one writer", writers: 1, perEach: 1000},
		{name: "concurrent writers", writers: 8, perEach: 2000},
		{name: "large batches", writers: 4, perEach: 5000, opts: Options{MaxPending: 64 << 20}},
	}
	for _, tt := range tests {
		for _, way := range ways {
			t.Run(tt.name+"/"+way.name, func(t *testing.T) { testNoLineLost(t, tt.writers, tt.perEach, tt.opts, way.put) })
		}
	}
}

// testNoLineLost has writers goroutines put perEach lines each, then closes the Writer
// and puts one more line; the output must hold them all, each writer's in order.
func testNoLineLost(t *testing.T, writers, perEach int, opts Options, put func(*Writer, string)) {
	var out lockedBuffer
	w := New(&out, opts)
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perEach {
				put(w, fmt.Sprintf("w%d line %d\n", g, i))
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.BeginLine(); ok {
		t.Fatal("BeginLine took a line after Close")
	}
	put(w, "after close\n")
	if d := w.Dropped(); d != 0 {
		t.Fatalf("dropped %d lines with the output keeping up", d)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if got, want := len(lines), writers*perEach+1; got != want {
		t.Fatalf("got %d lines, want %d", got, want)
	}
	next := make([]int, writers)
	for _, l := range lines[:len(lines)-1] {
		var g, i int
		if _, err := fmt.Sscanf(l, "w%d line %d", &g, &i); err != nil {
			t.Fatalf("garbled line %q: %v", l, err)
		}
		if i != next[g] {
			t.Fatalf("writer %d: line %d follows line %d", g, i, next[g]-1)
		}
		next[g]++
	}
	if diff := cmp.Diff("after close", lines[len(lines)-1]); diff != "" {
		t.Errorf("last line (-want +got):\n%s", diff)
	}
}

// blockingWriter blocks every Write until release is closed.
type blockingWriter struct {
	entered chan struct{} // receives once per Write call
	release chan struct{}
	out     lockedBuffer
}

func (b *blockingWriter) Write(p []byte) (int, error) {
	b.entered <- struct{}{}
	<-b.release
	return b.out.Write(p)
}

// TestWriter_DropsCounted: with the output stalled, lines beyond MaxPending are dropped
// whole and counted (Dropped and OnDrop agree); every line kept is written, in order.
func TestWriter_DropsCounted(t *testing.T) {
	tests := []struct {
		name        string
		maxPending  int
		lines       int
		wantDropped int
	}{
		{name: "within the bound", maxPending: 100, lines: 10, wantDropped: 0},
		{name: "beyond the bound", maxPending: 100, lines: 25, wantDropped: 14},
		{name: "bound below one line", maxPending: 5, lines: 3, wantDropped: 3},
	}
	for _, tt := range tests {
		for _, way := range ways {
			t.Run(tt.name+"/"+way.name, func(t *testing.T) {
				out := &blockingWriter{entered: make(chan struct{}, 100), release: make(chan struct{})}
				var onDrop int
				var mu sync.Mutex
				w := New(out, Options{MaxPending: tt.maxPending, OnDrop: func() { mu.Lock(); onDrop++; mu.Unlock() }})
				// The first line is taken by the flusher, which then blocks in the output:
				// from then on, nothing leaves memory.
				io.WriteString(w, "s\n")
				<-out.entered
				var want []string
				for i := range tt.lines {
					line := fmt.Sprintf("line %03d\n", i) // 9 bytes
					way.put(w, line)
					if i < tt.lines-tt.wantDropped {
						want = append(want, line)
					}
				}
				if got := w.Dropped(); got != uint64(tt.wantDropped) {
					t.Errorf("Dropped() = %d, want %d", got, tt.wantDropped)
				}
				mu.Lock()
				if onDrop != tt.wantDropped {
					t.Errorf("OnDrop called %d times, want %d", onDrop, tt.wantDropped)
				}
				mu.Unlock()
				close(out.release)
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff("s\n"+strings.Join(want, ""), out.out.String()); diff != "" {
					t.Errorf("output (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestWriter_EndLineAbandons: a line handed back cut to the length BeginLine returned
// leaves nothing, and the Writer takes the next line (it was unlocked).
func TestWriter_EndLineAbandons(t *testing.T) {
	var out lockedBuffer
	w := New(&out, Options{})
	io.WriteString(w, "a\n")
	b, ok := w.BeginLine()
	if !ok {
		t.Fatal("BeginLine refused a line before Close")
	}
	n := len(b)
	b = append(b, "half a li"...)
	w.EndLine(b[:n])
	ways[1].put(w, "c\n")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("a\nc\n", out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	if d := w.Dropped(); d != 0 {
		t.Errorf("Dropped() = %d after an abandoned line, want 0", d)
	}
}

// TestWriter_Batches: lines written together reach the output in fewer writes than lines.
func TestWriter_Batches(t *testing.T) {
	out := &blockingWriter{entered: make(chan struct{}, 1000), release: make(chan struct{})}
	w := New(out, Options{})
	io.WriteString(w, "first\n")
	<-out.entered // the flusher holds "first"; the next 100 lines wait as one batch
	for i := range 100 {
		fmt.Fprintf(w, "line %d\n", i)
	}
	close(out.release)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := out.out.writes; n != 2 {
		t.Errorf("101 lines took %d writes, want 2", n)
	}
}

func BenchmarkWriter(b *testing.B) {
	line := []byte(`{"time":"2026-11-24T07:35:13.000Z","level":"INFO","msg":"chat completion","request_id":"0123456789abcdef01234567","model":"claude-bench","backend":"anth","key":"bench","stream":false,"status":200,"duration_ms":50,"prompt_tokens":12,"completion_tokens":9}` + "\n")
	w := New(io.Discard, Options{})
	defer w.Close()
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			w.Write(line)
		}
	})
}

// The JSON log handler writes to a Writer without a lock of its own: each Write is kept
// whole (see Write and Close).
var _ logjson.LineWriter = (*Writer)(nil)

// It takes a line appended in place (BeginLine, EndLine).
var _ logjson.LineAppender = (*Writer)(nil)
