package proxy

import (
	"context"

	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/upstream"
)

// complete serves a non-streaming request of any client API: run's answer, forwarded
// (forwardComplete) or translated and collected by run's assembler, is written into the
// response's own pooled buffer.
func (c *requestRun) complete(ctx *fasthttp.RequestCtx, run endpointRun) {
	// One model call runs in this goroutine and is over when complete returns: it needs
	// no context of its own. A tool loop may leave tool calls running; its context ends
	// them.
	cctx := c.span.Context(c.s.baseCtx) // the server span, parent of the upstream calls
	if len(c.defs) > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithCancel(cctx)
		defer cancel()
	}
	dst := ctx.Response.SwapBody(nil)
	var body []byte
	var err error
	if a, ok := run.(answerer); ok { // an endpoint that makes its answer itself (embeddings)
		if body, err = a.answer(cctx, dst[:0]); err == nil {
			c.noteAnswered(nil)
		}
	} else if f := run.forwarder(); f != nil {
		if body, err = c.forwardComplete(cctx, f, dst); err == nil {
			c.noteAnswered(nil)
		}
	} else {
		c.collected = collect{run.assembler()}
		if err = c.execute(cctx, &c.collected, false); err == nil {
			c.noteAnswered(c.collected.a)
			body, err = c.collected.a.AppendBody(dst[:0])
		}
	}
	if err != nil {
		c.answeredBy, c.failed = nil, err // the answer was an error
		ctx.Response.SwapBody(dst)
		a := c.s.refuseRequest(ctx, c.rid, err)
		run.finish(ctx, a.Status, false) // counted there, with the access line's status
		return
	}
	run.answered(cctx, body)
	ctx.SetStatusCode(200)
	ctx.SetContentType("application/json")
	c.answerHeaders(&ctx.Response.Header)
	ctx.Response.SwapBody(body)
	run.finish(ctx, 200, false)
}

// forwardComplete forwards the upstream's whole answer, rewritten into dst's memory, the
// route and its fallbacks tried with retries until one is accepted.
func (c *requestRun) forwardComplete(ctx context.Context, f forwarder, dst []byte) ([]byte, error) {
	call := c.call
	call.meter.prompt = c.req
	var out []byte
	err := call.withRetries(ctx, func(ctx context.Context, r *route) error {
		return call.roundTrip(ctx, r, false, func(dst []byte, opts *translate.Options) ([]byte, error) {
			return f.request(dst, r, opts)
		}, func(x *upstream.Exchange, _ *translate.Options) error {
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
