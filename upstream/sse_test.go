package upstream

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/agate-gateway/agate/internal/sse"
	"github.com/agate-gateway/agate/translate"
)

// TestPump: events reach onEvent as they are read, afterRead follows each read, onEnd a
// clean end; a stream cut mid-event or a failed read is an error naming the backend.
func TestPump(t *testing.T) {
	tests := []struct {
		name       string
		body       io.Reader
		wantEvents []string
		wantEnd    bool
		wantErr    string // in the error's message; "" for none
	}{
		{name: "clean end", body: strings.NewReader("data: a\n\nevent: x\ndata: b\n\n"), wantEvents: []string{"a", "b"}, wantEnd: true},
		{name: "one byte a read", body: iotest.OneByteReader(strings.NewReader("data: a\n\ndata: b\n\n")), wantEvents: []string{"a", "b"}, wantEnd: true},
		{name: "cut mid-event", body: strings.NewReader("data: a\n\ndata: b"), wantEvents: []string{"a"}, wantErr: "the upstream of backend up ended the stream mid-event"},
		{name: "read error", body: io.MultiReader(strings.NewReader("data: a\n\n"), iotest.ErrReader(errors.New("reset"))), wantEvents: []string{"a"},
			wantErr: "could not reach the upstream of backend up"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var events []string
			reads, ended := 0, false
			err := Pump(context.Background(), tt.body, "up", &sync.Pool{}, func(_, data []byte) error {
				events = append(events, string(data))
				return nil
			}, func() error { reads++; return nil }, func() error { ended = true; return nil })
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Pump = %v, want %q", err, tt.wantErr)
			}
			if strings.Join(events, ",") != strings.Join(tt.wantEvents, ",") || ended != tt.wantEnd || reads == 0 {
				t.Errorf("events %q, ended %v after %d reads; want %q, ended %v", events, ended, reads, tt.wantEvents, tt.wantEnd)
			}
			if tt.wantErr != "" && AsError(err) == nil {
				t.Errorf("error %v is not an UpstreamError", err)
			}
		})
	}
}

// TestStatusLabel: the metric label of an attempt's result.
func TestStatusLabel(t *testing.T) {
	for err, want := range map[error]string{
		nil:                                   "200",
		&translate.UpstreamError{Status: 429}: "429",
		context.Canceled:                      "0",
	} {
		if got := StatusLabel(err); got != want {
			t.Errorf("StatusLabel(%v) = %q, want %q", err, got, want)
		}
	}
}

// chunkReader returns its body in reads of the sizes in sizes, in turn (a size of 0 is
// taken as 1), as a chunked body's reader returns one chunk at most a read.
type chunkReader struct {
	body  []byte
	sizes []byte
	i     int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.body) == 0 {
		return 0, io.EOF
	}
	n := 1
	if len(r.sizes) > 0 {
		n = max(int(r.sizes[r.i%len(r.sizes)])*16, 1)
		r.i++
	}
	n = min(n, len(p), len(r.body))
	copy(p, r.body[:n])
	r.body = r.body[n:]
	return n, nil
}

// pumpAll runs Pump over body read in reads of sizes, with pool, and returns its events
// (each "type|data") and error.
func pumpAll(body, sizes []byte, pool *sync.Pool) ([]string, error) {
	var events []string
	err := Pump(context.Background(), &chunkReader{body: body, sizes: sizes}, "up", pool, func(typ, data []byte) error {
		events = append(events, string(typ)+"|"+string(data))
		return nil
	}, nil, func() error { return nil })
	return events, err
}

// feedAll is pumpAll's oracle: the SSE parser fed the whole body at once.
func feedAll(body []byte) ([]string, error) {
	var events []string
	var p sse.Parser
	err := p.Feed(body, func(typ, data []byte) error {
		events = append(events, string(typ)+"|"+string(data))
		return nil
	})
	if err == nil && p.Pending() {
		err = errors.New("mid-event")
	}
	return events, err
}

