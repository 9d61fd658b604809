package proxy

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/loop"
	"github.com/agate-gateway/agate/telemetry"
	"github.com/agate-gateway/agate/tools"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/openai"
	"github.com/agate-gateway/agate/translate/openaichat"
)

// requestRun is one chat completions request after authentication, parsing and routing.
type requestRun struct {
	s     *Server
	rt    *runtime
	key   *apiKey
	route *route
	req   *translate.Request
	rid   string
	// id is the client-facing response id (responseID), idPrefix its prefix.
	id, idPrefix string
	start        time.Time
	call         *modelCall
	// ownCall is where call points (one allocation for both).
	ownCall modelCall
	// out is where execute sends the events of the model call, through toOut (outEvent
	// as a func value, made once per requestRun).
	out    loop.Output
	toOut  translate.Emit
	defs   []tools.Definition // server tools of this key; none means no tool loop
	firstT time.Time
	// committed is set once the stream writer told the handler how to answer.
	committed bool
	limits    limitRun // limits.go
	// api is the api label of the request metrics; empty means apiChat.
	api string
	// scratch holds req's memory when the chat endpoint parsed it into one; released
	// when the run is over (releaseScratch).
	scratch *openaichat.Scratch
	// completion is a non-streamed chat answer's assembler (its Assembler pooled, given
	// back by releaseScratch), collected its loop.Output: kept here, they cost no
	// allocation.
	completion openaichat.Completion
	collected  collect
	// chunks is the state of a forwarded chat stream (chatForward).
	chunks *chatChunks

	// span is the server span (tracing.go); nil when tracing is off.
	span *telemetry.Request
}

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
		if s.tracer == nil {
			sc, st := s.scratches.get(), s.stages.get()
			req, err := openaichat.ParseRequestLazyStringWithin(jsonx.View(body), sc, st, s.maxInflated)
			s.stages.put(st) // a stage is needed only while the parse runs
			if err != nil {
				s.scratches.put(sc)
				return nil, nil, err
			}
			c.scratch = sc
			return req, c, nil
		}
		req, err := openaichat.ParseRequestLazyStringWithin(string(body), nil, nil, s.maxInflated)
		return req, c, err
	})
}

// prepare merges the key's server tools, if any, into the request (a client tool named
// like one is an error), then decodes the message strings the lazy parse left escaped
// unless nothing reads them decoded: the passthrough forwards them as they are, and an
// encoder that is a translate.LiteralReader writes them from their escapes. The tool
// loop reads them, and so does tracing (content capture).
func (c *requestRun) prepare() error {
	if err := c.serverTools(); err != nil {
		return err
	}
	if c.s.tracer != nil || !(c.passthrough() || c.readsLiterals()) {
		openaichat.DecodeInto(c.req, c.scratch) // c.scratch is nil unless the request is in it
	}
	return nil
}

