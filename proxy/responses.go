package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/responsestore"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/openaichat"
	"github.com/agate-gateway/agate/translate/responsesin"
	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"
)

// POST /v1/responses serves OpenAI's Responses API over every backend. To a route whose
// backends are all of type responses (and no server tools) the client's body is forwarded
// as it is, the model rewritten; to any other it is read into the core request, served like
// a chat completion (routing, fallbacks, retries, the tool loop) and its events encoded as
// Responses output (translate/responsesin). Responses asked to be stored are kept in the
// server's responsestore.Store, scoped to the key.

// newResponseStore builds the store of responses.store: nil when it is off; with redis, on
// the limiter's Redis client (state.type redis), shared by every replica.
func (s *Server) newResponseStore(cfg *config.Config) (responsestore.Store, error) {
	c := cfg.Responses
	switch c.Store {
	case "off":
		return nil, nil
	case "redis":
		r, ok := s.limiter.(interface{ Client() *redis.Client })
		if !ok {
			return nil, errors.New("responses.store: redis needs state.type: redis")
		}
		return &responsestore.Redis{Client: r.Client(), Prefix: cfg.State.KeyPrefix, TTL: c.TTL,
			Timeout: max(cfg.State.Timeout, time.Second)}, nil
	}
	return responsestore.NewMemory(responsestore.MemoryOptions{TTL: c.TTL, MaxEntries: c.MaxEntries, MaxBytes: c.MaxBytes}), nil
}

// responsesRun is one POST /v1/responses request after authentication, parsing and
// routing. It reuses the chat request's machinery (chatRun: the model call, the tool
// loop, the stream's commit protocol) with the core request.
type responsesRun struct {
	c   *chatRun
	req *responsesin.Request
	// prev is the stored response previous_response_id names; nil when none.
	prev *responsestore.Record
	// pass is set when the body is forwarded as it is to a responses backend.
	pass bool
	enc  *responsesin.Encoder
	// The passthrough's view of the upstream's answer: the final Response object, its
	// output and its sequence numbers.
	final, output []byte
	lastSeq       int
}

// responsesPathPrefix is the path of a stored response, followed by its id.
const responsesPathPrefix = "/v1/responses/"

func (s *Server) handleResponses(ctx *fasthttp.RequestCtx, rid string) {
	rt := s.runtime()
	start := time.Now()
	span, streaming := s.startChatSpan(ctx, rid), false // tracing.go: the server span
	defer func() {
		if !streaming { // a stream's writer ends it
			span.End(ctx.Response.StatusCode())
		}
	}()
	key, err := rt.authenticateHeader(&ctx.Request.Header)
	if err != nil {
		s.fail(ctx, rid, err, "", "", "", "")
		return
	}
	req, err := responsesin.Parse(ctx.PostBody())
	if err != nil {
		s.fail(ctx, rid, err, "", "", key.name, "")
		return
	}
	stream := strconv.FormatBool(req.Core.Stream)
	r, err := rt.routeFor(key, req.Core.Model)
	if err != nil {
		s.fail(ctx, rid, err, unknownLabel, "", key.name, stream)
		return
	}
	c := &chatRun{s: s, rt: rt, key: key, route: r, req: req.Core, rid: rid, id: newID("resp_"), start: start}
	c.call = &modelCall{rt: rt, route: r, key: key, metrics: s.metrics, logger: s.logger.With("request_id", rid)}
	c.startTracing(span) // tracing.go
	x := &responsesRun{c: c, req: req}
	if err := x.prepare(); err != nil {
		s.fail(ctx, rid, err, r.label(), r.backend.name, key.name, stream)
		return
	}
	c.call.spend = &c.limits
	if !c.admit(ctx) { // limits.go: refused (429, or 503 with state.on_error deny) and answered
		return
	}
	s.metrics.Inflight.Inc()
	if req.Core.Stream {
		streaming = true
		x.stream(ctx)
		return
	}
	defer s.metrics.Inflight.Dec()
	defer c.endLimits() // limits.go: charge the usage, release the slots
	x.complete(ctx)
}

