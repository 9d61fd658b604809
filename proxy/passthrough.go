package proxy

import (
	"context"
	"errors"
	"time"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/upstream"
)

// The passthrough: a request whose route and fallbacks are all backends of the client's own
// API (chat → openai, Responses → responses, Messages → anthropic), and that runs no tool
// loop, is forwarded nearly as the client sent it, and the upstream's answer nearly as it
// came. One mechanism serves the three APIs, over the run's forwarder: what it reads of
// the upstream's events and how it rewrites them are the client API's (chatForward in
// chat.go, responsesForward in responses.go, messagesForward in messages.go, each over
// its dialect's readers); this file is the transport: retries and fallbacks, the upstream
// body, the stream, the usage.

// forwarder is a client API's side of the passthrough. It serves one request, its
// retries and fallbacks included, and is not safe for concurrent use.
type forwarder interface {
	// errors returns the writer of the client API's errors: a forwarded stream's error
	// event, or its error body.
	errors() translate.ClientErrors
	// request appends the upstream request body for route r to dst: the client's body,
	// its model the route's upstream model.
	request(dst []byte, r *route, opts *translate.Options) ([]byte, error)
	// begin starts an attempt's stream from route r.
	begin(r *route)
	// event appends to dst the client's bytes for one upstream SSE event (typ and data,
	// views valid during the call), reporting the output and usage it read to m; how says
	// what the stream does with the bytes (passed). Its error ends the attempt, after
	// bytes that are to be written are (an upstream error event the client gets as it is:
	// the error wraps errReported).
	event(dst, typ, data []byte, m *meter) (out []byte, how passed, err error)
	// end is called once the attempt's stream stopped, with nil at its clean end (it then
	// returns the error of a stream that ended before it finished: an upstream fault) or
	// the error that stopped it, which it returns.
	end(err error, m *meter) error
	// whole appends to dst the client's body for an upstream's whole answer, reporting its
	// usage to m. body lives until whole returns: nothing of it may be kept.
	whole(dst, body []byte, r *route, m *meter) ([]byte, error)
}

// passed says what the stream does with the bytes of a forwarded event.
type passed uint8

const (
	// passSent: the client is deemed to have seen part of the attempt's answer, so its
	// failure is not retried (modelCall.sent), even when the event failed.
	passSent passed = 1 << iota
	// passWrite: the bytes go to the client (and start the stream).
	passWrite
	// passContent: the first such event is the answer's time to first token.
	passContent
	// passFirstChunk: the event is a chunk for the attempt's span (tracing).
	passFirstChunk
)

// errReported is returned by the passthrough when the upstream's own error event was
// forwarded: the stream has its error and needs no other.
var errReported = errors.New("upstream error event forwarded")

// streamEnd is upstream.Pump's onEnd for a forwarded stream: the forwarder's end judges it.
func streamEnd() error { return nil }

// forwardStream forwards the upstream's stream to o, the route and its fallbacks tried
// with retries until one is accepted. Its error is written in-band by the stream writer,
// unless it wraps errReported.
func (c *requestRun) forwardStream(ctx context.Context, f forwarder, o *sseOut) error {
	call := c.call
	call.meter.prompt = c.req
	return call.withRetries(ctx, func(ctx context.Context, r *route) error {
		return c.passAttempt(ctx, r, f, true, func(x *upstream.Exchange) error {
			body, err := upstream.DecodedBody(x, r.backend.name)
			if err != nil {
				return err
			}
			f.begin(r)
			err = upstream.Pump(ctx, body, r.backend.name, call.reads, func(typ, data []byte) error {
				var how passed
				var err error
				o.buf, how, err = f.event(o.buf[:0], typ, data, &call.meter)
				if how&passSent != 0 {
					call.sent = true
				}
				if how&passWrite == 0 {
					return err
				}
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
			return f.end(err, &call.meter)
		})
	})
}

// forwardComplete forwards the upstream's whole answer, rewritten into dst's memory, the
// route and its fallbacks tried with retries until one is accepted.
func (c *requestRun) forwardComplete(ctx context.Context, f forwarder, dst []byte) ([]byte, error) {
	call := c.call
	call.meter.prompt = c.req
	var out []byte
	err := call.withRetries(ctx, func(ctx context.Context, r *route) error {
		return c.passAttempt(ctx, r, f, false, func(x *upstream.Exchange) error {
			body, err := call.body.Answer(ctx, x, r.backend.name)
			if err != nil {
				return err
			}
			out, err = f.whole(dst[:0], body, r, &call.meter)
			if err != nil {
				call.body.DropAnswer(x) // the error may quote the body
				return err
			}
			call.body.Release() // out is a copy
			return nil
		})
	})
	return out, err
}

// passAttempt sends the request f phrases to route r and hands the accepted exchange to
// consume; the usage consume reports is counted by the attempt (modelCall.counted).
func (c *requestRun) passAttempt(ctx context.Context, r *route, f forwarder, stream bool, consume func(*upstream.Exchange) error) error {
	call := c.call
	opts := call.options(r, stream)
	body, err := f.request(call.body.Take(), r, opts)
	call.body.Hold(body)
	if err != nil {
		return err
	}
	x, err := call.send(ctx, r, opts)
	if err != nil {
		return err
	}
	defer x.Close()
	return consume(x)
}
