package proxy

import (
	"context"
	"errors"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/openai"
	"github.com/agate-gateway/agate/translate/openaichat"
	"github.com/agate-gateway/agate/upstream"
)

// chatRun is the chat completions API's side of the request path (endpointRun): the
// requestRun itself, under the methods of the chat completions API.
type chatRun requestRun

func (s *Server) handleChat(ctx *fasthttp.RequestCtx, rid string) {
	s.serve(ctx, rid, "chatcmpl-", apiChat, func(body []byte, c *requestRun) (*translate.Request, endpointRun, error) {
		// Lazily: a passthrough forwards the body and never reads the message strings,
		// so their escapes are decoded only for a request that does (prepare).
		//
		// Without a copy when no tracer runs: fasthttp leaves the request's body buffer
		// unchanged until the response, a stream's included, is written, and nothing of
		// a chat request outlives its response but the attributes of its spans, which a
		// tracer exports later.
		// The request and its message arrays are built in a recycled Scratch, which the
		// run gives back when it is over (requestRun.releaseScratch): kept in c, not in a
		// closure, which would be allocated.
		//
		// The messages are checked but not built until something reads them
		// (request_head.go) when the request may be passed through.
		if s.tracer == nil {
			sc, st := c.chatParseMemory() // the run's own, kept from its last request, or pooled
			req, complete, err := openaichat.ParseHead(jsonx.View(body), sc, st, s.maxInflated, s.passesOpenAI)
			c.keepStage(st, err == nil && req.Stream, len(body)) // a stage is needed only while the parse runs
			if err != nil {
				c.keepChatScratch(sc) // a refused request's run is recycled (serve)
				return nil, nil, err
			}
			c.scratch = sc
			if !complete {
				c.deferred, c.ownCall.meter.pending = (*chatRun)(c), c
			}
			return req, (*chatRun)(c), nil
		}
		req, err := openaichat.ParseRequestLazyStringWithin(string(body), nil, nil, s.maxInflated)
		return req, (*chatRun)(c), err
	})
}

// prepare merges the key's server tools, if any, into the request (a client tool named
// like one is an error), then decodes the message strings the lazy parse left escaped
// unless nothing reads them decoded: the passthrough forwards them as they are, and an
// encoder that is a translate.LiteralReader writes them from their escapes. The tool
// loop reads them, and so does tracing (content capture).
func (c *chatRun) prepare() error {
	if err := (*requestRun)(c).serverTools(); err != nil {
		return err
	}
	if !c.passthrough() {
		(*requestRun)(c).fullRequest() // translated, or the tool loop: the messages are read
	}
	if c.s.tracer != nil || !(c.passthrough() || c.readsLiterals()) || (*requestRun)(c).caching() {
		openaichat.DecodeInto(c.req, c.scratch) // c.scratch is nil unless the request is in it
	}
	return nil
}

// buildRequest completes the request openaichat.ParseHead read (request_head.go), in a
// Stage of the server's pool. ParseHead vouched for the body, so the full parse accepts
// it (FuzzParseHeadMatchesParse); should it not, the request stays without messages and
// the failure is logged, without the body.
func (c *chatRun) buildRequest() {
	st := c.s.stages.get()
	err := openaichat.Build(c.req, st, c.s.maxInflated)
	c.s.stages.put(st)
	if err != nil {
		c.s.logger.Error("the full parse of a chat request refused what its first pass accepted",
			"request_id", c.rid)
	}
}

// speaksOpenAI accepts the backends of the chat passthrough (passthrough).
func speaksOpenAI(r *route) bool { return r.backend.dialect == "openai" }

// readsLiterals reports whether, without server tools, every backend the run may call
// (the route's, then its fallbacks') encodes the request's strings as the lazy parse
// leaves them (translate.LiteralReader).
func (c *chatRun) readsLiterals() bool {
	if len(c.defs) > 0 || !readsLiterals(c.route.backend) {
		return false
	}
	for _, fb := range c.route.fallbacks {
		if r, ok := c.rt.routes[fb]; !ok || !readsLiterals(r.backend) {
			return false
		}
	}
	return true
}

func readsLiterals(b *backend) bool {
	_, ok := b.provider.(translate.LiteralReader)
	return ok
}

// passthrough reports whether the request can be forwarded as raw bytes: no tool loop, and
// the route and all its fallbacks are OpenAI-compatible upstreams.
func (c *chatRun) passthrough() bool {
	return !(*requestRun)(c).caching() && allRoutes((*requestRun)(c), speaksOpenAI)
}

// forwarder returns the OpenAI passthrough when the request goes to OpenAI-compatible
// upstreams only (passthrough).
func (c *chatRun) forwarder() forwarder {
	if c.passthrough() {
		return (*chatForward)(c)
	}
	return nil
}

