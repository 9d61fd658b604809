package proxy

import (
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/translate"
)

// parseFunc parses a client API's body into the core request and returns the run that
// answers it, built around c (whose fields serve sets once the request is routed). It
// may keep in c the memory the request was parsed into (requestRun.scratch), which serve
// gives back with c.
type parseFunc func(body []byte, c *requestRun) (*translate.Request, endpointRun, error)

// serve is the request path every client API shares: the server span, the key from the
// headers, the body parsed by parse, the route and the key's allowlist, the run's
// preparation, limits, the in-flight gauge, and the answer, streamed or not. idPrefix
// starts the client-facing response id; api is the api label of the request metrics.
func (s *Server) serve(ctx *fasthttp.RequestCtx, rid, idPrefix, api string, parse parseFunc) {
	rt := s.runtime()
	start := time.Now()
	span, streaming := startSpan(s.tracer, ctx, rid), false
	defer func() {
		if !streaming { // a stream's writer ends it
			span.End(ctx.Response.StatusCode())
		}
	}()
	key, err := requestKey(ctx, rt)
	if err != nil {
		s.fail(ctx, rid, err, "", "", "", "")
		s.unauthenticatedToLedger() // ledger_refused.go
		return
	}
	// The run comes from a pool (some 900 bytes, a third of what a request allocated) and
	// goes back when the handler is done with it, unless it streams: a stream's writer
	// outlives the handler and ends with the run's scratch given back and the run to the GC.
	c := s.runs.get()
	c.s = s // releaseScratch gives the scratch back to s
	defer func() {
		if !streaming { // a stream's writer gives the scratch back when it ends
			c.keepScratch() // kept by the run for its next request
			s.runs.put(c)
		}
	}()
	req, run, err := parse(ctx.PostBody(), c)
	if err != nil {
		s.fail(ctx, rid, err, "", "", key.name, "")
		s.refusedToLedger(ctx, rid, api, key, "", false, start, err)
		return
	}
	stream := strconv.FormatBool(req.Stream)
	r, err := rt.routeFor(key, req.Model)
	if err != nil {
		s.fail(ctx, rid, err, unknownLabel, "", key.name, stream)
		s.refusedToLedger(ctx, rid, api, key, unknownLabel, req.Stream, start, err)
		return
	}
	// A run from the pool is zero (put resets it), so its fields are set one by one: a
	// composite literal would be built whole (a kilobyte) on the stack and copied.
	c.rt, c.key, c.route, c.req, c.rid, c.idPrefix, c.start, c.api = rt, key, r, req, rid, idPrefix, start, api
	if req.Stream {
		c.id = newID(idPrefix) // now: a stream's goroutines may ask for it (responseID)
	}
	call := &c.ownCall
	call.rt, call.route, call.key, call.metrics, call.base, call.rid = rt, r, key, s.metrics, s.logger, rid
	// A non-streamed request's run keeps its body buffer for its next request (Reset
	// carries it): one pool's get and put a request spared. A stream's run goes to the GC
	// (above), so its buffer goes back to the pool.
	call.body.Pool, call.body.Keep, call.reads = &s.bodies, !req.Stream, &s.streamReads
	// The upstream body is about the client's (a translation's a little larger, 1.12x for
	// scenario d's history to Anthropic): built in a buffer of that size (roundTrip).
	n := len(ctx.PostBody())
	call.bodySize = n + n/8
	call.captureMax, call.noteAttempts = s.captureMax, s.ledger != nil // ledger.capture_content, its attempts
	if call.noteAttempts {
		call.tried = c.attempts()
	}
	c.call = call
	if span != nil { // the run's server span, and its model call's tracer
		c.span, call.tracer = span, s.tracer
		span.SetRequest(req, key.name)
	}
	if key.cache != nil || r.cache != nil { // the response cache: before prepare, which it may steer
		c.planCache(ctx)
	}
	if err := run.prepare(); err != nil {
		s.fail(ctx, rid, err, r.label(), r.backend.name, key.name, stream)
		c.failed = err
		c.toLedger(ctx.Response.StatusCode(), req.Stream, time.Now())
		return
	}
	if c.cache != nil {
		c.lookupCache(run)
	}
	c.noteAffinity(ctx)
	c.call.spend = &c.limits
	if !c.admit(ctx) { // refused (429, or 503 with state.on_error deny) and answered
		c.endFlight()
		c.toLedger(ctx.Response.StatusCode(), req.Stream, time.Now())
		return
	}
	s.metrics.Inflight.Inc()
	if req.Stream {
		streaming = true
		c.runStream(ctx, run)
		return
	}
	c.completeInFlight(ctx, run)
}

// completeInFlight answers a request that is not streamed and admitted in flight, then
// charges its usage, releases its slots and ends its in-flight count. Apart from serve,
// whose returns with four defers made the compiler keep them on a list walked at its end
// (runtime.deferreturn, about 0.4 K instructions a request) instead of open-coding them.
func (c *requestRun) completeInFlight(ctx *fasthttp.RequestCtx, run endpointRun) {
	defer c.s.metrics.Inflight.Dec()
	defer c.endLimits() // charge the usage, release the slots
	c.complete(ctx, run)
}
