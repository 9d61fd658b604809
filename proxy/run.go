package proxy

import (
	"context"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/limits"
	"github.com/agate-gateway/agate/loop"
	"github.com/agate-gateway/agate/telemetry"
	"github.com/agate-gateway/agate/tools"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/openai"
	"github.com/agate-gateway/agate/translate/openaichat"
)

// requestRun is one client request, of any client API, after authentication, parsing and
// routing: what the one request path (serve, the stream writer, complete) keeps of it,
// its model call, limits and span. Each client API's endpointRun is built around it: the
// chat completions API's is the run itself under other methods (chatRun), Responses' and
// Messages' wrap it (responsesRun, messagesRun).
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
	// answeredBy is the route that answered (noteAnswered); nil until an answer was accepted.
	answeredBy *route
	limits     limitRun
	// api is the api label of the request metrics; empty means apiChat.
	api string
	// toolUse sums the tool loop's server tool calls for the ledger (toolsummary.go); nil
	// without a tool loop or a ledger.
	toolUse *toolLog
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

	// parent parents the stream's upstream calls instead of the server's base context: a
	// WebSocket turn's, which ends when its client leaves (websocket.go); nil for HTTP.
	parent context.Context

	// span is the server span; nil when tracing is off.
	span *telemetry.Request
	// failed is the error the answer ended with, for the ledger; nil when none.
	failed error
	// cache is the request's use of the response cache (responsecache.go); nil: none.
	cache *cachePlan
	// deferred completes req when a validate-only first pass read it (request_head.go).
	deferred deferredRequest
	// done is what toLedger knows of the request's end, for FillRecord (ledger.go).
	done ledgerDone

	// attemptRoom is the ledger's log of the run's attempts (modelCall.tried), made on
	// the first request that notes them (attempts) and kept by a recycled run, which
	// empties it only when it was used (Reset): the log is 848 bytes, more than a quarter
	// of the run, and a server without a ledger never touches it.
	attemptRoom *attemptLog
	// spare is the chat parse's memory a recycled run keeps for its next request, reset
	// (keepScratch, chatParseMemory): two pools' gets and puts a request spared. A
	// stream's run, which goes to the GC, gives its memory back to the pools instead.
	spare struct {
		scratch *openaichat.Scratch
		stage   *openaichat.Stage
	}
	// endRoom holds the Messages and Responses endpoint runs a recycled run made for
	// earlier requests (messagesRoom, responsesRoom): some 600 bytes each, an allocation
	// a request spared. Reset zeroes the one the request used (so they hold no body,
	// header or answer of a finished request) and keeps them.
	endRoom struct {
		msg  *messagesRun
		resp *responsesRun
	}
}

// endpointRun is a client API's side of one routed request (chat completions,
// Responses, Messages) once serve has authenticated, parsed and routed it: the choice of
// passthrough or translation, its client dialect's writers and what it does once answered.
// The answer itself is the one request path's for every API: requestRun.runStream
// or requestRun.complete, with the run's model call, tool loop,
// limits and metrics in its requestRun.
type endpointRun interface {
	// prepare resolves what the run needs before limits are checked (server tools, the
	// passthrough-or-translate choice, the unsupported-parameter policy); its error is
	// answered as the request's error.
	prepare() error
	// forwarder returns the passthrough's rewriter when the run forwards the client's body
	// to backends of the client's own API, nil when it translates.
	forwarder() forwarder
	// streamEncoder returns the writer of a streamed answer (asked once, before the stream
	// writer starts).
	streamEncoder() translate.ClientStream
	// assembler returns the collector of a translated non-streamed answer (asked once).
	assembler() translate.ClientAssembler
	// answered is called once the answer ended well, before the request is recorded: with
	// the body of a non-streamed answer (the response's own buffer: what is kept of it is
	// copied), nil after a stream. Responses stores the response there.
	answered(ctx context.Context, body []byte)
	// finish records the request's metrics and access line (requestRun.finish); code 0
	// means the error funnel already counted it.
	finish(ctx *fasthttp.RequestCtx, code int, stream bool)
}

// loopKeepAlive is how often a streaming client is pinged (an SSE comment) while server
// tools run. A ping is also how a departed client is noticed, so it is short.
const loopKeepAlive = time.Second

// execute produces the response's events into out: from the response cache, or a tool
// loop, or one model call.
func (c *requestRun) execute(ctx context.Context, out loop.Output, stream bool) error {
	if c.cache != nil {
		return c.cachedRun(ctx, out, stream)
	}
	return c.produce(ctx, out, stream)
}

