package proxy

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate/openai"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/agate-gateway/agate/translate"
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

// maxResponseBytes bounds a non-streamed upstream body, decoded.
const maxResponseBytes = 64 << 20

// decodedBody returns the response body of x decoded: the gateway asks upstreams for identity
// encoding, but one that answers gzip or deflate anyway is decoded as it is read. Any other
// encoding is a 502.
func decodedBody(x *exchange, backend string) (io.Reader, error) {
	var r io.Reader = x.resp.BodyStream()
	if r == nil {
		r = bytes.NewReader(x.resp.Body())
	}
	switch enc := strings.ToLower(strings.TrimSpace(string(x.resp.Header.ContentEncoding()))); enc {
	case "", "identity":
		return r, nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, encodingError(backend, enc, err)
		}
		return zr, nil
	case "deflate":
		zr, err := zlib.NewReader(r)
		if err != nil {
			return nil, encodingError(backend, enc, err)
		}
		return zr, nil
	default:
		return nil, upstreamFault(backend, "answered with the unsupported Content-Encoding "+strconv.Quote(clipString(enc, 40)))
	}
}

// readBody reads the whole non-streamed body of x, decoded (see decodedBody), into dst's
// memory when it has room (a pooled buffer), else into a fresh one. A body over
// maxResponseBytes is a 502, never a truncated answer; so is a body that fails to decode.
func readBody(ctx context.Context, x *exchange, backend string, dst []byte) ([]byte, error) {
	if x.resp.BodyStream() == nil && len(x.resp.Header.ContentEncoding()) == 0 {
		// Read whole by fasthttp (send), within maxResponseBytes.
		return append(dst[:0], x.resp.Body()...), nil
	}
	r, err := decodedBody(x, backend)
	if err != nil {
		return nil, err
	}
	var body []byte
	if cl := x.resp.Header.ContentLength(); cl >= 0 && cl <= maxResponseBytes && len(x.resp.Header.ContentEncoding()) == 0 {
		// The common case: the length is known, so the body is read into one buffer of
		// its size rather than grown from 512 bytes.
		if cap(dst) >= cl {
			body = dst[:cl]
		} else {
			body = make([]byte, cl)
		}
		_, err = io.ReadFull(r, body)
	} else {
		body, err = readAllInto(dst[:0], io.LimitReader(r, maxResponseBytes+1))
	}
	if err != nil {
		enc := string(x.resp.Header.ContentEncoding())
		if ctx.Err() == nil && enc != "" && (errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) ||
			errors.Is(err, zlib.ErrChecksum) || errors.Is(err, zlib.ErrHeader) || errors.Is(err, io.ErrUnexpectedEOF)) {
			return nil, encodingError(backend, enc, err)
		}
		return nil, readError(ctx, backend, err)
	}
	if len(body) > maxResponseBytes {
		return nil, tooLargeAnswer(backend)
	}
	return body, nil
}

// tooLargeAnswer is the error for an upstream body over maxResponseBytes.
func tooLargeAnswer(backend string) *translate.UpstreamError {
	return upstreamFault(backend, "answered with a body over the gateway's bound of "+strconv.Itoa(maxResponseBytes>>20)+" MiB")
}

// readAllInto is io.ReadAll appending to dst.
func readAllInto(dst []byte, r io.Reader) ([]byte, error) {
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

func encodingError(backend, enc string, err error) *translate.UpstreamError {
	return upstreamFault(backend, "sent a body that does not decode as "+clipString(enc, 40)+": "+err.Error())
}

func clipString(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
