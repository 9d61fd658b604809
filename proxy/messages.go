package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/messagesin"
	"github.com/tidwall/sjson"
	"github.com/valyala/fasthttp"
)

// POST /v1/messages serves Anthropic's Messages API over every backend, with the keys,
// allowlists, routing, fallbacks, retries, limits and tool loop of chat completions. To a
// route whose backends are all of type anthropic (and no server tools) the client's body
// is forwarded as bytes with the model rewritten, the client's anthropic-version and
// anthropic-beta headers passed on (the betas the backend's allowed_betas list: betas.go)
// and the gateway's credential in place of the client's;
// to any other it is read into the core request (translate/messagesin) and its events
// encoded as a Message or the Messages event stream. Errors, including those of the
// shared request path, are rendered in Anthropic's shape (see writeError).

// Paths of the Messages API.
const (
	messagesPath    = "/v1/messages"
	countTokensPath = "/v1/messages/count_tokens"
)

// isMessagesPath reports whether path is one of the Messages API's, whose errors take
// Anthropic's shape.
func isMessagesPath(path []byte) bool {
	return string(path) == messagesPath || string(path) == countTokensPath
}

// defaultAnthropicVersion is sent upstream when the client sends no anthropic-version.
const defaultAnthropicVersion = "2023-06-01"

// messagesRun is one POST /v1/messages request. It reuses the chat request's machinery
// (requestRun: the model call, the tool loop, limits, metrics) with the core request.
type messagesRun struct {
	c *requestRun
	// body is the client's Messages body; c.req.Body is its OpenAI chat equivalent.
	body []byte
	// pass is set when the body is forwarded as bytes to anthropic backends.
	pass bool
	// header is the client request's header (anthropic-version, anthropic-beta).
	header *fasthttp.RequestHeader
}

func (s *Server) handleMessages(ctx *fasthttp.RequestCtx, rid string) {
	s.serve(ctx, rid, "msg_", apiMessages, func(body []byte, c *requestRun) (*translate.Request, endpointRun, error) {
		req, err := messagesin.ParseWithin(body, false, s.maxInflated)
		if err != nil {
			return nil, nil, err
		}
		return req, &messagesRun{c: c, body: append([]byte(nil), body...), header: &ctx.Request.Header}, nil
	})
}

// prepare resolves server tools, picks the path (passthrough or translation) and applies
// the unsupported-parameter policy of the translated path.
func (m *messagesRun) prepare() error {
	c, h := m.c, m.header
	if err := c.serverTools(); err != nil {
		return err
	}
	m.pass = allBackends(c, "anthropic")
	if m.pass {
		version := string(h.Peek("Anthropic-Version"))
		if version == "" {
			version = defaultAnthropicVersion
		}
		c.call.headers = []translate.Header{{Name: "anthropic-version", Value: version}}
		if betas := h.PeekAll("Anthropic-Beta"); len(betas) > 0 {
			// Each backend gets the names its allowed_betas list (betas.go).
			values := make([][]byte, len(betas))
			for i, v := range betas {
				values[i] = bytes.Clone(v)
			}
			c.call.betas = &clientBetas{values: values}
		}
		return nil
	}
	b := c.route.backend
	// Fields the parser did not know: an Anthropic client's newer options, which Claude
	// Code must not see refused. They are dropped and counted.
	for _, f := range c.req.Extra {
		c.s.metrics.DroppedParams.WithLabelValues(b.name, paramLabel(f.Name)).Inc()
	}
	c.req.Extra = nil
	// metadata.user_id, which Claude Code always sends, has no Gemini counterpart: dropped
	// rather than refused.
	if c.req.User != "" && anyBackend(c, "gemini") {
		c.s.metrics.DroppedParams.WithLabelValues(b.name, paramLabel("user")).Inc()
		c.req.User = ""
	}
	if c.req.TopK != nil && (b.typ == "openai" || b.typ == "responses") {
		if !b.cfg.DropUnsupportedParams {
			return translate.Unsupported("top_k", b.typ)
		}
		c.s.metrics.DroppedParams.WithLabelValues(b.name, paramLabel("top_k")).Inc()
		c.req.TopK = nil
	}
	return nil
}

// allBackends reports whether the route and all its fallbacks are backends of type typ
// and the request runs no tool loop: the condition of a passthrough.
func allBackends(c *requestRun, typ string) bool {
	if len(c.defs) > 0 || c.route.backend.typ != typ {
		return false
	}
	for _, fb := range c.route.fallbacks {
		if r, ok := c.rt.routes[fb]; !ok || r.backend.typ != typ {
			return false
		}
	}
	return true
}

