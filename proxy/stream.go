package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/agate-gateway/agate/translate/openaichat"
	"io"
	"iter"
	"runtime/debug"
	"time"

	"github.com/agate-gateway/agate/translate"
	"github.com/valyala/fasthttp"
)

// The streaming response: a body-stream writer that turns events (or, for the
// passthrough, forwarded chunks) into SSE for the client.

// streamAnswer is what a client API's streaming run supplies to runStream: its writer and
// its two shapes of error.
type streamAnswer interface {
	// writeStream produces the response body in the body-stream writer's goroutine: it
	// sends on started exactly once, nil when the stream starts (SSE, 200), else the error
	// the handler answers with (the writer then writes errorBody's body).
	writeStream(ctx context.Context, cancel context.CancelFunc, w *bufio.Writer, started chan<- *apiError)
	// errorBody is the JSON error body of a failure before the stream started.
	errorBody(a apiError) []byte
	// errorEventBody is the in-band error that ends a started stream.
	errorEventBody(a apiError) []byte
}

// stream serves a streaming chat completions request.
func (c *requestRun) stream(ctx *fasthttp.RequestCtx) { c.runStream(ctx, c) }

// runStream serves a streaming request. The response body is produced by the run's
// writeStream as a coroutine (iter.Pull) of the connection's own goroutine: the handler
// runs it until it knows whether the upstream accepted (SSE, 200) or failed before the
// first event (a JSON error with the upstream's status), so retries and fallbacks stay
// possible until then; fasthttp then resumes it once while writing the response
// (pullBody.WriteTo), and from there the writer writes to the client's connection itself,
// each flush of the writer one chunk on the wire. No goroutine or pipe stands between the
// writer and the client's connection, and no coroutine switch between two events.
func (c *requestRun) runStream(ctx *fasthttp.RequestCtx, sa streamAnswer) {
	started := make(chan *apiError, 1)
	cctx, cancel := context.WithCancel(c.traced(c.s.baseCtx)) // tracing.go
	sink := &streamSink{}
	next, stop := iter.Pull(func(yield func([]byte) bool) {
		sink.yield = yield
		w := bufio.NewWriterSize(sink, streamBufferSize)
		defer c.releaseScratch() // last: nothing reads the request any more
		defer w.Flush()          // what the writer left buffered, as fasthttp's stream writer did
		defer c.endLimits()      // limits.go: charge the usage, release the slots
		defer cancel()
		defer c.s.metrics.Inflight.Dec()
		defer c.recoverStream(w, started, sa)
		sa.writeStream(cctx, cancel, w, started)
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
	ctx.Response.Header.Set("Cache-Control", "no-cache")
	ctx.Response.Header.Set("X-Accel-Buffering", "no")
}

// streamBufferSize is the stream writer's buffer: events that arrive together are written
// together, up to this many bytes a write.
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
func (c *requestRun) recoverStream(w *bufio.Writer, started chan<- *apiError, sa streamAnswer) {
	p := recover()
	if p == nil {
		return
	}
	c.s.logger.Error("stream panic", "request_id", c.rid, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	a := classify(errors.New("panic"), c.rid)
	if !c.committed {
		c.committed = true
		started <- &a
		w.Write(sa.errorBody(a))
	} else { // the client has the SSE headers: end the stream in-band
		w.Write(sa.errorEventBody(a))
	}
	w.Flush()
}

// refuse answers a stream that failed before it started, once: err's status, sent to the
// handler on started, and sa's error body. It returns the status.
func (c *requestRun) refuse(err error, started chan<- *apiError, w *bufio.Writer, sa streamAnswer) int {
	c.committed = true
	a := c.s.render(c.rid, err)
	started <- &a
	w.Write(sa.errorBody(a))
	return a.Status
}

func (c *requestRun) errorBody(a apiError) []byte {
	return openaichat.AppendError(nil, a.Message, a.Type, a.Param, a.Code)
}

func (c *requestRun) errorEventBody(a apiError) []byte {
	return openaichat.AppendErrorEvent(nil, a.Message, a.Type, a.Param, a.Code)
}

// sseOut writes events to the client as OpenAI chunks. Events are written as they are
// decoded and flushed at the end of every upstream read (and at every keep-alive and the
// end), so nothing ever waits for more upstream data, while events that arrived together
// share one write to the client.
type sseOut struct {
	c       *requestRun
	w       *bufio.Writer
	enc     *openaichat.ChunkEncoder
	buf     []byte
	cancel  context.CancelFunc
	started chan<- *apiError
}

// commit tells the handler to answer 200 with an event stream, once.
func (o *sseOut) commit() {
	if !o.c.committed {
		o.c.committed = true
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
	o.buf = o.enc.Encode(o.buf[:0], ev)
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
	o.buf = append(o.buf[:0], ": keep-alive\n\n"...)
	return o.flush()
}

// write buffers o.buf for the client.
func (o *sseOut) write() error {
	if len(o.buf) == 0 {
		return nil
	}
	if _, err := o.w.Write(o.buf); err != nil {
		return o.gone()
	}
	return nil
}

// flush writes o.buf and sends everything buffered to the client.
func (o *sseOut) flush() error {
	if err := o.write(); err != nil {
		return err
	}
	return o.sync()
}

// sync sends what is buffered to the client.
func (o *sseOut) sync() error {
	if o.w.Buffered() == 0 {
		return nil
	}
	if err := o.w.Flush(); err != nil {
		return o.gone()
	}
	return nil
}

// gone cancels the upstream and any running tools: the client left.
func (o *sseOut) gone() error {
	o.cancel()
	return errClientGone
}

func (c *requestRun) writeStream(ctx context.Context, cancel context.CancelFunc, w *bufio.Writer, started chan<- *apiError) {
	o := &sseOut{c: c, w: w, cancel: cancel, started: started,
		enc: openaichat.NewChunkEncoder(c.responseID(), c.req.Model, time.Now().Unix(), c.req.IncludeUsage)}
	c.call.flush = o.sync
	var err error
	passthrough := c.passthrough()
	if passthrough {
		err = c.call.forwardStream(ctx, c.req, o)
	} else {
		err = c.execute(ctx, o, true)
	}
	code := 200
	switch {
	case !c.committed:
		code = c.refuse(err, started, w, c)
	case err != nil && !errors.Is(err, errClientGone):
		a := c.s.render(c.rid, err)
		o.buf = openaichat.AppendErrorEvent(o.buf[:0], a.Message, a.Type, a.Param, a.Code)
		o.flush()
	case err == nil && !passthrough: // a passthrough forwarded the upstream's [DONE]
		o.buf = o.enc.Finish(o.buf[:0])
		o.flush()
	}
	if errors.Is(err, errClientGone) || errors.Is(err, context.Canceled) {
		code = 499
	}
	c.finish(nil, code, true)
}
