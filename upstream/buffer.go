package upstream

import (
	"context"
	"sync"
)

// MaxPooledBody is the largest body buffer a Buffer gives back to its pool; larger ones
// are left to the garbage collector.
const MaxPooledBody = 1 << 20

// MaxSpareBody is the largest buffer Release keeps as its Buffer's spare (Keep); a larger
// one goes back to the pool instead. A spare is held through its user's whole request
// after the body was sent and while the user waits to be reused, so a spare of a large
// body would keep it once for each user (a recycled request each: 32 concurrent 100 KB
// requests kept 32 buffers of ~115 KB), where the pool keeps as many as are in use at once.
const MaxSpareBody = 32 << 10

// Buffer lends its user one body buffer at a time from a pool it shares with others (the
// server's pool of request-body buffers): the upstream request body from its encoding
// until Send wrote it (Take, Hold, Bytes, Release), or a non-streamed answer's body while
// it is decoded (Answer, then Release or DropAnswer). The zero value pools nothing: Take
// returns nil, to be grown by append. Not safe for concurrent use.
type Buffer struct {
	// Pool holds *[]byte; nil means no pooling.
	Pool *sync.Pool
	// Keep makes Release keep the buffer as the Buffer's spare, for its next Take, instead
	// of giving it back to Pool: for a Buffer that serves one user after another (a
	// recycled request's, which carries the spare to the next: Carry), a pool's get and
	// put a body spared. The spare is released as Release would release it (nothing
	// refers to its bytes) and, like a pooled one, is at most MaxPooledBody.
	Keep bool
	buf  []byte
	ptr  *[]byte // the pooled slice header buf came from
	// spare is the buffer Release kept (Keep), empty; nil when none.
	spare *[]byte
}

// Take returns an empty buffer for the next body: the one the Buffer holds, else its
// spare, else one from the pool.
func (b *Buffer) Take() []byte {
	if b.buf == nil {
		if p := b.spare; p != nil {
			b.buf, b.ptr, b.spare = *p, p, nil
		} else if b.Pool != nil {
			if p, ok := b.Pool.Get().(*[]byte); ok {
				b.buf, b.ptr = *p, p
			}
		}
	}
	return b.buf[:0]
}

// TakeFor is Take for a body expected to reach n bytes: when the buffer Take would lend
// is smaller, it lends a new one of capacity n instead, and the smaller one is left to the
// garbage collector (given back to the pool, it would be taken and given back again by
// every such call, and the pool, which keeps all it is given between two collections,
// would grow with each). A large body is then built in one buffer, not in the chain of
// ever larger ones append grows: about four times the body's size allocated and copied,
// while other large requests hold theirs.
func (b *Buffer) TakeFor(n int) []byte {
	dst := b.Take()
	if n <= cap(dst) {
		return dst
	}
	b.buf, b.ptr = make([]byte, 0, n), nil
	return b.buf
}

// Carry returns the zero Buffer but for b's spare (Keep): what a recycled user of b keeps
// for its next use. A buffer b holds (taken, not released) is not carried.
func (b *Buffer) Carry() Buffer { return Buffer{spare: b.spare} }

// Hold makes p, an append to what Take returned, the buffer's body.
func (b *Buffer) Hold(p []byte) { b.buf = p }

// Bytes returns the body the buffer holds.
func (b *Buffer) Bytes() []byte { return b.buf }

// Release returns the buffer to the pool, or keeps it as the spare (Keep, up to
// MaxSpareBody), once nothing refers to its bytes; one over MaxPooledBody is left to the
// garbage collector.
func (b *Buffer) Release() {
	keep := b.Keep && cap(b.buf) <= MaxSpareBody
	if (b.Pool != nil || keep) && b.buf != nil && cap(b.buf) <= MaxPooledBody {
		p := b.ptr
		if p == nil {
			p = new([]byte)
		}
		*p = b.buf[:0]
		if keep {
			b.spare = p
		} else {
			b.Pool.Put(p)
		}
	}
	b.buf, b.ptr = nil, nil
}

// Answer returns x's whole body, to be read while x is open. A body fasthttp read whole
// (Send: not streamed, not encoded) is the response's own buffer, used where it is rather
// than copied; any other is read (ReadBody) into the lent buffer. Once nothing refers to
// the body the caller calls Release, or DropAnswer when something still may; a read
// error has already released it.
func (b *Buffer) Answer(ctx context.Context, x *Exchange, backend string) ([]byte, error) {
	if body, ok := x.Buffered(); ok {
		return body, nil
	}
	body, err := ReadBody(ctx, x, backend, b.Take())
	if err != nil {
		b.Release()
		return nil, err
	}
	if cap(body) > cap(b.buf) {
		b.buf = body[:0] // a larger body's buffer goes to the pool in its stead
	}
	return body, nil
}

// DropAnswer leaves the body Answer returned to whatever still refers to it: a lent
// buffer is forgotten, not pooled; the response's own buffer is taken out of the
// response, which fasthttp would otherwise reuse once x is closed.
func (b *Buffer) DropAnswer(x *Exchange) {
	if b.buf == nil {
		x.KeepBody()
	}
	b.buf, b.ptr = nil, nil
}