// anyBackend reports whether the route or one of its fallbacks is a backend of type typ.
func anyBackend(c *requestRun, typ string) bool {
	if c.route.backend.typ == typ {
		return true
	}
	for _, fb := range c.route.fallbacks {
		if r, ok := c.rt.routes[fb]; ok && r.backend.typ == typ {
			return true
		}
	}
	return false
}

// messagesOut writes events to the client as the Messages event stream; see sseOut, whose
// buffering and flushing it shares.
type messagesOut struct {
	sseOut
	menc *messagesin.Encoder
}

func (o *messagesOut) Event(ev *translate.Event) error {
	if ev.Kind == translate.EventError {
		return nil // returned by the decoder as its error; written by writeStream
	}
	o.commit()
	if o.c.firstT.IsZero() && isContent(ev.Kind) {
		o.c.firstT = time.Now()
	}
	var err error
	o.buf, err = o.menc.Encode(o.buf[:0], ev)
	if err != nil {
		return err
	}
	return o.write()
}

// KeepAlive sends a ping, after message_start: a Messages stream opens with it.
func (o *messagesOut) KeepAlive() error {
	o.commit()
	o.buf = o.buf[:0]
	if !o.menc.Started() {
		o.buf, _ = o.menc.Encode(o.buf, &translate.Event{Kind: translate.EventStart})
	}
	o.buf = messagesin.AppendPing(o.buf)
	return o.flush()
}

// stream serves a streaming request (requestRun.runStream).
func (m *messagesRun) stream(ctx *fasthttp.RequestCtx) { m.c.runStream(ctx, m) }

func (m *messagesRun) errorBody(a apiError) []byte {
	return messagesin.AppendError(nil, a.Status, a.Message, m.c.rid)
}

func (m *messagesRun) errorEventBody(a apiError) []byte {
	return messagesin.AppendErrorEvent(nil, a.Status, a.Message, m.c.rid)
}

// errReported is returned by the passthrough when the upstream's own error event was
// forwarded: the stream has its error and needs no other.
var errReported = errors.New("upstream error event forwarded")

func (m *messagesRun) writeStream(ctx context.Context, cancel context.CancelFunc, w *bufio.Writer, started chan<- *apiError) {
	c := m.c
	o := &messagesOut{sseOut: sseOut{c: c, w: w, cancel: cancel, started: started}, menc: messagesin.NewEncoder(c.responseID(), c.req.Model)}
	c.call.flush = o.sync
	var err error
	if m.pass {
		err = m.forwardStream(ctx, o)
	} else {
		err = c.execute(ctx, o, true)
	}
	code := 200
	switch {
	case !c.committed:
		code = c.refuse(err, started, w, m)
	case errors.Is(err, errReported):
		o.sync()
	case err != nil && !errors.Is(err, errClientGone):
		a := c.s.render(c.rid, err)
		o.buf = messagesin.AppendErrorEvent(o.buf[:0], a.Status, a.Message, c.rid)
		o.flush()
	case err == nil && !m.pass:
		o.buf = o.menc.Finish(o.buf[:0])
		o.flush()
	}
	if errors.Is(err, errClientGone) || errors.Is(err, context.Canceled) {
		code = 499
	}
	c.finish(nil, code, true)
}

// complete serves a non-streaming request.
func (m *messagesRun) complete(ctx *fasthttp.RequestCtx) {
	c := m.c
	cctx, cancel := context.WithCancel(c.traced(c.s.baseCtx)) // tracing.go
	defer cancel()
	var body []byte
	var err error
	if m.pass {
		body, err = m.forwardComplete(cctx)
	} else {
		var a messagesin.Assembler
		err = c.execute(cctx, messagesAssembler{&a}, false)
		if err == nil && a.Err != nil {
			err = a.Err
		}
		body = a.AppendMessage(nil, c.responseID(), c.req.Model)
	}
	if err != nil {
		c.s.fail(ctx, c.rid, err, c.route.label(), c.route.backend.name, c.key.name, "false")
		c.finish(ctx, 0, false)
		return
	}
	ctx.SetStatusCode(200)
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
	c.finish(ctx, 200, false)
}

// messagesAssembler collects events for a non-streaming client.
type messagesAssembler struct{ a *messagesin.Assembler }

func (o messagesAssembler) Event(ev *translate.Event) error { return o.a.Add(ev) }
func (o messagesAssembler) KeepAlive() error                { return nil }

// passBody returns the client's body with the top-level model set to the route's upstream
// model, its other members as the client sent them. The parser has checked that no member
// is named twice or in another case, so every decoder reads the same request.
func (m *messagesRun) passBody(dst []byte, r *route) []byte {
	return messagesin.AppendPassBody(dst, m.body, r.upstreamModel)
}

