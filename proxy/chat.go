package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/agate-gateway/agate/translate/openai"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/agate-gateway/agate/loop"
	"github.com/agate-gateway/agate/tools"
	"github.com/agate-gateway/agate/translate"
	"github.com/valyala/fasthttp"
)

// chatRun is one chat completions request after authentication, parsing and routing.
type chatRun struct {
	s      *Server
	rt     *runtime
	key    *apiKey
	route  *route
	req    *translate.Request
	rid    string
	id     string // the client-facing response id
	start  time.Time
	call   *modelCall
	defs   []tools.Definition // server tools of this key; none means no tool loop
	firstT time.Time
	// committed is set once the stream writer told the handler how to answer.
	committed bool
	limits    limitRun // limits.go
}

func (s *Server) handleChat(ctx *fasthttp.RequestCtx, rid string) {
	rt := s.runtime()
	start := time.Now()
	key, err := rt.authenticateHeader(&ctx.Request.Header)
	if err != nil {
		s.fail(ctx, rid, err, "", "", "", "")
		return
	}
	req, err := translate.ParseRequest(ctx.PostBody())
	if err != nil {
		s.fail(ctx, rid, err, "", "", key.name, "")
		return
	}
	stream := strconv.FormatBool(req.Stream)
	r, err := rt.routeFor(key, req.Model)
	if err != nil {
		s.fail(ctx, rid, err, unknownLabel, "", key.name, stream)
		return
	}
	c := &chatRun{s: s, rt: rt, key: key, route: r, req: req, rid: rid, id: newID("chatcmpl-"), start: start}
	c.call = &modelCall{rt: rt, route: r, key: key, metrics: s.metrics, logger: s.logger.With("request_id", rid)}
	if len(key.tools) > 0 && s.tools != nil {
		defs, err := s.tools.Resolve(key.tools)
		if err == nil {
			err = mergeServerTools(req, defs)
		}
		if err != nil {
			s.fail(ctx, rid, err, r.label(), r.backend.name, key.name, stream)
			return
		}
		c.defs = defs
	}
	c.call.spend = &c.limits
	if !c.admit(ctx) { // limits.go: refused (429, or 503 with state.on_error deny) and answered
		return
	}
	s.metrics.Inflight.Inc()
	if req.Stream {
		c.stream(ctx)
		return
	}
	defer s.metrics.Inflight.Dec()
	defer c.endLimits() // limits.go: charge the usage, release the slots
	c.complete(ctx)
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
func (c *chatRun) passthrough() bool {
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
func (c *chatRun) execute(ctx context.Context, out loop.Output, stream bool) error {
	if len(c.defs) > 0 {
		l := &loop.Loop{Model: c.call, Tools: c.s.tools, Definitions: c.defs,
			MaxIterations: c.key.maxIterations, Observer: c.s.loopObserver(), Logger: c.call.logger,
			MaxCallsPerTurn: c.key.maxCallsPerTurn, MaxConcurrentCalls: c.key.maxConcurrentCalls, Caller: c.key.name,
			KeepAliveInterval: loopKeepAlive}
		return l.Run(ctx, c.req, out)
	}
	if stream {
		return c.call.Stream(ctx, c.req, out.Event)
	}
	return c.call.Complete(ctx, c.req, out.Event)
}

// stream serves a streaming request. The response is produced by a body-stream writer
// running in its own goroutine; the handler waits until the writer knows whether the
// upstream accepted (SSE, 200) or failed before the first event (a JSON error with the
// upstream's status), so retries and fallbacks stay possible until then.
func (c *chatRun) stream(ctx *fasthttp.RequestCtx) {
	started := make(chan *apiError, 1)
	cctx, cancel := context.WithCancel(c.s.baseCtx)
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
		defer c.endLimits() // limits.go: charge the usage, release the slots
		defer cancel()
		defer c.s.metrics.Inflight.Dec()
		defer c.recoverStream(w, started)
		c.writeStream(cctx, cancel, w, started)
	})
	if a := <-started; a != nil {
		ctx.SetStatusCode(a.Status)
		ctx.SetContentType("application/json")
		if a.RetryAfter > 0 {
			ctx.Response.Header.Set("Retry-After", strconv.Itoa(a.RetryAfter))
		}
		return
	}
	ctx.SetStatusCode(200)
	ctx.SetContentType("text/event-stream")
	ctx.Response.Header.Set("Cache-Control", "no-cache")
	ctx.Response.Header.Set("X-Accel-Buffering", "no")
}

