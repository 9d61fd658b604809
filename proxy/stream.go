package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/upstream"
)

// The streaming response: a body-stream writer that turns events (or, for the
// passthrough, forwarded chunks) into SSE for the client.

// runStream serves a streaming request. The response body is produced by the run's
// writeStream as a coroutine (iter.Pull) of the connection's own goroutine: the handler
// runs it until it knows whether the upstream accepted (SSE, 200) or failed before the
// first event (a JSON error with the upstream's status), so retries and fallbacks stay
// possible until then; fasthttp then resumes it once while writing the response
// (pullBody.WriteTo), and from there the writer writes to the client's connection itself,
// each flush of the writer one chunk on the wire. No goroutine or pipe stands between the
// writer and the client's connection, and no coroutine switch between two events.
func (c *requestRun) runStream(ctx *fasthttp.RequestCtx, run endpointRun) {
	started := make(chan *apiError, 1)
	base := c.s.baseCtx
	if c.parent != nil {
		base = c.parent
	}
	cctx, cancel := context.WithCancel(c.span.Context(base)) // the server span, parent of the upstream calls
	o := &sseOut{c: c, cancel: cancel, started: started, pool: &c.s.streamOuts}
	f := run.forwarder()
	if f != nil { // the upstream's events are the stream: only errors are the dialect's
		o.errs = f.errors()
	} else {
		o.enc = run.streamEncoder()
		o.errs = o.enc
	}
	sink := &streamSink{}
	o.w = sink
	deep := c.route == nil || deepStack(c.route.backend)
	next, stop := iter.Pull(func(yield func([]byte) bool) {
		growStreamStack(deep)
		sink.yield = yield
		defer c.releaseScratch() // last: nothing reads the request any more
		defer o.sync()           // what the writer left buffered, as fasthttp's stream writer did
		defer c.endLimits()      // charge the usage, release the slots
		defer cancel()
		defer c.s.metrics.Inflight.Dec()
		defer c.recoverStream(o)
		c.writeStream(cctx, o, run, f)
	})
	// Run the writer until it has decided; whatever it flushed before deciding (nothing,
	// as the writers commit before they write) is kept for the body.
	body := &pullBody{next: next, stop: stop, sink: sink}
	var a *apiError
	for decided := false; !decided; {
		select {
		case a = <-started:
			decided = true
		default:
			p, ok := next()
			if !ok { // the writer returned; it sends before it returns
				select {
				case a = <-started:
				default: // a broken writer must not hang the connection
					e := classify(errors.New("the stream writer ended without an answer"), c.rid)
					a = &e
				}
				decided = true
				break
			}
			body.pending = append(body.pending, p...)
		}
	}
	ctx.SetBodyStream(body, -1)
	if a != nil {
		setErrorHeaders(ctx, *a) // the writer writes the body
		return
	}
	ctx.SetStatusCode(200)
	ctx.SetContentType("text/event-stream")
	ctx.Response.Header.SetCanonical([]byte("Cache-Control"), []byte("no-cache")) // canonical already: not normalized again
	ctx.Response.Header.SetCanonical([]byte("X-Accel-Buffering"), []byte("no"))
	c.answerHeaders(&ctx.Response.Header)
}

// streamStackFrame is the frame growStreamStack takes for a stream that may go deep:
// with the frames below it, more than the 8 KiB the stream writer's coroutine would
// otherwise reach, so the runtime gives it a 16 KiB stack at once (a 2 KiB start, or the
// runtime's adaptive start size). streamStackFramePlain is the one for a plain stream:
// enough for an 8 KiB stack at once, no more.
const (
	streamStackFrame      = 10 << 10
	streamStackFramePlain = 5 << 10
)

// growStreamStack grows the calling goroutine's stack while it is shallow. The stream
// writer's coroutine (iter.Pull: a new goroutine per stream) starts with a small stack and
// otherwise outgrows it two or three times, each deep in the upstream read or the decoder,
// where the runtime's copy walks and adjusts every frame (~36 K instructions each, ~0.5 K
// an event of a 200-event stream; PERFORMANCE.md, "The stream's coroutine stack, ninth
// session"). Called first thing, the one copy is of two frames.
//
// A stream to a plain-HTTP upstream stays within 8 KiB (the send on a pooled connection
// and every event, measured; a new connection is dialed on a goroutine of its own,
// upstream's dialApart), so deep false takes 8 KiB; deep, for TLS upstreams (the handshake
// and every record's decryption run on this stack) and the backends without an HTTP
// client, 16 KiB as before. A stream whose stack outgrows 8 KiB all the same (a
// collector's assist at its deepest point, a fallback to a TLS backend) is grown by the
// runtime then, once (PERFORMANCE.md, "The stream event and peak RSS, fifteenth session").
func growStreamStack(deep bool) {
	if deep {
		growStack16()
		return
	}
	growStack8()
}