// passAttempt sends the client's body to the anthropic route r and hands the accepted
// exchange to consume; the usage consume reports through c.lastUsage is counted by the
// attempt (modelCall.counted).
func (m *messagesRun) passAttempt(ctx context.Context, r *route, stream bool, consume func(*exchange) error) error {
	c := m.c.call
	c.prompt = m.c.req
	c.buf = m.passBody(c.takeBuf(), r)
	x, err := c.send(ctx, r, c.options(r, stream))
	if err != nil {
		return err
	}
	defer x.Close()
	return consume(x)
}

// forwardStream is the anthropic passthrough for streams. Every upstream event is read by
// the anthropic stream decoder, which checks it and keeps the usage, then forwarded as it
// came, except message_start, whose model becomes the client-facing one. An upstream error
// event is forwarded and ends the stream; a stream that ends before message_stop ends with
// an error event.
func (m *messagesRun) forwardStream(ctx context.Context, o *messagesOut) error {
	c := m.c.call
	return c.withRetries(ctx, func(ctx context.Context, r *route) error {
		return m.passAttempt(ctx, r, true, func(x *exchange) error {
			body, err := decodedBody(x, r.backend.name)
			if err != nil {
				return err
			}
			dec := r.backend.provider.NewStreamDecoder(nil)
			keepUsage := func(ev *translate.Event) error {
				switch ev.Kind {
				case translate.EventTextDelta, translate.EventReasoningDelta, translate.EventToolCallArgsDelta:
					c.noteOutput(len(ev.Text))
				case translate.EventToolCallStart:
					c.noteOutput(len(ev.Name))
				case translate.EventUsage:
					c.noteUsage(ev.Usage)
				}
				return nil
			}
			err = c.pumpSSE(ctx, body, r.backend.name, func(typ, data []byte) error {
				if err := dec.Event(typ, data, keepUsage); err != nil {
					if string(typ) != "error" {
						return err
					}
					o.commit()
					o.buf = appendSSE(o.buf[:0], typ, data)
					if werr := o.write(); werr != nil {
						return werr
					}
					return fmt.Errorf("%w: %w", errReported, err)
				}
				c.sent = true
				o.commit()
				if string(typ) == "message_start" {
					if d, err := sjson.SetBytes(data, "message.model", m.c.req.Model); err == nil {
						data = d
					}
				} else if o.c.firstT.IsZero() && string(typ) == "content_block_delta" {
					o.c.firstT = time.Now()
				}
				o.buf = appendSSE(o.buf[:0], typ, data)
				return o.write()
			}, o.sync, func() error { return dec.Close(keepUsage) })
			c.noteUsageSoFar(dec, err) // usage.go: the figures of message_start and message_delta
			return err
		})
	})
}

// appendSSE appends one SSE event. Data the upstream sent on several data lines (the SSE
// parser joined them with line feeds, and a data value holds no other line end) is written
// back one line per data field, so that the client's SSE parser reads exactly data; written
// on one data line, its first line feed would end the field and cut the event.
func appendSSE(dst, typ, data []byte) []byte {
	if len(typ) > 0 {
		dst = append(dst, "event: "...)
		dst = append(dst, typ...)
		dst = append(dst, '\n')
	}
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		dst = append(dst, "data: "...)
		dst = append(dst, data[:i+1]...)
		data = data[i+1:]
	}
	dst = append(dst, "data: "...)
	dst = append(dst, data...)
	return append(dst, "\n\n"...)
}

// forwardComplete is the anthropic passthrough for non-streaming requests: the upstream's
// Message, checked by the anthropic decoder, with the client-facing model.
func (m *messagesRun) forwardComplete(ctx context.Context) ([]byte, error) {
	c := m.c.call
	var out []byte
	err := c.withRetries(ctx, func(ctx context.Context, r *route) error {
		return m.passAttempt(ctx, r, false, func(x *exchange) error {
			body, err := readBody(ctx, x, r.backend.name, nil)
			if err != nil {
				return err
			}
			if !messagesin.IsObject(body) {
				return upstreamFault(r.backend.name, "answered with a body that is not a JSON object")
			}
			err = r.backend.provider.DecodeResponse(body, func(ev *translate.Event) error {
				if ev.Kind == translate.EventUsage {
					c.lastUsage = ev.Usage
				}
				return nil
			})
			if err != nil {
				return err
			}
			out, err = sjson.SetBytes(body, "model", m.c.req.Model)
			return err
		})
	})
	return out, err
}
