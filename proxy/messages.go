package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/tidwall/sjson"
	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/converse"
	"github.com/agate-gateway/agate/translate/messagesin"
	"github.com/agate-gateway/agate/upstream"
)

// POST /v1/messages serves Anthropic's Messages API over every backend, with the keys,
// allowlists, routing, fallbacks, retries, limits and tool loop of chat completions. To a
// route whose backends are all of type anthropic (and no server tools) the client's body
// is forwarded as bytes with the model rewritten, the client's anthropic-version and
// anthropic-beta headers passed on (the betas the backend's allowed_betas list: betaPolicy)
// and the gateway's credential in place of the client's;
// to any other it is read into the core request (translate/messagesin) and its events
// encoded as a Message or the Messages event stream. Errors, including those of the
// shared request path, are rendered in Anthropic's shape (see writeError).

// defaultAnthropicVersion is sent upstream when the client sends no anthropic-version.
const defaultAnthropicVersion = "2023-06-01"

// messagesRun is one POST /v1/messages request. It reuses the chat request's machinery
// (requestRun: the model call, the tool loop, limits, metrics) with the core request.
type messagesRun struct {
	c *requestRun
	// body is the client's Messages body; c.req.Body is its OpenAI chat equivalent.
	// splice says where the passthrough's body differs from it.
	body   []byte
	splice messagesin.PassBody
	// pass is set when the body is forwarded as bytes to anthropic backends.
	pass bool
	// header is the client request's header (anthropic-version, anthropic-beta).
	header *fasthttp.RequestHeader
	// The passthrough's (messagesForward): the attempt's stream decoder, keepUsage as a
	// func value and the meter it reports to.
	dec   translate.StreamDecoder
	keep  translate.Emit
	meter *meter
	// unwrap says the attempt's stream is Bedrock's, whose chunk events chunks unwraps.
	unwrap bool
	chunks *converse.ChunkReader
	// model is the attempt's client-facing model: the requested one, or the configured
	// name of the fallback that answers.
	model string
	// msg is the assembler of a translated answer (assembler): in the run, not an
	// allocation of its own.
	msg messagesin.Message
	// fol follows what the stream showed the client, to continue it (continuation_messages.go).
	fol msgFollow
}

func (s *Server) handleMessages(ctx *fasthttp.RequestCtx, rid string) {
	s.serve(ctx, rid, "msg_", apiMessages, func(body []byte, c *requestRun) (*translate.Request, endpointRun, error) {
		// One copy of the client's body (fasthttp reuses its buffer), which the passthrough
		// forwards and the request's strings are views of.
		own := append([]byte(nil), body...)
		// The text is left escaped until prepare knows who reads it, and the messages
		// unbuilt until something reads them (request_head.go), unless a span reads the
		// request before.
		var req *translate.Request
		var splice messagesin.PassBody
		var err error
		complete := true
		if s.tracer != nil {
			req, err = messagesin.ParseOwned(own, s.maxInflated)
		} else {
			// In a recycled Stage: a parse on the stack would grow the connection
			// goroutine's for the whole stream (messagesin.Stage).
			st := s.msgStages.get()
			req, splice, complete, err = st.ParseHead(own, s.maxInflated, s.passesMessages)
			s.msgStages.put(st)
		}
		if err != nil {
			return nil, nil, err
		}
		m := c.messagesRoom() // zero
		m.c, m.body, m.splice, m.header = c, own, splice, &ctx.Request.Header
		if !complete {
			c.deferred, c.ownCall.meter.pending = m, c
		}
		return req, m, nil
	})
}