// produce produces the response's events into out: a tool loop, or one model call.
func (c *requestRun) produce(ctx context.Context, out loop.Output, stream bool) error {
	if len(c.defs) > 0 {
		l := &loop.Loop{Model: c.call, Tools: c.s.tools, Definitions: c.defs,
			MaxIterations: c.key.maxIterations, Observer: c.s.loopObserver(), Logger: c.call.log(),
			MaxCallsPerTurn: c.key.maxCallsPerTurn, MaxConcurrentCalls: c.key.maxConcurrentCalls, Caller: c.key.name,
			KeepAliveInterval: loopKeepAlive, Tracer: c.s.tracer}
		if c.s.ledger != nil {
			c.toolUse = &toolLog{}
			l.Recorder = c.toolUse
		}
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

// collect is the loop.Output of a non-streamed answer: its client dialect's assembler.
type collect struct{ a translate.ClientAssembler }

func (o *collect) Event(ev *translate.Event) error { return o.a.Add(ev) }

func (o *collect) KeepAlive() error { return nil }

// unixNow is the clock of the answers' creation and completion times.
func unixNow() int64 { return time.Now().Unix() }

// chatChunks is a forwarded stream's state: made once a stream, reset every attempt.
type chatChunks struct {
	rw       openai.ChunkRewriter
	model    []byte // the client-facing model, a JSON string
	finished bool
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
		routeLog: c.route.logMembers, keyLog: c.key.logMembers,
		code: code, stream: stream, at: now, took: now.Sub(c.start), cache: c.cacheResult(),
		prompt: c.call.Usage.PromptTokens, completion: c.call.Usage.CompletionTokens, estimated: c.call.Estimated}
	if !c.firstT.IsZero() {
		d.ttft = c.firstT.Sub(c.start)
	}
	d.continuedFrom = c.noteContinued()
	d.answered, d.fallback = c.answeredModel()
	if c.answeredBy != nil {
		d.deployment = c.answeredBy.deployment
	}
	finishSpan(c.span, c.call.Usage, c.start, c.firstT, code, stream)
	c.toLedger(ledgerStatus(ctx, code), stream, now)
	if conn, ok := answerConn(ctx); ok && c.span == nil {
		conn.done.leave(d)
		return
	}
	d.record()
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
// stays reachable through it but the memory it keeps for the next, emptied (the attempt
// log, the body buffer's spare: Take returns it empty, as a pooled one; the chat parse's
// Scratch and Stage, reset as their pools' are).
func (c *requestRun) Reset() {
	// The two func values close over c itself, so they stay right for its next request;
	// the continuation's text buffer is emptied when its next turn starts (startResume).
	// The body buffer its model call released (upstream.Buffer.Keep) is kept too.
	toOut, countFn, said, room, body, spare, ends := c.toOut, c.ownCall.countFn, c.ownCall.resume.said, c.attemptRoom, c.ownCall.body.Carry(), c.spare, c.endRoom
	*c = requestRun{}
	c.toOut, c.ownCall.countFn, c.ownCall.resume.said, c.attemptRoom, c.ownCall.body, c.spare, c.endRoom = toOut, countFn, said, room, body, spare, ends
	if room != nil {
		room.empty() // not zeroed whole: its kilobyte was most of a ledger's Reset
	}
	if m := ends.msg; m != nil && m.c != nil { // used by this request (zeroing it costs ~80 instructions)
		*m = messagesRun{}
	}
	if x := ends.resp; x != nil && x.c != nil {
		*x = responsesRun{}
	}
}

// messagesRoom returns the run's Messages endpoint run, zero: the one a recycled run
// kept (endRoom), made on first use. A run serves one request at a time, so it has at
// most one in use.
func (c *requestRun) messagesRoom() *messagesRun {
	if c.endRoom.msg == nil {
		c.endRoom.msg = new(messagesRun)
	}
	return c.endRoom.msg
}

// responsesRoom is messagesRoom for the Responses endpoint run.
func (c *requestRun) responsesRoom() *responsesRun {
	if c.endRoom.resp == nil {
		c.endRoom.resp = new(responsesRun)
	}
	return c.endRoom.resp
}

// attempts returns the run's attempt log (attemptRoom), empty, made on first use.
func (c *requestRun) attempts() *attemptLog {
	if c.attemptRoom == nil {
		c.attemptRoom = new(attemptLog)
	}
	return c.attemptRoom
}

// keepScratch is releaseScratch for a run about to be recycled (serve): the Scratch
// c.req was parsed into is reset and kept for the run's next request (spare), not
// pooled. Only once nothing reads c.req any more.
func (c *requestRun) keepScratch() {
	if sc := c.scratch; sc != nil {
		c.scratch = nil
		c.keepChatScratch(sc)
	}
	c.releaseScratch() // the Assembler, if any
}

// keepChatScratch resets sc and keeps it as the run's spare; the pool gets it when the
// run has one already.
func (c *requestRun) keepChatScratch(sc *openaichat.Scratch) {
	if c.spare.scratch != nil {
		c.s.scratches.put(sc)
		return
	}
	sc.Reset()
	c.spare.scratch = sc
}

// chatParseMemory returns the Scratch and Stage a chat request is parsed with: the run's
// spares (keepScratch, keepStage), else the server's pools'.
func (c *requestRun) chatParseMemory() (*openaichat.Scratch, *openaichat.Stage) {
	sc, st := c.spare.scratch, c.spare.stage
	c.spare.scratch, c.spare.stage = nil, nil
	if sc == nil {
		sc = c.s.scratches.get()
	}
	if st == nil {
		st = c.s.stages.get()
	}
	return sc, st
}

// keepStage gives back st once the parse of a body of size bytes is over: kept by the
// run, reset, when the run will be recycled (a request that does not stream: serve) and
// the body was at most maxSpareStageBody, else to the pool.
func (c *requestRun) keepStage(st *openaichat.Stage, stream bool, size int) {
	if stream || size > maxSpareStageBody {
		c.s.stages.put(st)
		return
	}
	st.Reset()
	c.spare.stage = st
}

// maxSpareStageBody is the largest request body whose parse's Stage a run keeps as its
// spare (keepStage). A run holds its spare through the whole request, while it waits on the
// upstream, so spares cost a Stage a request in flight where the pool costs one a parse
// running at once; a Stage staged as many messages as its body held (scenario d's 100 KB
// history, ~380: ~100 KB of staging arrays), so a large body's goes back to the pool,
// and a small one's is kept, a pool's get and put spared.
const maxSpareStageBody = 16 << 10

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

// finalUsage is what the request is charged when it ends (endLimits): the usage of every
// upstream turn, each as its meter charged it, and its cost.
func (c *requestRun) finalUsage() limits.Usage {
	u := c.call.Usage
	return limits.Usage{Tokens: int64(u.PromptTokens + u.CompletionTokens), MicroUSD: int64(math.Round(c.limits.microUSD))}
}

// allBackends reports whether the route and all its fallbacks are backends of type typ
// and the request runs no tool loop: the condition of a passthrough.
func allBackends(c *requestRun, typ string) bool {
	return allRoutes(c, func(r *route) bool { return r.backend.dialect == typ })
}

// allRoutes reports whether every route that may serve the request (its route's and its
// fallbacks' deployments, or those routes themselves) is one ok accepts, and the request
// runs no tool loop.
func allRoutes(c *requestRun, ok func(*route) bool) bool {
	if len(c.defs) > 0 || !c.route.every(ok) {
		return false
	}
	for _, fb := range c.route.fallbacks {
		if r, found := c.rt.routes[fb]; !found || !r.every(ok) {
			return false
		}
	}
	return true
}

// allOfType reports whether every backend that serves route r (its deployments', or its
// own) speaks the API of backend type typ (backend.dialect: an azure backend speaks
// openai's or responses').
func (r *route) allOfType(typ string) bool {
	return r.every(func(r *route) bool { return r.backend.dialect == typ })
}

// every reports whether ok accepts each route that serves r: its deployments', or r.
func (r *route) every(ok func(*route) bool) bool {
	if r.deploy == nil {
		return ok(r)
	}
	for _, dr := range r.deploy.routes {
		if !ok(dr) {
			return false
		}
	}
	return true
}

// anyOfType reports whether a backend that serves route r (one of its deployments', or
// its own) is of type typ.
func (r *route) anyOfType(typ string) bool {
	if r.deploy == nil {
		return r.backend.typ == typ
	}
	for _, dr := range r.deploy.routes {
		if dr.backend.typ == typ {
			return true
		}
	}
	return false
}

// anyBackend reports whether the route or one of its fallbacks is a backend of type typ.
func anyBackend(c *requestRun, typ string) bool {
	if c.route.anyOfType(typ) {
		return true
	}
	for _, fb := range c.route.fallbacks {
		if r, ok := c.rt.routes[fb]; ok && r.anyOfType(typ) {
			return true
		}
	}
	return false
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