// prepare resolves previous_response_id and server tools, picks the path (passthrough or
// translation) and applies the unsupported-parameter policy of the translated path.
func (x *responsesRun) prepare() error {
	c, req, s := x.c, x.req, x.c.s
	// Not the fasthttp RequestCtx: its Done is for server shutdown only, and a context
	// derived from it races with Shutdown.
	ctx := s.baseCtx
	if id := req.PreviousResponseID; id != "" {
		if s.responses == nil {
			return translate.Errorf("previous_response_id", "this gateway stores no responses (responses.store: off): send the conversation's items in input")
		}
		rec, err := s.responses.Get(ctx, c.key.name, id)
		switch {
		case errors.Is(err, responsestore.ErrExpired):
			return errorf(ErrNotFound, "the response %q has expired from the gateway's store: send the conversation's items in input", clip(id, maxLoggedString))
		case errors.Is(err, responsestore.ErrNotFound):
			return errorf(ErrNotFound, "no response with id %q was found", clip(id, maxLoggedString))
		case err != nil:
			c.call.logger.Error("reading the response store", "error", err)
			return errorf(ErrUnavailable, "the gateway's response store cannot be read right now; try again")
		}
		x.prev = rec
	}
	if len(c.key.tools) > 0 && s.tools != nil {
		defs, err := s.tools.Resolve(c.key.tools)
		if err == nil {
			err = mergeServerTools(req.Core, defs)
		}
		var pe *translate.ParamError
		if errors.As(err, &pe) { // a Responses function tool has its name at tools[i].name
			pe.Param = strings.Replace(pe.Param, ".function.name", ".name", 1)
		}
		if err != nil {
			return err
		}
		c.defs = defs
	}
	x.pass = x.passthrough()
	if x.pass {
		if x.prev != nil && x.prev.Upstream != c.route.backend.name {
			return translate.Errorf("previous_response_id", "the response %q was generated by backend %q: continue it with a model of that backend",
				clip(req.PreviousResponseID, maxLoggedString), x.prev.Upstream)
		}
		return nil
	}
	if x.prev != nil {
		if x.prev.Upstream != "" {
			return translate.Errorf("previous_response_id", "the response %q is stored by the upstream of backend %q: continue it with a model of that backend",
				clip(req.PreviousResponseID, maxLoggedString), x.prev.Upstream)
		}
		if err := req.Prepend(joinArrays(string(x.prev.Input), string(x.prev.Output))); err != nil {
			return err
		}
	}
	if err := req.Translatable(); err != nil {
		return err
	}
	b := c.route.backend
	for _, f := range req.Core.Extra {
		if !b.cfg.DropUnsupportedParams {
			return translate.Unsupported(f.Name, b.typ)
		}
		s.metrics.DroppedParams.WithLabelValues(b.name, paramLabel(f.Name)).Inc()
	}
	req.Core.Extra = nil
	return nil
}

// passthrough reports whether the body can be forwarded as it is: no tool loop, the route
// and all its fallbacks are responses backends, and any previous response is one such a
// backend stored.
func (x *responsesRun) passthrough() bool {
	c := x.c
	if len(c.defs) > 0 || c.route.backend.typ != "responses" || (x.prev != nil && x.prev.Upstream == "") {
		return false
	}
	for _, fb := range c.route.fallbacks {
		if r, ok := c.rt.routes[fb]; !ok || r.backend.typ != "responses" {
			return false
		}
	}
	return true
}