// readsLiterals reports whether, without server tools, every backend the run may call
// (the route's, then its fallbacks') encodes the request's strings as the lazy parse
// leaves them (translate.LiteralReader).
func (c *requestRun) readsLiterals() bool {
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

// serverTools resolves the key's server tools, if any, into c.defs and rejects client
// tools named like one of them.
func (c *requestRun) serverTools() error {
	if len(c.key.tools) == 0 || c.s.tools == nil {
		return nil
	}
	defs, err := c.s.tools.Resolve(c.key.tools)
	if err == nil {
		err = mergeServerTools(c.req, defs)
	}
	if err != nil {
		return err
	}
	c.defs = defs
	return nil
}

// label is the bounded metric label of the route (see route.metricLabel).
func (r *route) label() string { return r.metricLabel }

// mergeServerTools rejects client tools whose names clash with server tools. The server
// definitions themselves are added by the loop.
func mergeServerTools(req *translate.Request, defs []tools.Definition) error {
	for i, t := range req.Tools {
		for _, d := range defs {
			if t.Name == d.Name {
				return translate.Errorf("tools["+strconv.Itoa(i)+"].function.name",
					"the tool name %q is reserved by a server-side tool of this key", t.Name)
			}
		}
	}
	return nil
}

// passthrough reports whether the request can be forwarded as raw bytes: no tool loop, and
// the route and all its fallbacks are OpenAI-compatible upstreams.
func (c *requestRun) passthrough() bool {
	if len(c.defs) > 0 || c.route.backend.typ != "openai" {
		return false
	}
	for _, fb := range c.route.fallbacks {
		if r, ok := c.rt.routes[fb]; !ok || r.backend.typ != "openai" {
			return false
		}
	}
	return true
}

// loopKeepAlive is how often a streaming client is pinged (an SSE comment) while server
// tools run. A ping is also how a departed client is noticed, so it is short.
const loopKeepAlive = time.Second

// execute produces the response's events into out: a tool loop, or one model call.
func (c *requestRun) execute(ctx context.Context, out loop.Output, stream bool) error {
	if len(c.defs) > 0 {
		l := &loop.Loop{Model: c.call, Tools: c.s.tools, Definitions: c.defs,
			MaxIterations: c.key.maxIterations, Observer: c.s.loopObserver(), Logger: c.call.log(),
			MaxCallsPerTurn: c.key.maxCallsPerTurn, MaxConcurrentCalls: c.key.maxConcurrentCalls, Caller: c.key.name,
			KeepAliveInterval: loopKeepAlive, Tracer: c.s.tracer}
		return l.Run(ctx, c.req, out)
	}
	// out.Event as a func value would be allocated on each request: c.toOut, made once
	// per requestRun (Reset keeps it), reads c.out instead.
	c.out = out
	if c.toOut == nil {
		c.toOut = c.outEvent
	}
	if stream {
		return c.call.Stream(ctx, c.req, c.toOut)
	}
	return c.call.Complete(ctx, c.req, c.toOut)
}

func (c *requestRun) outEvent(ev *translate.Event) error { return c.out.Event(ev) }

// complete serves a non-streaming request of any client API: run's answer, forwarded
// (passthrough.go) or translated and collected by run's assembler, is written into the
// response's own pooled buffer.
func (c *requestRun) complete(ctx *fasthttp.RequestCtx, run endpointRun) {
	// One model call runs in this goroutine and is over when complete returns: it needs
	// no context of its own. A tool loop may leave tool calls running; its context ends
	// them.
	cctx := c.traced(c.s.baseCtx) // tracing.go
	if len(c.defs) > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithCancel(cctx)
		defer cancel()
	}
	dst := ctx.Response.SwapBody(nil)
	var body []byte
	var err error
	if f := run.forwarder(); f != nil {
		body, err = c.forwardComplete(cctx, f, dst) // passthrough.go
	} else {
		c.collected = collect{run.assembler()}
		if err = c.execute(cctx, &c.collected, false); err == nil {
			body, err = c.collected.a.AppendBody(dst[:0])
		}
	}
	if err != nil {
		ctx.Response.SwapBody(dst)
		c.s.fail(ctx, c.rid, err, c.route.label(), c.route.backend.name, c.key.name, "false")
		run.finish(ctx, 0, false)
		return
	}
	run.answered(cctx, body)
	ctx.SetStatusCode(200)
	ctx.SetContentType("application/json")
	ctx.Response.SwapBody(body)
	run.finish(ctx, 200, false)
}

// collect is the loop.Output of a non-streamed answer: its client dialect's assembler.
type collect struct{ a translate.ClientAssembler }

func (o *collect) Event(ev *translate.Event) error { return o.a.Add(ev) }
func (o *collect) KeepAlive() error                { return nil }

// unixNow is the clock of the answers' creation and completion times.
func unixNow() int64 { return time.Now().Unix() }

// The chat completions API's side of the request path (endpointRun): the requestRun
// itself.

// forwarder returns the OpenAI passthrough when the request goes to OpenAI-compatible
// upstreams only (passthrough).
func (c *requestRun) forwarder() forwarder {
	if c.passthrough() {
		return (*chatForward)(c)
	}
	return nil
}

func (c *requestRun) streamEncoder() translate.ClientStream {
	return openaichat.NewChunkEncoder(c.responseID(), c.req.Model, time.Now().Unix(), c.req.IncludeUsage)
}

// assembler returns a chat.completion collector over one of the server's pooled
// Assemblers, given back with the run's other memory (releaseScratch).
func (c *requestRun) assembler() translate.ClientAssembler {
	c.completion = openaichat.Completion{A: c.s.assemblers.get(), ID: c.responseID(), Model: c.req.Model, Now: unixNow}
	return &c.completion
}

func (c *requestRun) answered(context.Context, []byte) {}

// chatForward is the chat completions API's side of the passthrough (forwarder): upstream
// chunks are forwarded with the client-facing model, a constant id and created (see
// openai.ChunkRewriter), and the usage (which Agate always requests, to count tokens)
// dropped unless the client asked for it. A payload that is not a JSON object, an
// upstream error object, or a stream that ends before [DONE] or a finish_reason is an
// error. A whole completion is rewritten by openai.RewriteCompletion.
type chatForward requestRun

// chatChunks is a forwarded stream's state: made once a stream, reset every attempt.
type chatChunks struct {
	rw       openai.ChunkRewriter
	model    []byte // the client-facing model, a JSON string
	finished bool
}

// request phrases the request for the route's provider (openai's, which forwards the
// client's members), as the translated path would, recording it for tracing.
func (f *chatForward) request(dst []byte, r *route, opts *translate.Options) ([]byte, error) {
	f.call.chat.Request(f.req, opts.Stream, opts.DefaultMaxTokens) // tracing.go
	return r.backend.provider.AppendRequest(dst, f.req, opts)
}

func (f *chatForward) errors() translate.ClientErrors { return openaichat.Errors{} }

