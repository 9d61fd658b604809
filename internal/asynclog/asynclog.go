// Package asynclog is a log sink that takes each line into memory and writes the lines out
// in batches from one goroutine, so that logging a request costs it no system call. Lines
// are written in the order they were taken; none is lost at Close; when the sink falls
// behind by more than a bound, new lines are dropped and counted rather than held without
// limit or waited for.
package asynclog

import (
	"io"
	"sync"
	"time"
)

// Defaults of Options.
const (
	// DefaultFlushInterval is how long a line may wait in memory before it is written.
	DefaultFlushInterval = 100 * time.Millisecond
	// DefaultMaxPending bounds the bytes waiting to be written: at 1000 requests a second
	// of ~300-byte lines, the sink can stall for about 3 s before lines are dropped.
	DefaultMaxPending = 1 << 20
	// flushBytes is the batch size that is written at once without waiting for the interval.
	flushBytes = 64 << 10
)

// Options tune a Writer. The zero value means the defaults.
type Options struct {
	// FlushInterval is the longest a line waits before it is written. Zero means
	// DefaultFlushInterval.
	FlushInterval time.Duration
	// MaxPending bounds, in bytes, what waits to be written; a line that would exceed it
	// is dropped. Zero means DefaultMaxPending.
	MaxPending int
	// OnDrop, when set, is called once for each dropped line (for a metric). It must not
	// log through the Writer.
	OnDrop func()
}

// Writer is an io.Writer that buffers what it is given and writes it to its output in
// batches, at most FlushInterval later. Each Write should be one whole line (as slog
// handlers write): lines are kept or dropped whole. Safe for concurrent use; Close must be
// called to write out the last lines.
type Writer struct {
	out        io.Writer
	interval   time.Duration
	maxPending int
	onDrop     func()

	mu      sync.Mutex
	pending []byte // guarded by mu
	closed  bool   // guarded by mu: writes then go straight to out
	dropped uint64 // guarded by mu

	spare  []byte        // the flusher's; the batch buffer last written
	kick   chan struct{} // capacity 1: pending became non-empty, or large
	done   chan struct{} // closed by Close
	exited chan struct{} // closed when the flusher has returned
	once   sync.Once
}

// New returns a Writer writing to out and starts its flusher goroutine.
func New(out io.Writer, o Options) *Writer {
	if o.FlushInterval <= 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.MaxPending <= 0 {
		o.MaxPending = DefaultMaxPending
	}
	w := &Writer{out: out, interval: o.FlushInterval, maxPending: o.MaxPending, onDrop: o.OnDrop,
		kick: make(chan struct{}, 1), done: make(chan struct{}), exited: make(chan struct{})}
	go w.run()
	return w
}

// Write takes a copy of p to be written later. It never blocks on the output and never
// fails: a line beyond MaxPending is dropped and counted. After Close, p is written
// through at once.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.closed {
		defer w.mu.Unlock()
		return w.out.Write(p)
	}
	if len(w.pending)+len(p) > w.maxPending {
		w.dropped++
		w.mu.Unlock()
		if w.onDrop != nil {
			w.onDrop()
		}
		return len(p), nil
	}
	wake := len(w.pending) == 0
	w.pending = append(w.pending, p...)
	wake = wake || len(w.pending) >= flushBytes
	w.mu.Unlock()
	if wake {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

// BeginLine locks the Writer for one line to be appended straight to what waits to be
// written, with no buffer and no copy of the caller's: it returns that pending text, to
// which the caller appends exactly one whole line and hands the result to EndLine, which
// unlocks. Nothing else may be done with the Writer in between (it is locked). ok is false,
// and the Writer left unlocked, once it is closed: the caller then Writes its line.
// A line that would take the pending text beyond MaxPending is dropped and counted by
// EndLine, as Write drops it.
func (w *Writer) BeginLine() (pending []byte, ok bool) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil, false
	}
	return w.pending, true
}

// EndLine takes b, the text BeginLine returned with one line appended (perhaps in a
// larger array), and unlocks the Writer. To abandon a line, pass the text as BeginLine
// returned it (or b cut back to that length).
func (w *Writer) EndLine(b []byte) {
	n := len(w.pending) // the pending text's length before the line
	if len(b) > w.maxPending && len(b) > n {
		w.dropped++ // w.pending is left as it was: the line's bytes lie beyond its length
		w.mu.Unlock()
		if w.onDrop != nil {
			w.onDrop()
		}
		return
	}
	w.pending = b
	wake := (n == 0 && len(b) > 0) || len(b) >= flushBytes
	w.mu.Unlock()
	if wake {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
}

// KeepsWritesWhole marks the Writer as a logjson.LineWriter: each Write is taken, written
// and dropped whole, under the Writer's lock.
func (w *Writer) KeepsWritesWhole() {}

// Dropped returns how many lines were dropped because the output fell behind.
func (w *Writer) Dropped() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dropped
}

// Close writes out every line taken so far and stops the flusher; later writes go
// straight to the output. It returns the output's error of that last write, if any. Safe to
// call more than once.
func (w *Writer) Close() error {
	var err error
	w.once.Do(func() {
		close(w.done)
		<-w.exited
		w.mu.Lock()
		defer w.mu.Unlock()
		w.closed = true
		if len(w.pending) > 0 {
			_, err = w.out.Write(w.pending)
			w.pending = nil
		}
	})
	return err
}

// run is the flusher: woken by the first line of a batch, it waits up to the interval
// (less when the batch grows large), then writes the batch in one call.
func (w *Writer) run() {
	defer close(w.exited)
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		select {
		case <-w.kick:
		case <-w.done:
			return // Close writes what is left
		}
		if !w.large() {
			t.Reset(w.interval)
			select {
			case <-t.C:
			case <-w.kick: // the batch grew large
				t.Stop()
			case <-w.done:
				t.Stop()
				return
			}
		}
		w.flush()
	}
}

func (w *Writer) large() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pending) >= flushBytes
}

// flush swaps the pending batch for the spare buffer and writes it. Only run calls it.
func (w *Writer) flush() {
	w.mu.Lock()
	batch := w.pending
	w.pending = w.spare[:0]
	w.mu.Unlock()
	if len(batch) > 0 {
		_, _ = w.out.Write(batch) // nowhere to report a failing log output
	}
	if cap(batch) > 4*flushBytes && cap(batch) > 2*len(batch) {
		batch = nil // a burst's buffer goes back to the garbage collector
	}
	w.spare = batch[:0]
}