func (c *chatRun) streamEncoder() translate.ClientStream {
	return openaichat.NewChunkEncoder((*requestRun)(c).responseID(), c.req.Model, time.Now().Unix(), c.req.IncludeUsage)
}

// assembler returns a chat.completion collector over one of the server's pooled
// Assemblers, given back with the run's other memory (releaseScratch).
func (c *chatRun) assembler() translate.ClientAssembler {
	c.completion = openaichat.Completion{A: c.s.assemblers.get(), ID: (*requestRun)(c).responseID(), Model: c.req.Model, Now: unixNow}
	return &c.completion
}

func (c *chatRun) answered(context.Context, []byte) {}

func (c *chatRun) finish(ctx *fasthttp.RequestCtx, code int, stream bool) {
	(*requestRun)(c).finish(ctx, code, stream)
}

// chatForward is the chat completions API's side of the passthrough (forwarder): upstream
// chunks are forwarded with the client-facing model (the requested one, or the configured
// name of the fallback that answered), a constant id and created (see
// openai.ChunkRewriter), and the usage (which Agate always requests, to count tokens)
// dropped unless the client asked for it. A payload that is not a JSON object, an
// upstream error object, or a stream that ends before [DONE] or a finish_reason is an
// error. A whole completion is rewritten by openai.RewriteCompletion.
type chatForward requestRun

// request phrases the request for the route's provider (openai's, which forwards the
// client's members), as the translated path would, recording it for tracing.
func (f *chatForward) request(dst []byte, r *route, opts *translate.Options) ([]byte, error) {
	f.call.chat.Request(f.req, opts.Stream, opts.DefaultMaxTokens)
	if f.call.resume.fwd.prefill != "" && f.call.resume.active {
		return f.appendPrefilled(dst, r, opts) // a continuation's (continuation_chat.go)
	}
	return r.backend.provider.AppendRequest(dst, f.req, opts)
}

func (f *chatForward) errors() translate.ClientErrors { return openaichat.Errors{} }

// begin starts an attempt's stream from route r, whose chunks name r's model: the
// requested one, or the fallback's configured name.
func (f *chatForward) begin(r *route) {
	if f.chunks == nil {
		f.chunks = &chatChunks{model: jsonx.AppendString(nil, f.req.Model)}
	}
	model := f.chunks.model
	if r != f.route {
		model = jsonx.AppendString(nil, r.name) // a fallback's stream: once a request
	}
	prev := f.chunks.rw
	*f.chunks = chatChunks{model: f.chunks.model, rw: openai.ChunkRewriter{Backend: r.backend.name, Model: model,
		FallbackID: (*requestRun)(f).responseID(), IncludeUsage: f.req.IncludeUsage, Now: unixNow}}
	f.call.resume.malformed = 0
	if f.call.resume.active {
		f.chunks.rw.KeepHead(&prev) // a continuation: the client's stream goes on
	}
}

func (f *chatForward) event(dst, _, data []byte, m *meter) ([]byte, passed, error) {
	ch := f.chunks
	if string(data) == "[DONE]" {
		if k := &f.call.resume; k.active && k.fwd.seen < k.fwd.n {
			return dst, 0, errDiverged // a continuation that ended before repeating the client's text
		}
		ch.finished = true
		return append(dst, "data: [DONE]\n\n"...), passSent | passWrite, nil
	}
	mark := len(dst)
	var chunk openai.Chunk
	dst, err := ch.rw.AppendChunkTo(dst, data, &chunk)
	if err != nil {
		if errors.Is(err, translate.ErrMalformedEvent) {
			return dst, 0, f.call.skipMalformed(f.call.at.backend, err) // skipped, unless one too many
		}
		return dst, passSent, err
	}
	m.noteOutput(chunk.OutputBytes) // estimated if no usage follows
	if chunk.HasUsage {
		m.noteUsage(chunk.Usage)
		if !f.req.IncludeUsage && chunk.Choices == 0 {
			return dst, passSent, nil // asked for by the gateway, not by the client
		}
	}
	how := passSent | passWrite | passContent | passFirstChunk
	if f.call.resume.on {
		if dst, how, err = f.follow(dst, mark, &chunk); err != nil {
			return dst, how, err
		}
	}
	ch.finished = ch.finished || chunk.Finished
	return dst, how, nil
}

func (f *chatForward) end(err error, _ *meter) error {
	if err == nil && !f.chunks.finished {
		return upstream.Fault(f.chunks.rw.Backend, "ended the stream before it finished")
	}
	return err
}

func (f *chatForward) whole(dst, body []byte, r *route, m *meter) ([]byte, error) {
	out, u, err := openai.RewriteCompletion(dst, r.backend.name, body, r.name) // the requested model, or the fallback that answered
	if err != nil {
		return out, err
	}
	m.noteUsage(u)
	if u == (translate.Usage{}) { // an upstream that reports none
		m.noteOutput(openai.CompletionOutputBytes(body))
	}
	return out, nil
}