// TestPump_ReadBuffer: a stream's read buffer starts at streamReadStart and doubles after
// each read that fills it, up to streamReadSize; the events are the same whatever the
// reads' sizes. The buffer goes back to the pool at its last size, and a smaller one
// from the pool is not used where a larger one is asked for.
func TestPump_ReadBuffer(t *testing.T) {
	small := "data: " + strings.Repeat("a", 200) + "\n\n"
	large := "event: big\ndata: " + strings.Repeat("b", 9000) + "\n\n"
	tests := []struct {
		name     string
		body     string
		sizes    []byte // read sizes in 16-byte units (chunkReader)
		wantSize int    // the buffer's size back in the pool
	}{
		{name: "small events, a chunk each", body: strings.Repeat(small, 20), sizes: []byte{13}, wantSize: streamReadStart},
		{name: "one read fills the start size", body: strings.Repeat(small, 20), sizes: []byte{64, 13}, wantSize: 2 * streamReadStart},
		{name: "a large event in large reads", body: small + large + small, sizes: []byte{255}, wantSize: streamReadSize},
		{name: "a large event in small reads", body: small + large + small, sizes: []byte{3, 40}, wantSize: streamReadStart},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The race detector's sync.Pool drops a quarter of what is put into it, at
			// random: each step that reads the pool back is tried until it holds.
			const tries = 30
			var b *[]byte
			for range tries {
				pool := &sync.Pool{}
				got, err := pumpAll([]byte(tt.body), tt.sizes, pool)
				want, werr := feedAll([]byte(tt.body))
				if err != nil || werr != nil {
					t.Fatalf("Pump: %v; oracle: %v", err, werr)
				}
				if strings.Join(got, "\n") != strings.Join(want, "\n") || len(got) == 0 {
					t.Fatalf("events differ from the parser's over the whole body: %d against %d", len(got), len(want))
				}
				if b, _ = pool.Get().(*[]byte); b != nil {
					break
				}
			}
			if b == nil || len(*b) != tt.wantSize {
				t.Fatalf("the pool got back %v, want a buffer of %d bytes", b, tt.wantSize)
			}
			// A pooled buffer of this size is used as it is for an SSE stream, and
			// replaced by one of streamReadSize where that is asked for (Bedrock's frames).
			pool, reused := &sync.Pool{}, false
			for range tries {
				pool.Put(b)
				if reused = readBuf(pool, streamReadStart) == b; reused {
					break
				}
			}
			if !reused {
				t.Errorf("readBuf did not reuse the pooled buffer of %d bytes", len(*b))
			}
			pool.Put(b)
			if r := readBuf(pool, streamReadSize); len(*r) < streamReadSize {
				t.Errorf("readBuf(streamReadSize) gave %d bytes", len(*r))
			}
		})
	}
}

// FuzzPumpMatchesFeed: Pump, its buffer growing with the reads that fill it, hands on the
// events the SSE parser finds in the whole body at once, and fails where it fails, for
// any body read in any sizes.
func FuzzPumpMatchesFeed(f *testing.F) {
	f.Add([]byte("data: a\n\nevent: x\ndata: b\n\n"), []byte{1})
	f.Add([]byte("data: "+strings.Repeat("x", 5000)+"\r\n\r\ndata: y\n\n"), []byte{200, 1, 64})
	f.Add([]byte(": c\nid: 1\ndata: a\ndata: b\n\ndata: cut"), []byte{0, 3})
	f.Fuzz(func(t *testing.T, body, sizes []byte) {
		got, err := pumpAll(body, sizes, &sync.Pool{})
		want, werr := feedAll(body)
		if (err == nil) != (werr == nil) {
			t.Fatalf("Pump: %v; the parser over the whole body: %v", err, werr)
		}
		if err == nil && strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			t.Fatalf("events %q, want %q", got, want)
		}
	})
}