// deepStack reports whether a stream to b takes the 16 KiB stack (growStreamStack): any
// backend but one reached over plain HTTP.
func deepStack(b *backend) bool {
	return b == nil || b.client == nil || !strings.HasPrefix(b.baseURL, "http:")
}

//go:noinline
func growStack16() {
	var pad [streamStackFrame]byte
	touchStack(pad[:])
}

//go:noinline
func growStack8() {
	var pad [streamStackFramePlain]byte
	touchStack(pad[:])
}

// touchStack keeps growStreamStack's frame from being optimized away; p does not escape.
//
//go:noinline
func touchStack(p []byte) { p[len(p)-1] = 1 }

// streamBufferSize is the most the stream writer holds back: events that arrive together
// are written together, in writes of this many bytes or, at the end of a read, fewer.
const streamBufferSize = 4 << 10

// streamSink is where the stream writer's flushes go. Until the client's writer is known
// each is handed to the coroutine's consumer (yield), which writes it before the
// coroutine goes on, so p is not copied; once pullBody.WriteTo has set w, each is written
// to w directly, from inside the coroutine, which runs only while WriteTo waits for it.
// A consumer that stopped, or a failed write (the client left), makes it fail.
type streamSink struct {
	yield func([]byte) bool
	w     io.Writer // set by WriteTo
	n     int64     // bytes written to w
	err   error     // the first error from w; every later write fails at once
}

func (s *streamSink) Write(p []byte) (int, error) {
	if s.w == nil {
		if !s.yield(p) {
			return 0, errClientGone
		}
		return len(p), nil
	}
	if s.err != nil {
		return 0, errClientGone
	}
	k, err := s.w.Write(p)
	s.n += int64(k)
	if err != nil {
		s.err = err
		return k, errClientGone
	}
	return len(p), nil
}

// pullBody is a streaming response body that fasthttp writes with WriteTo (each write a
// chunk, flushed), resuming the stream writer's coroutine to write it. Close, which
// fasthttp calls when it is done with the response, ends the coroutine if it has not
// ended.
type pullBody struct {
	pending []byte // written before the first pull
	next    func() ([]byte, bool)
	stop    func()
	sink    *streamSink
	rest    []byte // Read's unread part of the last pull
}

// SupportsBodyWriteTo tells fasthttp that WriteTo may replace Read (fasthttp.BodyWriterTo).
func (b *pullBody) SupportsBodyWriteTo() bool { return true }

// WriteTo writes what was flushed before the stream was decided, then gives the writer w
// and resumes it: it runs to its end, writing to w itself. It returns w's first error.
func (b *pullBody) WriteTo(w io.Writer) (int64, error) {
	if len(b.pending) > 0 {
		k, err := w.Write(b.pending)
		b.pending = nil
		if err != nil {
			b.stop() // the writer's next write fails: it cancels the upstream and returns
			return int64(k), err
		}
		b.sink.n += int64(k)
	}
	b.sink.w = w
	for {
		p, ok := b.next()
		if !ok {
			return b.sink.n, b.sink.err
		}
		// The writer yields only before w is set; this is a write it had begun then.
		if _, err := b.sink.Write(p); err != nil {
			b.stop()
			return b.sink.n, b.sink.err
		}
	}
}

// Read is the io.Reader fasthttp falls back on where it does not use WriteTo.
func (b *pullBody) Read(p []byte) (int, error) {
	for len(b.rest) == 0 {
		if len(b.pending) > 0 {
			b.rest, b.pending = b.pending, nil
			break
		}
		next, ok := b.next()
		if !ok {
			return 0, io.EOF
		}
		b.rest = next
	}
	n := copy(p, b.rest)
	b.rest = b.rest[n:]
	return n, nil
}

func (b *pullBody) Close() error {
	b.stop()
	return nil
}