// prepare resolves server tools, picks the path (passthrough or translation) and applies
// the unsupported-parameter policy of the translated path.
func (m *messagesRun) prepare() error {
	c, h := m.c, m.header
	if err := c.serverTools(); err != nil {
		return err
	}
	m.pass = allRoutes(c, speaksMessages) // anthropic backends, Claude on the clouds
	if !m.pass {
		c.fullRequest() // translated: the encoder reads the messages
	}
	// The text a lazy parse left escaped is decoded unless nothing reads it decoded: the
	// passthrough forwards the body as it came, and an encoder that is a
	// translate.LiteralReader writes it from its escapes (chatRun.prepare's rule).
	if (*requestRun)(c).caching() || !(m.pass || (*chatRun)(c).readsLiterals()) {
		messagesin.Decode(c.req)
	}
	if m.pass {
		// The usual version is the constant (no copy), in the call's own room (no
		// allocation): the upstream client finds it redundant with its head's.
		version := defaultAnthropicVersion
		if v := peekHeader(h, headerAnthropicVersion); len(v) > 0 && string(v) != defaultAnthropicVersion {
			version = string(v)
		}
		c.call.own[0] = translate.Header{Name: "anthropic-version", Value: version}
		c.call.headers = c.call.own[:1]
		// PeekAll copies and case-folds the name it is given (~400 instructions): asked
		// only when the canonical lookup finds one.
		if len(peekHeader(h, headerAnthropicBeta)) == 0 {
			return nil
		}
		if betas := h.PeekAll(headerAnthropicBeta); len(betas) > 0 {
			// Each backend gets the names its allowed_betas list (betaPolicy).
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

// The Messages API's side of the request path (endpointRun).

// forwarder returns the anthropic passthrough when the request goes to anthropic backends
// only.
func (m *messagesRun) forwarder() forwarder {
	if m.pass {
		return (*messagesForward)(m)
	}
	return nil
}

func (m *messagesRun) streamEncoder() translate.ClientStream {
	return messagesin.NewEncoder(m.c.responseID(), m.c.req.Model)
}

func (m *messagesRun) assembler() translate.ClientAssembler {
	m.msg = messagesin.Message{ID: m.c.responseID(), Model: m.c.req.Model}
	return &m.msg
}

func (m *messagesRun) answered(context.Context, []byte) {}

func (m *messagesRun) finish(ctx *fasthttp.RequestCtx, code int, stream bool) {
	m.c.finish(ctx, code, stream)
}

// passBody returns the client's body with the top-level model set to the route's upstream
// model, its other members as the client sent them. The parser has checked that no member
// is named twice or in another case, so every decoder reads the same request.
func (m *messagesRun) passBody(dst []byte, r *route) []byte {
	return m.splice.Append(dst, m.body, r.upstreamModel)
}

// messagesForward is the Messages API's side of the passthrough (forwarder): every
// upstream event is read by the anthropic stream decoder, which checks it and keeps the
// usage, then forwarded as it came, except message_start, whose model becomes the
// client-facing one (the requested one, or the configured name of the fallback that
// answered). An upstream error event is forwarded and ends the stream; a stream
// that ends before message_stop ends with an error event. A whole answer is the
// upstream's Message, checked in anthropic's one pass (ReadAnswer: its usage, an error
// object) or, on Bedrock, by its decoder, with the client-facing model.
type messagesForward messagesRun

func (f *messagesForward) request(dst []byte, r *route, _ *translate.Options) ([]byte, error) {
	if f.fol.prefill != "" && f.c.call.resume.active {
		return f.appendPrefilled(dst, r) // a continuation's
	}
	if c, ok := cloudClaude(r); ok {
		return f.cloudBody(dst, r, c), nil
	}
	return (*messagesRun)(f).passBody(dst, r), nil
}

func (f *messagesForward) errors() translate.ClientErrors { return messagesin.Errors{} }

func (f *messagesForward) begin(r *route) {
	if f.unwrap = r.backend.typ == "bedrock"; f.unwrap {
		f.beginBedrock(r)
	} else {
		f.dec = r.backend.provider.NewStreamDecoder(nil)
	}
	f.model = r.name // the requested model's (serve resolved it by name), or the fallback's
	f.c.call.resume.malformed = 0
	f.fol.begin(f.c.call.resume.active)
	if f.keep == nil {
		f.keep = f.keepUsage // a method value is allocated: once a request
	}
}

// keepUsage reports the output and usage of the decoder's events to the meter.
func (f *messagesForward) keepUsage(ev *translate.Event) error {
	if f.c.call.resume.on {
		f.fol.note(ev, &f.c.call.resume)
	}
	switch ev.Kind {
	case translate.EventTextDelta, translate.EventReasoningDelta, translate.EventToolCallArgsDelta:
		f.meter.noteOutput(len(ev.Text))
	case translate.EventToolCallStart:
		f.meter.noteOutput(len(ev.Name))
	case translate.EventUsage:
		f.meter.noteUsage(ev.Usage)
	}
	return nil
}

func (f *messagesForward) event(dst, typ, data []byte, m *meter) ([]byte, passed, error) {
	f.meter = m
	if f.unwrap { // Bedrock's chunk events (messages_cloud.go)
		var err error
		if data, typ, err = f.chunks.Read(typ, data); errors.Is(err, translate.ErrMalformedEvent) {
			return dst, 0, f.c.call.skipMalformed(f.c.call.at.backend, err) // skipped, unless one too many
		} else if err != nil {
			return dst, 0, err
		}
	}
	if err := f.dec.Event(typ, data, f.keep); err != nil {
		if string(typ) != "error" {
			if errors.Is(err, translate.ErrMalformedEvent) {
				return dst, 0, f.c.call.skipMalformed(f.c.call.at.backend, err) // skipped, unless one too many
			}
			return dst, 0, err
		}
		if f.continuesError(err) {
			return dst, 0, holdEvent(err, typ, data) // continued, or else forwarded (continuation_messages.go)
		}
		return appendSSE(dst, typ, data), passWrite, fmt.Errorf("%w: %w", errReported, err)
	}
	if f.c.call.resume.on {
		var skip bool
		var err error
		if dst, data, skip, err = f.follow(dst, typ, data); skip || err != nil {
			return dst, 0, err
		}
	}
	how := passSent | passWrite
	if string(typ) == "message_start" {
		if d, err := sjson.SetBytes(data, "message.model", f.model); err == nil {
			data = d
		}
	} else if string(typ) == "content_block_delta" {
		how |= passContent
	}
	return appendSSE(dst, typ, data), how, nil
}

func (f *messagesForward) end(err error, m *meter) error {
	if err == nil {
		f.meter = m
		err = f.dec.Close(f.keep)
	}
	m.noteUsageSoFar(f.dec, err) // the figures of message_start and message_delta
	return err
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

// messagesAnswerReader is a provider that reads a whole Messages answer for the
// passthrough in the one pass that checks it (anthropic's: anthropicProvider.ReadAnswer),
// which gives what messagesin.ReadAnswer and its DecodeResponse give.
type messagesAnswerReader interface {
	ReadAnswer(body []byte) (model translate.Span, usage translate.Usage, ok bool, err error)
}

func (f *messagesForward) whole(dst, body []byte, r *route, m *meter) ([]byte, error) {
	var model translate.Span
	if ar, ok := r.backend.provider.(messagesAnswerReader); ok {
		var u translate.Usage
		var err error
		if model, u, ok, err = ar.ReadAnswer(body); !ok {
			return dst, upstream.Fault(r.backend.name, "answered with a body that is not a JSON object")
		} else if err != nil {
			return dst, err
		}
		m.noteUsage(u)
	} else { // Bedrock's, whose DecodeResponse tells a Converse answer apart
		var ok bool
		if model, ok = messagesin.ReadAnswer(body); !ok {
			return dst, upstream.Fault(r.backend.name, "answered with a body that is not a JSON object")
		}
		err := r.backend.provider.DecodeResponse(body, func(ev *translate.Event) error {
			if ev.Kind == translate.EventUsage {
				m.noteUsage(ev.Usage)
			}
			return nil
		})
		if err != nil {
			return dst, err
		}
	}
	// The requested model, or the fallback that answered: set where the walk found it;
	// sjson adds it to an answer without one, and escapes a name that needs it.
	if model.End != 0 {
		if out, ok := messagesin.AppendModelAt(dst, body, model, r.name); ok {
			return out, nil
		}
	}
	out, err := sjson.SetBytes(body, "model", r.name)
	if err != nil {
		return dst, err
	}
	return append(dst, out...), nil
}