// joinArrays concatenates JSON arrays.
func joinArrays(arrays ...string) string {
	var b strings.Builder
	b.WriteByte('[')
	n := 0
	for _, a := range arrays {
		inner := strings.TrimSpace(a)
		if len(inner) < 2 {
			continue
		}
		inner = strings.TrimSpace(inner[1 : len(inner)-1])
		if inner == "" {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		b.WriteString(inner)
		n++
	}
	b.WriteByte(']')
	return b.String()
}

// stream serves a streaming request, with chatRun.stream's protocol: the handler waits
// until the writer knows whether the upstream accepted. Limits are charged and released
// when the writer ends, as for chat.
func (x *responsesRun) stream(ctx *fasthttp.RequestCtx) {
	c := x.c
	started := make(chan *apiError, 1)
	cctx, cancel := context.WithCancel(c.traced(c.s.baseCtx)) // tracing.go
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
		defer c.endLimits() // limits.go: charge the usage, release the slots
		defer cancel()
		defer c.s.metrics.Inflight.Dec()
		defer x.recoverStream(w, started)
		x.writeStream(cctx, cancel, w, started)
	})
	if a := <-started; a != nil {
		setErrorHeaders(ctx, *a) // the writer writes the body
		return
	}
	ctx.SetStatusCode(200)
	ctx.SetContentType("text/event-stream")
	ctx.Response.Header.Set("Cache-Control", "no-cache")
	ctx.Response.Header.Set("X-Accel-Buffering", "no")
}