// recoverStream turns a panic in the stream writer (its own goroutine, out of reach of the
// handler's recover) into a 500 before the stream started, or an in-band error after.
func (c *chatRun) recoverStream(w *bufio.Writer, started chan<- *apiError) {
	p := recover()
	if p == nil {
		return
	}
	c.s.logger.Error("stream panic", "request_id", c.rid, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	a := classify(errors.New("panic"), c.rid)
	if !c.committed {
		c.committed = true
		started <- &a
		w.Write(translate.AppendError(nil, a.Message, a.Type, a.Param, a.Code))
	} else { // the client has the SSE headers: end the stream in-band
		w.Write(translate.AppendErrorEvent(nil, a.Message, a.Type, a.Param, a.Code))
	}
	w.Flush()
}

// sseOut writes events to the client as OpenAI chunks. Events are written as they are
// decoded and flushed at the end of every upstream read (and at every keep-alive and the
// end), so nothing ever waits for more upstream data, while events that arrived together
// share one write to the client.
type sseOut struct {
	c         *chatRun
	w         *bufio.Writer
	enc       *translate.ChunkEncoder
	buf       []byte
	cancel    context.CancelFunc
	started   chan<- *apiError
	committed bool
	raw       bool // passthrough: chunks are forwarded, not encoded
}

func (o *sseOut) commit() {
	if !o.committed {
		o.committed = true
		o.c.committed = true
		o.started <- nil
	}
}

func (o *sseOut) Event(ev *translate.Event) error {
	if ev.Kind == translate.EventError {
		return nil // returned by the decoder as its error; written by writeStream
	}
	o.commit()
	if o.c.firstT.IsZero() && isContent(ev.Kind) {
		o.c.firstT = time.Now()
	}
	o.buf = o.enc.Encode(o.buf[:0], ev)
	return o.write()
}

func isContent(k translate.EventKind) bool {
	switch k {
	case translate.EventTextDelta, translate.EventReasoningDelta, translate.EventRefusalDelta, translate.EventToolCallStart:
		return true
	}
	return false
}

func (o *sseOut) KeepAlive() error {
	o.commit()
	o.buf = append(o.buf[:0], ": keep-alive\n\n"...)
	return o.flush()
}

// write buffers o.buf for the client.
func (o *sseOut) write() error {
	if len(o.buf) == 0 {
		return nil
	}
	if _, err := o.w.Write(o.buf); err != nil {
		return o.gone()
	}
	return nil
}

// flush writes o.buf and sends everything buffered to the client.
func (o *sseOut) flush() error {
	if err := o.write(); err != nil {
		return err
	}
	return o.sync()
}

// sync sends what is buffered to the client.
func (o *sseOut) sync() error {
	if o.w.Buffered() == 0 {
		return nil
	}
	if err := o.w.Flush(); err != nil {
		return o.gone()
	}
	return nil
}

// gone cancels the upstream and any running tools: the client left.
func (o *sseOut) gone() error {
	o.cancel()
	return errClientGone
}

func (c *chatRun) writeStream(ctx context.Context, cancel context.CancelFunc, w *bufio.Writer, started chan<- *apiError) {
	o := &sseOut{c: c, w: w, cancel: cancel, started: started,
		enc: translate.NewChunkEncoder(c.id, c.req.Model, time.Now().Unix(), c.req.IncludeUsage)}
	c.call.flush = o.sync
	var err error
	if c.passthrough() {
		o.raw = true
		err = c.call.forwardStream(ctx, c.req, o)
	} else {
		err = c.execute(ctx, o, true)
	}
	code := 200
	switch {
	case !o.committed:
		c.committed = true
		a := c.s.render(c.rid, err)
		code = a.Status
		started <- &a
		w.Write(translate.AppendError(nil, a.Message, a.Type, a.Param, a.Code))
	case err != nil && !errors.Is(err, errClientGone):
		a := c.s.render(c.rid, err)
		o.buf = translate.AppendErrorEvent(o.buf[:0], a.Message, a.Type, a.Param, a.Code)
		o.flush()
	case err == nil && !o.raw:
		o.buf = o.enc.Finish(o.buf[:0])
		o.flush()
	}
	if errors.Is(err, errClientGone) || errors.Is(err, context.Canceled) {
		code = 499
	}
	c.finish(code, true)
}

// complete serves a non-streaming request.
func (c *chatRun) complete(ctx *fasthttp.RequestCtx) {
	cctx, cancel := context.WithCancel(c.s.baseCtx)
	defer cancel()
	if c.passthrough() {
		body, err := c.call.forwardComplete(cctx, c.req)
		if err != nil {
			c.s.fail(ctx, c.rid, err, c.route.label(), c.route.backend.name, c.key.name, "false")
			c.finish(0, false)
			return
		}
		ctx.SetStatusCode(200)
		ctx.SetContentType("application/json")
		ctx.SetBody(body)
		c.finish(200, false)
		return
	}
	var a translate.Assembler
	err := c.execute(cctx, assemblerOut{&a}, false)
	if err == nil && a.Err != nil {
		err = a.Err
	}
	if err != nil {
		c.s.fail(ctx, c.rid, err, c.route.label(), c.route.backend.name, c.key.name, "false")
		c.finish(0, false)
		return
	}
	a.Finish()
	ctx.SetStatusCode(200)
	ctx.SetContentType("application/json")
	ctx.SetBody(a.AppendCompletion(nil, c.id, c.req.Model, time.Now().Unix()))
	c.finish(200, false)
}

// assemblerOut collects events for a non-streaming client.
type assemblerOut struct{ a *translate.Assembler }

func (o assemblerOut) Event(ev *translate.Event) error { return o.a.Add(ev) }
func (o assemblerOut) KeepAlive() error                { return nil }

// finish records the request's metrics. code 0 means the funnel already counted it.
func (c *chatRun) finish(code int, stream bool) {
	st := strconv.FormatBool(stream)
	label, backend := c.route.label(), c.route.backend.name
	if code != 0 {
		c.s.metrics.Requests.WithLabelValues(label, backend, c.key.name, strconv.Itoa(code), st).Inc()
	}
	c.s.metrics.RequestDuration.WithLabelValues(label, backend, st).Observe(time.Since(c.start).Seconds())
	if !c.firstT.IsZero() {
		c.s.metrics.TTFT.WithLabelValues(label, backend).Observe(c.firstT.Sub(c.start).Seconds())
	}
	c.call.logger.Info("chat completion", "model", label, "backend", backend, "key", c.key.name, "stream", stream,
		"status", code, "duration_ms", time.Since(c.start).Milliseconds(),
		"prompt_tokens", c.call.Usage.PromptTokens, "completion_tokens", c.call.Usage.CompletionTokens)
}

// forwardStream is the OpenAI passthrough for streams: upstream chunks are forwarded with
// the client-facing model, a constant id and created (see passthroughChunks), and the usage
// (which Agate always requests, to count tokens) dropped unless the client asked for it.
// An upstream error event, a payload that is not a JSON object, or a stream that ends
// before [DONE] or a finish_reason becomes the returned error, which the caller writes
// in-band.
func (c *modelCall) forwardStream(ctx context.Context, req *translate.Request, o *sseOut) error {
	clientModel := translate.AppendString(nil, req.Model)
	now := func() int64 { return time.Now().Unix() }
	return c.raw(ctx, req, true, func(x *exchange, r *route) error {
		body, err := decodedBody(x, r.backend.name)
		if err != nil {
			return err
		}
		finished := false
		chunks := passthroughChunks{backend: r.backend.name, model: clientModel, fallbackID: o.c.id, includeUsage: req.IncludeUsage}
		return pumpSSE(ctx, body, r.backend.name, func(_, data []byte) error {
			c.sent = true
			if string(data) == "[DONE]" {
				finished = true
				o.commit()
				o.buf = append(o.buf[:0], "data: [DONE]\n\n"...)
				return o.write()
			}
			var ch chunk
			var err error
			o.buf, ch, err = chunks.appendChunk(o.buf[:0], data, now)
			if err != nil {
				return err
			}
			if ch.isError {
				return r.backend.provider.DecodeError(http.StatusBadGateway, data)
			}
			if ch.usage != "" {
				c.lastUsage, _ = openai.ParseUsage([]byte(ch.usage))
				if !req.IncludeUsage && ch.choices == 0 {
					return nil
				}
			}
			o.commit()
			if o.c.firstT.IsZero() {
				o.c.firstT = time.Now()
			}
			finished = finished || ch.finished
			return o.write()
		}, o.sync, func() error {
			if !finished {
				return &translate.UpstreamError{Status: http.StatusBadGateway, Type: "api_error",
					Message: "the upstream of backend " + r.backend.name + " ended the stream before it finished"}
			}
			return nil
		})
	})
}

// forwardComplete is the OpenAI passthrough for non-streaming requests. A 200 whose body is
// not a JSON chat completion is a 502 naming the backend.
func (c *modelCall) forwardComplete(ctx context.Context, req *translate.Request) ([]byte, error) {
	var out []byte
	err := c.raw(ctx, req, false, func(x *exchange, r *route) error {
		body, err := readBody(ctx, x, r.backend.name)
		if err != nil {
			return err
		}
		out, c.lastUsage, err = completionBody(r.backend.name, r.backend.provider, body, translate.AppendString(nil, req.Model))
		return err
	})
	return out, err
}
