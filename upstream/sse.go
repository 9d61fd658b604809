package upstream

import (
	"context"
	"errors"
	"io"
	"strconv"
	"sync"

	"github.com/agate-gateway/agate/internal/sse"
)

// streamReadSize is the most an upstream stream's read buffer grows to. Upstream events
// are a few hundred bytes; a larger burst takes more copies out of the connection's own
// read buffer, not more system calls. It is held for a stream's whole life, so it is small.
const streamReadSize = 4 << 10

// streamReadStart is the size a stream's read buffer starts at (Pump). A read of a chunked
// body returns at most one chunk, and the providers send an event, or a few, a chunk:
// a few hundred bytes, so most streams never need more while they wait on the upstream,
// which is most of their life (scenario c: 100 streams held 400 KB of 4 KiB buffers). A
// read that fills the buffer doubles it, up to streamReadSize.
const streamReadStart = 1 << 10

// Pump reads an upstream event stream, body (DecodedBody), incrementally and hands each
// event to onEvent, calls afterRead (if not nil) once the events of each read are
// handled, and calls onEnd at a clean end of stream. A stream cut mid-event, or an event
// over the parser's size bound, is an upstream error (Fault); a failed read is a
// retryable transport error. It stops reading once ctx is done (the client left), and
// returns ctx's error. Its read buffer comes from reads, a pool of *[]byte, and goes
// back there (nil: a fresh one): streamReadStart (1 KiB) unless the pool holds a larger
// one, doubled, up to streamReadSize (4 KiB), after each read that fills it.
func Pump(ctx context.Context, body io.Reader, backend string, reads *sync.Pool, onEvent sse.Handler, afterRead, onEnd func() error) error {
	var p sse.Parser
	bp := readBuf(reads, streamReadStart)
	defer putReadBuf(reads, bp)
	buf := *bp
	for {
		n, err := body.Read(buf)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if n > 0 {
			if ferr := p.Feed(buf[:n], onEvent); ferr != nil {
				if errors.Is(ferr, sse.ErrEventTooLarge) {
					return Fault(backend, "sent an event over "+strconv.Itoa(sse.DefaultMaxEventBytes)+" bytes")
				}
				return ferr
			}
			if afterRead != nil {
				if ferr := afterRead(); ferr != nil {
					return ferr
				}
			}
			if n == len(buf) && len(buf) < streamReadSize { // more may be waiting: a larger buffer
				buf = make([]byte, min(2*len(buf), streamReadSize))
				*bp = buf
			}
		}
		if err == io.EOF {
			if p.Pending() {
				return Fault(backend, "ended the stream mid-event")
			}
			return onEnd()
		}
		if err != nil {
			return readError(ctx, backend, err)
		}
	}
}

// readBuf returns a read buffer of at least size bytes (streamReadStart or
// streamReadSize) from pool, for putReadBuf: the pool's, if it is as large, else a new one.
func readBuf(pool *sync.Pool, size int) *[]byte {
	if pool != nil {
		if b, ok := pool.Get().(*[]byte); ok {
			if len(*b) >= size {
				return b
			}
			*b = make([]byte, size) // the pointer is reused; the small buffer is dropped
			return b
		}
	}
	b := make([]byte, size)
	return &b
}

// putReadBuf returns a buffer readBuf gave.
func putReadBuf(pool *sync.Pool, b *[]byte) {
	if pool != nil {
		pool.Put(b)
	}
}