// recoverStream is chatRun.recoverStream with a Responses error event.
func (x *responsesRun) recoverStream(w *bufio.Writer, started chan<- *apiError) {
	p := recover()
	if p == nil {
		return
	}
	c := x.c
	c.s.logger.Error("stream panic", "request_id", c.rid, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	a := classify(errors.New("panic"), c.rid)
	if !c.committed {
		c.committed = true
		started <- &a
		w.Write(openaichat.AppendError(nil, a.Message, a.Type, a.Param, a.Code))
	} else {
		w.Write(x.errorEvent(nil, a))
	}
	w.Flush()
}

// errorEvent appends the in-band error that ends a started stream.
func (x *responsesRun) errorEvent(dst []byte, a apiError) []byte {
	code := a.Code
	if code == "" {
		code = a.Type
	}
	if x.enc != nil && !x.pass {
		dst = x.enc.Start(dst) // a stream committed by a keep-alive has not started yet
		return x.enc.AppendError(dst, a.Message, code, a.Param)
	}
	x.lastSeq++
	return responsesin.AppendErrorEvent(dst, x.lastSeq, a.Message, code, a.Param)
}

// respOut writes a response's events to a streaming client (loop.Output).
type respOut struct {
	x         *responsesRun
	w         *bufio.Writer
	buf       []byte
	cancel    context.CancelFunc
	started   chan<- *apiError
	committed bool
}

func (o *respOut) commit() {
	if !o.committed {
		o.committed = true
		o.x.c.committed = true
		o.started <- nil
	}
}

func (o *respOut) Event(ev *translate.Event) error {
	if ev.Kind == translate.EventError {
		return nil // returned by the decoder as its error; written by writeStream
	}
	o.commit()
	if o.x.c.firstT.IsZero() && isContent(ev.Kind) {
		o.x.c.firstT = time.Now()
	}
	o.buf = o.x.enc.Encode(o.buf[:0], ev)
	return o.write()
}

func (o *respOut) KeepAlive() error {
	o.commit()
	o.buf = append(o.buf[:0], ": keep-alive\n\n"...)
	return o.flush()
}

func (o *respOut) write() error {
	if len(o.buf) == 0 {
		return nil
	}
	if _, err := o.w.Write(o.buf); err != nil {
		o.cancel()
		return errClientGone
	}
	return nil
}

func (o *respOut) flush() error {
	if err := o.write(); err != nil {
		return err
	}
	return o.sync()
}

func (o *respOut) sync() error {
	if o.w.Buffered() == 0 {
		return nil
	}
	if err := o.w.Flush(); err != nil {
		o.cancel()
		return errClientGone
	}
	return nil
}

func (x *responsesRun) newEncoder(stream bool) {
	x.enc = responsesin.NewEncoder(x.req, responsesin.EncoderOptions{ID: x.c.id, Model: x.req.Core.Model,
		Created: x.c.start.Unix(), Stream: stream})
}

func (x *responsesRun) writeStream(ctx context.Context, cancel context.CancelFunc, w *bufio.Writer, started chan<- *apiError) {
	c := x.c
	o := &respOut{x: x, w: w, cancel: cancel, started: started}
	c.call.flush = o.sync
	x.newEncoder(true)
	var err error
	if x.pass {
		err = x.forwardStream(ctx, o)
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
		w.Write(openaichat.AppendError(nil, a.Message, a.Type, a.Param, a.Code))
	case err != nil && !errors.Is(err, errClientGone):
		o.buf = x.errorEvent(o.buf[:0], c.s.render(c.rid, err))
		o.flush()
	case err == nil && !x.pass:
		o.buf = x.enc.Finish(o.buf[:0], time.Now().Unix())
		o.flush()
		x.save(ctx, x.enc.AppendResponse(nil), x.enc.AppendOutput(nil))
	case err == nil:
		x.save(ctx, x.final, x.output)
	}
	if errors.Is(err, errClientGone) || errors.Is(err, context.Canceled) {
		code = 499
	}
	x.finish(code, true)
}

// encoderOut collects events for a non-streaming client.
type encoderOut struct{ enc *responsesin.Encoder }

func (o encoderOut) Event(ev *translate.Event) error {
	if ev.Kind == translate.EventError {
		return ev.Err
	}
	o.enc.Encode(nil, ev)
	return nil
}
func (o encoderOut) KeepAlive() error { return nil }

// complete serves a non-streaming request.
func (x *responsesRun) complete(ctx *fasthttp.RequestCtx) {
	c := x.c
	cctx, cancel := context.WithCancel(c.traced(c.s.baseCtx)) // tracing.go
	defer cancel()
	var body []byte
	var err error
	if x.pass {
		body, err = x.forwardComplete(cctx)
	} else {
		x.newEncoder(false)
		err = c.execute(cctx, encoderOut{x.enc}, false)
		if err == nil {
			x.enc.Finish(nil, time.Now().Unix())
			body = x.enc.AppendResponse(nil)
			x.save(cctx, body, x.enc.AppendOutput(nil))
		}
	}
	if err != nil {
		c.s.fail(ctx, c.rid, err, c.route.label(), c.route.backend.name, c.key.name, "false")
		x.finish(0, false)
		return
	}
	ctx.SetStatusCode(200)
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
	x.finish(200, false)
}

// save stores the response when the client asked for it. A passthrough response is kept
// under the upstream's id, marked as stored upstream.
func (x *responsesRun) save(ctx context.Context, response, output []byte) {
	s := x.c.s
	if !x.req.Store || s.responses == nil || len(response) == 0 {
		return
	}
	rec := &responsestore.Record{Key: x.c.key.name, Response: response, Output: output}
	id := x.c.id
	if x.pass {
		rec.Upstream = x.c.route.backend.name
		rec.Input = []byte(x.req.Input)
		id = responsesin.ResponseID(response)
		if id == "" {
			return
		}
	} else {
		var prev string
		if x.prev != nil {
			prev = joinArrays(string(x.prev.Input), string(x.prev.Output))
		}
		rec.Input = []byte(joinArrays(prev, x.req.Input))
	}
	if err := s.responses.Put(ctx, id, rec); err != nil {
		x.c.call.logger.Warn("storing the response failed", "error", err)
	}
}

// finish records the request's metrics. code 0 means the funnel already counted it.
func (x *responsesRun) finish(code int, stream bool) {
	c := x.c
	st := strconv.FormatBool(stream)
	label, backend := c.route.label(), c.route.backend.name
	if code != 0 {
		c.s.metrics.Requests.WithLabelValues(label, backend, c.key.name, strconv.Itoa(code), st, apiResponses).Inc()
	}
	c.s.metrics.RequestDuration.WithLabelValues(label, backend, st, apiResponses).Observe(time.Since(c.start).Seconds())
	if !c.firstT.IsZero() {
		c.s.metrics.TTFT.WithLabelValues(label, backend).Observe(c.firstT.Sub(c.start).Seconds())
	}
	c.traceFinish(code, stream) // tracing.go
	c.call.logger.Info("response", "model", label, "backend", backend, "key", c.key.name, "stream", stream,
		"status", code, "passthrough", x.pass, "duration_ms", time.Since(c.start).Milliseconds(),
		"prompt_tokens", c.call.Usage.PromptTokens, "completion_tokens", c.call.Usage.CompletionTokens)
}

// forward runs one passthrough turn: the client's body with the route's upstream model, to
// the route and its fallbacks with retries, the accepted exchange handed to consume.
func (x *responsesRun) forward(ctx context.Context, stream bool, consume func(*exchange, *route) error) error {
	c := x.c.call
	return c.withRetries(ctx, func(ctx context.Context, r *route) error {
		c.lastUsage = translate.Usage{}
		defer c.countUsage(r)
		c.buf = x.req.AppendBody(c.buf[:0], r.upstreamModel)
		xch, err := c.send(ctx, r, x.req.Core, c.options(r, stream))
		if err != nil {
			return err
		}
		defer xch.Close()
		return consume(xch, r)
	})
}

// notResponseJSON is the 502 for a passthrough answer the gateway cannot read, quoting at
// most 64 bytes of it.
func notResponseJSON(backend, what string, data []byte) *translate.UpstreamError {
	if len(data) > 64 {
		data = data[:64]
	}
	if len(data) > 0 {
		what += ": " + strconv.Quote(string(data))
	}
	return upstreamFault(backend, what)
}

// carriesResponse reports whether a stream event of type typ carries the Response object.
func carriesResponse(typ string) bool {
	switch typ {
	case "response.created", "response.in_progress", "response.queued", "response.completed",
		"response.incomplete", "response.failed":
		return true
	}
	return false
}

// forwardStream is the passthrough for streams: every upstream event is forwarded with
// the client-facing model in its Response object. A payload that is not a JSON object,
// or a stream that ends without a terminal event (response.completed, .incomplete,
// .failed or error), is an upstream error the caller writes in-band.
func (x *responsesRun) forwardStream(ctx context.Context, o *respOut) error {
	c := x.c.call
	model := jsonx.AppendString(nil, x.req.Core.Model)
	return x.forward(ctx, true, func(xch *exchange, r *route) error {
		body, err := decodedBody(xch, r.backend.name)
		if err != nil {
			return err
		}
		terminal := false
		return pumpSSE(ctx, body, r.backend.name, func(_, data []byte) error {
			c.sent = true
			// A view of data, which lives until this returns; what is kept is copied.
			ev, ok := responsesin.ReadStreamEvent(data)
			if !ok {
				return notResponseJSON(r.backend.name, "sent a stream event that is not a JSON object", data)
			}
			typ := ev.Type
			if ev.HasSeq {
				x.lastSeq = ev.Seq
			}
			o.commit()
			if x.c.firstT.IsZero() {
				x.c.firstT = time.Now()
			}
			o.buf = append(o.buf[:0], "event: "...)
			o.buf = append(o.buf, typ...)
			o.buf = append(o.buf, "\ndata: "...)
			start := len(o.buf)
			if carriesResponse(typ) {
				o.buf = responsesin.AppendWithModel(o.buf, data, true, model)
			} else {
				o.buf = append(o.buf, data...)
			}
			switch typ {
			case "response.completed", "response.incomplete", "response.failed":
				terminal = true
				resp := responsesin.ReadEventResponse(o.buf[start:])
				x.final = []byte(resp.Response)
				x.output = []byte(resp.Output)
				c.lastUsage = resp.Usage
			case "error":
				terminal = true
			}
			o.buf = append(o.buf, "\n\n"...)
			return o.write()
		}, o.sync, func() error {
			if !terminal {
				return upstreamFault(r.backend.name, "ended the stream before it finished")
			}
			return nil
		})
	})
}

// forwardComplete is the passthrough for non-streaming requests. A 200 whose body is not
// a JSON Response object is a 502 naming the backend.
func (x *responsesRun) forwardComplete(ctx context.Context) ([]byte, error) {
	c := x.c.call
	model := jsonx.AppendString(nil, x.req.Core.Model)
	var out []byte
	err := x.forward(ctx, false, func(xch *exchange, r *route) error {
		body, err := readBody(ctx, xch, r.backend.name)
		if err != nil {
			return err
		}
		resp, kind := responsesin.ReadResponse(body)
		switch kind {
		case responsesin.BodyNotJSON:
			return notResponseJSON(r.backend.name, "answered with a body that is not JSON", body)
		case responsesin.BodyError:
			return r.backend.provider.DecodeError(http.StatusBadGateway, body)
		case responsesin.BodyOther:
			return notResponseJSON(r.backend.name, "answered with a JSON value that is not a Response object", nil)
		}
		c.lastUsage = resp.Usage
		out = responsesin.AppendWithModel(nil, body, false, model)
		x.final, x.output = out, []byte(resp.Output)
		return nil
	})
	if err == nil {
		x.save(ctx, x.final, x.output)
	}
	return out, err
}

// handleStoredResponse serves GET and DELETE /v1/responses/{id} for the key's stored
// responses.
func (s *Server) handleStoredResponse(ctx *fasthttp.RequestCtx, rid, method, id string) {
	rt := s.runtime()
	key, err := rt.authenticateHeader(&ctx.Request.Header)
	if err != nil {
		writeError(ctx, classify(err, rid))
		return
	}
	if method != "GET" && method != "DELETE" {
		s.methodNotAllowed(ctx, rid, "GET, DELETE")
		return
	}
	if s.responses == nil {
		writeError(ctx, classify(errorf(ErrNotFound, "no response with id %q was found: this gateway stores no responses (responses.store: off)", clip(id, maxLoggedString)), rid))
		return
	}
	if method == "DELETE" {
		err := s.responses.Delete(s.baseCtx, key.name, id)
		switch {
		case errors.Is(err, responsestore.ErrNotFound):
			writeError(ctx, classify(errorf(ErrNotFound, "no response with id %q was found", clip(id, maxLoggedString)), rid))
			return
		case err != nil:
			s.logger.Error("deleting from the response store", "request_id", rid, "error", err)
			writeError(ctx, classify(errorf(ErrUnavailable, "the gateway's response store cannot be reached right now; try again"), rid))
			return
		}
		ctx.SetContentType("application/json")
		ctx.SetBody(append(append([]byte(`{"id":`), jsonx.AppendString(nil, id)...), `,"object":"response","deleted":true}`...))
		return
	}
	rec, err := s.responses.Get(s.baseCtx, key.name, id)
	switch {
	case errors.Is(err, responsestore.ErrExpired):
		writeError(ctx, classify(errorf(ErrNotFound, "the response %q has expired from the gateway's store", clip(id, maxLoggedString)), rid))
		return
	case errors.Is(err, responsestore.ErrNotFound):
		writeError(ctx, classify(errorf(ErrNotFound, "no response with id %q was found", clip(id, maxLoggedString)), rid))
		return
	case err != nil:
		s.logger.Error("reading the response store", "request_id", rid, "error", err)
		writeError(ctx, classify(errorf(ErrUnavailable, "the gateway's response store cannot be reached right now; try again"), rid))
		return
	}
	ctx.SetContentType("application/json")
	ctx.SetBody(rec.Response)
}