// recoverStream turns a panic in the stream writer (its own goroutine, out of reach of the
// handler's recover) into a 500 before the stream started, or an in-band error after.
func (c *requestRun) recoverStream(o *sseOut) {
	p := recover()
	if p == nil {
		return
	}
	c.s.logger.Error("stream panic", "request_id", c.rid, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	a := classify(errors.New("panic"), c.rid)
	e := c.clientError(a)
	if !c.committed {
		c.committed = true
		o.started <- &a
		o.buf = o.errs.AppendErrorBody(o.take(), &e)
	} else { // the client has the SSE headers: end the stream in-band
		o.buf = o.errs.AppendErrorEvent(o.take(), &e)
	}
	o.sync()
}

// refuse answers a stream that failed before it started, once: err's status, sent to the
// handler on o.started, and the dialect's error body. It returns the status.
//
//go:noinline // see endInBand
func (c *requestRun) refuse(err error, o *sseOut) int {
	c.committed = true
	a := c.s.render(c.rid, err)
	o.started <- &a
	e := c.clientError(a)
	o.buf = o.errs.AppendErrorBody(o.take(), &e)
	return a.Status
}

// clientError is a as the client dialects write it (translate.ClientError).
func (c *requestRun) clientError(a apiError) translate.ClientError {
	return translate.ClientError{Status: a.Status, Message: a.Message, Type: a.Type, Param: a.Param, Code: a.Code, RequestID: c.rid}
}

// sseOut writes events to the client in its API's wire format (enc, the client dialect's
// translate.ClientStream; nil for a forwarded stream, whose events are the upstream's, and
// whose errors errs writes): the one stream writer of every client API. Events are encoded
// as they are decoded, straight after the ones before them in buf, and buf is written to
// the client (sync) at the end of every upstream read (and at every keep-alive and the
// end), or sooner once it holds streamBufferSize bytes, so nothing ever waits for more
// upstream data, while events that arrived together share one write to the client. buf
// holds whole events only: an encoder's bytes join it when the encoder returns without
// error, so a panic or a failed event leaves none of its bytes behind.
//
// Between two writes buf is empty, and it goes back to pool (when not nil), so the next
// event of any stream on the same P appends to the buffer the last one wrote: a buffer
// still in the CPU's cache, where each stream's own buffer would be cold after the other
// streams' events of the 5 ms between two of its own (PERFORMANCE.md, "The stream event's
// cache misses, twelfth session"). Whatever appends to buf appends to take().
type sseOut struct {
	c       *requestRun
	w       *streamSink
	enc     translate.ClientStream
	errs    translate.ClientErrors
	buf     []byte
	pool    *sync.Pool // of *[]byte; nil: buf is the stream's own
	bp      *[]byte    // the pool's box buf came in, to put it back in
	cancel  context.CancelFunc
	started chan<- *apiError
}

// streamOutKeep is the largest buffer sync returns to the pool: one that grew past it
// for a large event is left to the collector.
const streamOutKeep = 2 * streamBufferSize

// take returns buf, to append to: when it has no memory, a buffer from the pool.
func (o *sseOut) take() []byte {
	if cap(o.buf) == 0 && o.pool != nil {
		if bp, ok := o.pool.Get().(*[]byte); ok {
			o.bp, o.buf = bp, (*bp)[:0]
		}
	}
	return o.buf
}

// release empties buf once written: into the pool, unless it grew past streamOutKeep.
func (o *sseOut) release() {
	if o.pool == nil || cap(o.buf) > streamOutKeep {
		o.buf = o.buf[:0]
		return
	}
	bp := o.bp
	if bp == nil {
		bp = new([]byte)
	}
	*bp = o.buf[:0]
	o.pool.Put(bp)
	o.bp, o.buf = nil, nil
}

// commit tells the handler to answer 200 with an event stream, once, noting the model
// that answered (requestRun.noteAnswered) before the first event is written.
func (o *sseOut) commit() {
	if !o.c.committed {
		o.c.committed = true
		o.c.noteAnswered(o.enc)
		o.started <- nil
	}
}

func (o *sseOut) Event(ev *translate.Event) error {
	if ev.Kind == translate.EventError {
		return nil // returned by the decoder as its error; written by writeStream
	}
	o.commit()
	if o.c.firstT.IsZero() && isContent(ev.Kind) {
		o.c.firstT = time.Now()
	}
	b, err := o.enc.AppendEvent(o.take(), ev)
	if err != nil {
		return err
	}
	o.buf = b
	return o.write()
}

func isContent(k translate.EventKind) bool {
	switch k {
	case translate.EventTextDelta, translate.EventReasoningDelta, translate.EventRefusalDelta, translate.EventToolCallStart:
		return true
	}
	return false
}

func (o *sseOut) KeepAlive() error {
	o.commit()
	o.buf = o.enc.AppendKeepAlive(o.take())
	return o.sync()
}

// write is called after bytes joined o.buf: it sends them to the client once they reach
// streamBufferSize, and otherwise leaves them for the read's end (sync).
func (o *sseOut) write() error {
	if len(o.buf) < streamBufferSize {
		return nil
	}
	return o.sync()
}

// sync sends what is buffered to the client.
func (o *sseOut) sync() error {
	if len(o.buf) == 0 {
		if cap(o.buf) > 0 {
			o.release() // taken, and nothing joined it
		}
		return nil
	}
	_, err := o.w.Write(o.buf)
	o.release()
	if err != nil {
		return o.gone()
	}
	return nil
}

// gone cancels the upstream and any running tools: the client left.
func (o *sseOut) gone() error {
	o.cancel()
	return errClientGone
}

// writeStream produces the response body in the stream writer's coroutine: the run's
// answer, forwarded by f (the passthrough) or translated and written by o.enc. It sends on
// o.started exactly once: nil when the stream starts (SSE, 200), else the error the
// handler answers with, whose body it writes (o.errs.AppendErrorBody). A stream that
// fails after it started ends with the dialect's error event; one that ends well with
// o.enc's Finish, unless forwarded (the upstream's own end was).
func (c *requestRun) writeStream(ctx context.Context, o *sseOut, run endpointRun, f forwarder) {
	c.call.flush = o.sync
	var err error
	if f != nil {
		err = c.forwardStream(ctx, f, o)
	} else {
		err = c.execute(ctx, o, true)
	}
	code := 200
	switch {
	case !c.committed:
		code = c.refuse(err, o)
	case errors.Is(err, errReported): // the upstream's error event was forwarded
		o.sync()
	case err != nil && !errors.Is(err, errClientGone):
		c.endInBand(err, o)
	case err == nil:
		if f == nil {
			o.buf = o.enc.Finish(o.take())
			o.sync()
		}
		run.answered(ctx, nil)
	}
	if errors.Is(err, errClientGone) || errors.Is(err, context.Canceled) {
		code = 499
	}
	c.failed = err
	run.finish(nil, code, true)
}

// endInBand ends a started stream that failed with err: the dialect's error event. Like
// refuse, never inlined: writeStream's frame is under every event of every stream (the
// stream writer's 8 KiB stack, growStreamStack), and the error's rendering is not.
//
//go:noinline
func (c *requestRun) endInBand(err error, o *sseOut) {
	e := c.clientError(c.s.render(c.rid, err))
	o.buf = o.errs.AppendErrorEvent(o.take(), &e)
	o.sync()
}

// errClientGone is returned by emit callbacks when the client disconnected.
var errClientGone = errors.New("client disconnected")

// forwardStream forwards the upstream's stream to o, the route and its fallbacks tried
// with retries until one is accepted. Its error is written in-band by the stream writer,
// unless it wraps errReported.
func (c *requestRun) forwardStream(ctx context.Context, f forwarder, o *sseOut) error {
	call := c.call
	call.meter.prompt = c.req
	attempt := func(ctx context.Context, r *route) error {
		ctx = call.startFirst(ctx, r, true)
		defer call.endFirst()
		return call.roundTrip(ctx, r, true, func(dst []byte, opts *translate.Options) ([]byte, error) {
			return f.request(dst, r, opts)
		}, func(x *upstream.Exchange, _ *translate.Options) error {
			body, err := upstream.DecodedBody(x, r.backend.name)
			if err != nil {
				return err
			}
			f.begin(r)
			call.armFirst(r)
			err = r.backend.client.Pump(ctx, body, call.reads, func(typ, data []byte) error { // its framing: SSE, or Bedrock's event stream
				buf := o.take()
				mark := len(buf)
				out, how, err := f.event(buf, typ, data, &call.meter)
				if how&(passSent|passWrite) != 0 {
					if ferr := call.showing(); ferr != nil {
						return ferr
					}
				}
				if how&passSent != 0 {
					call.sent = true
				}
				if how&passWrite == 0 {
					return err // nothing of it joins o.buf
				}
				if len(out) < mark { // a forwarder keeps what it was given (forwarder.event)
					return shortForward(len(out), mark)
				}
				o.buf = out
				o.commit()
				if how&passContent != 0 && c.firstT.IsZero() {
					c.firstT = time.Now()
				}
				if how&passFirstChunk != 0 {
					call.chat.FirstChunk()
				}
				if werr := o.write(); werr != nil {
					return werr
				}
				return err
			}, o.sync, streamEnd)
			return call.firstOr(f.end(err, &call.meter))
		})
	}
	switch f.(type) {
	case *chatForward, *messagesForward, *responsesForward: // may be continued (continuation_passthrough.go)
		call.startResume(c.req, true)
		call.startForward(attempt, f)
	}
	err := call.withRetries(ctx, attempt)
	if err != nil && call.sent && call.resume.on {
		err = releaseHeld(call.continueTurn(ctx, c.req, nil, err), f, o)
	}
	return err
}

// shortForward is the error of a forwarder that returned fewer bytes (n) than it was given
// (mark). It is never inlined: fmt.Errorf's arguments would sit in the frame of the
// forwarded stream's event callback, on the stack of every passthrough stream.
//
//go:noinline
func shortForward(n, mark int) error {
	return fmt.Errorf("forwarded event: %d bytes returned of %d given", n, mark)
}
