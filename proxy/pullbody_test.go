package proxy

import (
	"bufio"
	"errors"
	"iter"
	"strings"
	"testing"
)

// failAfter is a client connection that accepts n writes, then fails every write.
type failAfter struct {
	n      int
	writes []string
}

var errBroken = errors.New("broken pipe")

func (f *failAfter) Write(p []byte) (int, error) {
	if len(f.writes) == f.n {
		return 0, errBroken
	}
	f.writes = append(f.writes, string(p))
	return len(p), nil
}

// newPullBody starts write as a stream writer's coroutine, runs it to its first flush, as
// runStream does until the stream is decided, and returns the body fasthttp would write.
func newPullBody(t *testing.T, write func(w *bufio.Writer) error) (*pullBody, *error) {
	t.Helper()
	sink := &streamSink{}
	var werr error
	next, stop := iter.Pull(func(yield func([]byte) bool) {
		sink.yield = yield
		w := bufio.NewWriter(sink)
		werr = write(w)
	})
	b := &pullBody{next: next, stop: stop, sink: sink}
	if p, ok := next(); ok {
		b.pending = append(b.pending, p...)
	}
	return b, &werr
}

func TestPullBody_WriteTo(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	events := func(n int) func(w *bufio.Writer) error {
		return func(w *bufio.Writer) error {
			for i := range n {
				w.WriteString("data: " + strings.Repeat("x", i+1) + "\n\n")
				if err := w.Flush(); err != nil {
					return err
				}
			}
			return nil
		}
	}
	for _, tc := range []struct {
		name       string
		events     int
		okWrites   int // writes the client accepts
		wantWrites []string
		wantErr    error // from WriteTo
		wantWriter error // what the stream writer saw
	}{
		{name: "every flush one write, the first from before the stream was decided", events: 3, okWrites: 9,
			wantWrites: []string{"data: x\n\n", "data: xx\n\n", "data: xxx\n\n"}},
		{name: "the client fails the first write: the writer is stopped", events: 3, okWrites: 0,
			wantErr: errBroken, wantWriter: errClientGone},
		{name: "the client fails mid-stream: the writer's next flush fails", events: 3, okWrites: 2,
			wantWrites: []string{"data: x\n\n", "data: xx\n\n"}, wantErr: errBroken, wantWriter: errClientGone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, werr := newPullBody(t, events(tc.events))
			conn := &failAfter{n: tc.okWrites}
			n, err := b.WriteTo(conn)
			b.Close()
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("WriteTo error = %v, want %v", err, tc.wantErr)
			}
			if !errors.Is(*werr, tc.wantWriter) {
				t.Errorf("writer's error = %v, want %v", *werr, tc.wantWriter)
			}
			if got := strings.Join(conn.writes, "|"); got != strings.Join(tc.wantWrites, "|") {
				t.Errorf("client got %q, want %q", conn.writes, tc.wantWrites)
			}
			if want := int64(len(strings.Join(tc.wantWrites, ""))); n != want {
				t.Errorf("WriteTo wrote %d bytes, want %d", n, want)
			}
		})
	}
}

// TestPullBody_Read: the Read fallback yields the same bytes, then EOF.
func TestPullBody_Read(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	b, _ := newPullBody(t, func(w *bufio.Writer) error {
		for _, s := range []string{"one ", "two ", "three"} {
			w.WriteString(s)
			if err := w.Flush(); err != nil {
				return err
			}
		}
		return nil
	})
	var got strings.Builder
	buf := make([]byte, 3)
	for {
		n, err := b.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			break
		}
	}
	b.Close()
	if got.String() != "one two three" {
		t.Errorf("Read gave %q", got.String())
	}
}
