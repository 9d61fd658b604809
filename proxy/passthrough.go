package proxy

import (
	"context"
	"time"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/openai"
)

// The OpenAI passthrough forwards upstream chunks and completions nearly as they are; what
// it reads of them and how it rewrites them is translate's (openai.ChunkRewriter,
// openai.RewriteCompletion). This file is the transport: retries, bodies, encodings.

// forwardStream is the OpenAI passthrough for streams: upstream chunks are forwarded with
// the client-facing model, a constant id and created (see openai.ChunkRewriter), and the usage
// (which Agate always requests, to count tokens) dropped unless the client asked for it.
// An upstream error event, a payload that is not a JSON object, or a stream that ends
// before [DONE] or a finish_reason becomes the returned error, which the caller writes
// in-band.
func (c *modelCall) forwardStream(ctx context.Context, req *translate.Request, o *sseOut) error {
	clientModel := jsonx.AppendString(nil, req.Model)
	now := func() int64 { return time.Now().Unix() }
	c.prompt = req
	return c.withRetries(ctx, func(ctx context.Context, r *route) error {
		return c.roundTrip(ctx, r, req, true, func(x *exchange, _ *translate.Options) error {
			body, err := decodedBody(x, r.backend.name)
			if err != nil {
				return err
			}
			finished := false
			chunks := openai.ChunkRewriter{Backend: r.backend.name, Model: clientModel, FallbackID: o.c.responseID(),
				IncludeUsage: req.IncludeUsage, Now: now}
			return c.pumpSSE(ctx, body, r.backend.name, func(_, data []byte) error {
				c.sent = true
				if string(data) == "[DONE]" {
					finished = true
					o.commit()
					o.buf = append(o.buf[:0], "data: [DONE]\n\n"...)
					return o.write()
				}
				var ch openai.Chunk
				var err error
				o.buf, ch, err = chunks.AppendChunk(o.buf[:0], data)
				if err != nil {
					return err
				}
				c.noteOutput(ch.OutputBytes) // usage.go: estimated if no usage follows
				if ch.HasUsage {
					c.noteUsage(ch.Usage)
					if !req.IncludeUsage && ch.Choices == 0 {
						return nil // asked for by the gateway, not by the client
					}
				}
				o.commit()
				if o.c.firstT.IsZero() {
					o.c.firstT = time.Now()
				}
				c.chat.FirstChunk() // tracing.go
				finished = finished || ch.Finished
				return o.write()
			}, o.sync, func() error {
				if !finished {
					return upstreamFault(r.backend.name, "ended the stream before it finished")
				}
				return nil
			})
		})
	})
}

// forwardComplete is the OpenAI passthrough for non-streaming requests: it appends the
// rewritten completion to dst. A 200 whose body is not a JSON chat completion is a 502
// naming the backend.
func (c *modelCall) forwardComplete(ctx context.Context, req *translate.Request, dst []byte) ([]byte, error) {
	var out []byte
	c.prompt = req
	err := c.withRetries(ctx, func(ctx context.Context, r *route) error {
		return c.roundTrip(ctx, r, req, false, func(x *exchange, _ *translate.Options) error {
			body, err := c.answerBody(ctx, x, r.backend.name)
			if err != nil {
				return err
			}
			out, c.lastUsage, err = openai.RewriteCompletion(dst[:0], r.backend.name, body, req.Model)
			if err != nil {
				c.dropAnswer(x) // the error may quote the body
				return err
			}
			if c.lastUsage == (translate.Usage{}) { // usage.go: an upstream that reports none
				c.noteOutput(openai.CompletionOutputBytes(body))
			}
			c.releaseBuf() // out is a copy
			return nil
		})
	})
	return out, err
}