func (f *chatForward) begin(r *route) {
	if f.chunks == nil {
		f.chunks = &chatChunks{model: jsonx.AppendString(nil, f.req.Model)}
	}
	*f.chunks = chatChunks{model: f.chunks.model, rw: openai.ChunkRewriter{Backend: r.backend.name, Model: f.chunks.model,
		FallbackID: (*requestRun)(f).responseID(), IncludeUsage: f.req.IncludeUsage, Now: unixNow}}
}

func (f *chatForward) event(dst, _, data []byte, m *meter) ([]byte, passed, error) {
	ch := f.chunks
	if string(data) == "[DONE]" {
		ch.finished = true
		return append(dst, "data: [DONE]\n\n"...), passSent | passWrite, nil
	}
	dst, chunk, err := ch.rw.AppendChunk(dst, data)
	if err != nil {
		return dst, passSent, err
	}
	m.noteOutput(chunk.OutputBytes) // estimated if no usage follows
	if chunk.HasUsage {
		m.noteUsage(chunk.Usage)
		if !f.req.IncludeUsage && chunk.Choices == 0 {
			return dst, passSent, nil // asked for by the gateway, not by the client
		}
	}
	ch.finished = ch.finished || chunk.Finished
	return dst, passSent | passWrite | passContent | passFirstChunk, nil
}

func (f *chatForward) end(err error, _ *meter) error {
	if err == nil && !f.chunks.finished {
		return upstreamFault(f.chunks.rw.Backend, "ended the stream before it finished")
	}
	return err
}

func (f *chatForward) whole(dst, body []byte, r *route, m *meter) ([]byte, error) {
	out, u, err := openai.RewriteCompletion(dst, r.backend.name, body, f.req.Model)
	if err != nil {
		return out, err
	}
	m.noteUsage(u)
	if u == (translate.Usage{}) { // usage.go: an upstream that reports none
		m.noteOutput(openai.CompletionOutputBytes(body))
	}
	return out, nil
}

// finish records the request's metrics and access line (requestDone). code 0 means the
// funnel already counted it. ctx is the request's when its answer is not streamed and not
// yet written, nil otherwise: the record is then left to the connection, to be made once
// the answer is written, unless tracing is on (the server span ends with the handler).
func (c *requestRun) finish(ctx *fasthttp.RequestCtx, code int, stream bool) {
	api := c.api
	if api == "" {
		api = apiChat
	}
	now := time.Now() // one reading for the histogram, the log line and its time
	d := requestDone{series: c.call.seriesOf(c.route), logger: c.s.logger, span: c.span, rid: c.rid,
		label: c.route.label(), backend: c.route.backend.name, key: c.key.name, api: api,
		code: code, stream: stream, at: now, took: now.Sub(c.start),
		prompt: c.call.Usage.PromptTokens, completion: c.call.Usage.CompletionTokens, estimated: c.call.Estimated}
	if !c.firstT.IsZero() {
		d.ttft = c.firstT.Sub(c.start)
	}
	c.traceFinish(code, stream) // tracing.go
	if conn, ok := answerConn(ctx); ok && c.span == nil {
		conn.done.leave(d)
		return
	}
	d.record()
}

// answerConn returns the client connection of ctx, when the gateway's listener accepted
// it; ctx may be nil.
func answerConn(ctx *fasthttp.RequestCtx) (*clientConn, bool) {
	if ctx == nil {
		return nil, false
	}
	conn, ok := ctx.Conn().(*clientConn)
	return conn, ok
}

// responseID returns the client-facing response id, made on first use: the answer of a
// non-streamed passthrough keeps the upstream's and needs none. A streamed request's is
// made before its goroutines start (serve), so that they only read it.
func (c *requestRun) responseID() string {
	if c.id == "" {
		c.id = newID(c.idPrefix)
	}
	return c.id
}

// Reset empties c for its next request (Server.runs): nothing of the request it served
// stays reachable through it.
func (c *requestRun) Reset() {
	// The two func values close over c itself, so they stay right for its next request.
	toOut, countFn := c.toOut, c.ownCall.countFn
	*c = requestRun{}
	c.toOut, c.ownCall.countFn = toOut, countFn
}

// releaseScratch gives the memory c.req was parsed into, and the Assembler of a chat
// answer, back for another request: only once the run is over, when nothing reads c.req
// any more (serve, or the stream writer's end). A run whose request is not in a Scratch
// has nothing to give back.
func (c *requestRun) releaseScratch() {
	if c.scratch != nil {
		c.s.scratches.put(c.scratch)
		c.scratch = nil
	}
	if c.completion.A != nil {
		c.s.assemblers.put(c.completion.A)
		c.completion.A = nil
	}
}

// recycler is a pool of values reset when put back: the Assemblers of non-streamed
// answers, the Scratches chat requests are parsed into and the Stages they are parsed
// with.
type recycler[T any, P interface {
	*T
	Reset()
}] struct{ p sync.Pool }

func (r *recycler[T, P]) get() P {
	if v, ok := r.p.Get().(P); ok {
		return v
	}
	return P(new(T))
}

// put resets v and keeps it; nothing may use v, or what it held, after.
func (r *recycler[T, P]) put(v P) {
	v.Reset()
	r.p.Put(v)
}
