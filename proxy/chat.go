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

// complete serves a non-streaming request.
func (c *requestRun) complete(ctx *fasthttp.RequestCtx) {
	// One model call runs in this goroutine and is over when complete returns: it needs
	// no context of its own. A tool loop may leave tool calls running; its context ends
	// them.
	cctx := c.traced(c.s.baseCtx) // tracing.go
	if len(c.defs) > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithCancel(cctx)
		defer cancel()
	}
	if c.passthrough() {
		body, err := c.call.forwardComplete(cctx, c.req, ctx.Response.SwapBody(nil))
		if err != nil {
			c.s.fail(ctx, c.rid, err, c.route.label(), c.route.backend.name, c.key.name, "false")
			c.finish(ctx, 0, false)
			return
		}
		ctx.SetStatusCode(200)
		ctx.SetContentType("application/json")
		ctx.Response.SwapBody(body) // written into the response's own pooled buffer
		c.finish(ctx, 200, false)
		return
	}
	a := c.s.assemblers.get()
	defer c.s.assemblers.put(a)
	err := c.execute(cctx, assemblerOut{a}, false)
	if err == nil && a.Err != nil {
		err = a.Err
	}
	if err != nil {
		c.s.fail(ctx, c.rid, err, c.route.label(), c.route.backend.name, c.key.name, "false")
		c.finish(ctx, 0, false)
		return
	}
	a.Finish()
	ctx.SetStatusCode(200)
	ctx.SetContentType("application/json")
	// Written into the response's own pooled buffer.
	ctx.Response.SwapBody(a.AppendCompletion(ctx.Response.SwapBody(nil)[:0], c.responseID(), c.req.Model, time.Now().Unix()))
	c.finish(ctx, 200, false)
}

// assemblerOut collects events for a non-streaming client.
type assemblerOut struct{ a *openaichat.Assembler }

func (o assemblerOut) Event(ev *translate.Event) error { return o.a.Add(ev) }
func (o assemblerOut) KeepAlive() error                { return nil }

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

// releaseScratch gives the memory c.req was parsed into back for another request: only
// once the run is over, when nothing reads c.req any more (serve, or the stream writer's
// end). A run whose request is not in a Scratch has nothing to give back.
func (c *requestRun) releaseScratch() {
	if c.scratch != nil {
		c.s.scratches.put(c.scratch)
		c.scratch = nil
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
