package proxy

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/responsestore"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/responsesin"
	"github.com/agate-gateway/agate/upstream"
)

// POST /v1/responses serves OpenAI's Responses API over every backend. To a route whose
// backends are all of type responses (and no server tools) the client's body is forwarded
// as it is, the model rewritten; to any other it is read into the core request, served like
// a chat completion (routing, fallbacks, retries, the tool loop) and its events encoded as
// Responses output (translate/responsesin). Responses asked to be stored are kept in the
// server's responsestore.Store, scoped to the key.

// newResponseStore builds the store of responses.store: nil when it is off; with redis, on
// the Redis of responses.url (its own client, closed by Shutdown) or else on the limiter's
// Redis client (state.type redis), shared by every replica. Both are bounded by
// responses.max_entries and max_bytes.
func (s *Server) newResponseStore(cfg *config.Config) (responsestore.Store, error) {
	c := cfg.Responses
	s.maxStored = c.MaxStoredBytes
	if s.maxStored <= 0 {
		s.maxStored = int64(cfg.Server.MaxBodyBytes)
	}
	switch c.Store {
	case "off":
		return nil, nil
	case "redis":
		timeout := max(cfg.State.Timeout, time.Second)
		var client *redis.Client
		if c.URL != "" {
			opts, err := redis.ParseURL(c.URL)
			if err != nil {
				return nil, errors.New("responses.url: not a valid redis URL") // err may quote the password
			}
			opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout, opts.PoolTimeout = timeout, timeout, timeout, timeout
			opts.ContextTimeoutEnabled = true
			opts.DisableIdentity = true
			client = redis.NewClient(opts)
			s.closeResponses = client.Close
		} else {
			r, ok := s.limiter.(interface{ Client() *redis.Client })
			if !ok {
				return nil, errors.New("responses.store: redis needs responses.url or state.type: redis")
			}
			client = r.Client()
		}
		return &responsestore.Redis{Client: client, Prefix: cfg.State.KeyPrefix, TTL: c.TTL,
			MaxEntries: c.MaxEntries, MaxBytes: c.MaxBytes, Timeout: timeout}, nil
	}
	return responsestore.NewMemory(responsestore.MemoryOptions{TTL: c.TTL, MaxEntries: c.MaxEntries, MaxBytes: c.MaxBytes}), nil
}

// responsesRun is one POST /v1/responses request after authentication, parsing and
// routing. It reuses the chat request's machinery (requestRun: the model call, the tool
// loop, the stream's commit protocol) with the core request.
type responsesRun struct {
	c   *requestRun
	req *responsesin.Request
	// prev is the stored response previous_response_id names; nil when none.
	prev *responsestore.Record
	// pass is set when the body is forwarded as it is to a responses backend.
	pass bool
	enc  *responsesin.Encoder
	// answer writes the response (the stream's writer, the non-streamed assembler).
	answer responsesin.Answer
	// fw rewrites the passthrough's stream and keeps what is stored of it; backend names
	// the attempt's backend in its errors (responsesForward).
	fw      responsesin.Forward
	backend string
	// fol follows what the stream showed the client, to continue it (continuation_responses.go).
	fol respFollow
	// ws is the WebSocket turn this run serves; nil for a POST.
	ws *wsTurn
}

func (s *Server) handleResponses(ctx *fasthttp.RequestCtx, rid string) {
	s.serve(ctx, rid, "resp_", apiResponses, func(body []byte, c *requestRun) (*translate.Request, endpointRun, error) {
		// The input items are built only when something reads them (request_head.go),
		// unless a span reads the request before; a request read whole has its text left
		// escaped until prepare knows who reads it.
		var req *responsesin.Request
		var err error
		complete := true
		if s.tracer != nil {
			req, err = responsesin.ParseWithin(body, s.maxInflated)
		} else {
			// In a recycled Stage: a parse on the stack would grow the connection
			// goroutine's for the whole stream (responsesin.Stage).
			st := s.respStages.get()
			req, complete, err = st.ParseHeadLazy(body, s.maxInflated, s.passesResponses)
			s.respStages.put(st)
		}
		if err != nil {
			return nil, nil, err
		}
		x := c.responsesRoom() // zero
		x.c, x.req = c, req
		if !complete {
			c.deferred, c.ownCall.meter.pending = x, c
		}
		if t := wsTurnOf(ctx); t != nil {
			x.ws, c.parent = t, t.ctx
		}
		return req.Core, x, nil
	})
}

// prepare resolves previous_response_id and server tools, picks the path (passthrough or
// translation) and applies the unsupported-parameter policy of the translated path.
func (x *responsesRun) prepare() error {
	c, req, s := x.c, x.req, x.c.s
	// Not the fasthttp RequestCtx: its Done is for server shutdown only, and a context
	// derived from it races with Shutdown.
	ctx := s.baseCtx
	if id := req.PreviousResponseID; id != "" {
		if s.responses == nil && x.ws == nil {
			return translate.Errorf("previous_response_id", "this gateway stores no responses (responses.store: off): send the conversation's items in input")
		}
		rec, err := x.ws.previous(ctx, c.key.name, id) // a WebSocket connection's own first
		if err != nil && s.responses != nil {
			rec, err = s.responses.Get(ctx, c.key.name, id)
		}
		switch {
		case errors.Is(err, responsestore.ErrExpired):
			return errorf(ErrNotFound, "the response %q has expired from the gateway's store: send the conversation's items in input", clip(id, maxLoggedString))
		case errors.Is(err, responsestore.ErrNotFound):
			return errorf(ErrNotFound, "no response with id %q was found", clip(id, maxLoggedString))
		case err != nil:
			c.call.log().Error("reading the response store", "error", err)
			return errorf(ErrUnavailable, "the gateway's response store cannot be read right now; try again")
		}
		x.prev = rec
	}
	if x.prev != nil {
		if err := x.checkChain(); err != nil {
			return err
		}
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
	if !x.pass {
		c.fullRequest() // translated: the encoder reads the messages
	}
	// The text a lazy parse left escaped is decoded unless nothing reads it decoded
	// (chatRun.prepare's rule): the passthrough forwards the body as it came, and an
	// encoder that is a translate.LiteralReader writes it from its escapes.
	if c.caching() || !(x.pass || (*chatRun)(c).readsLiterals()) {
		responsesin.Decode(req)
	}
	if x.pass {
		if x.prev != nil && !c.route.serves(x.prev.Upstream) {
			return translate.Errorf("previous_response_id", "the response %q was generated by backend %q: continue it with a model of that backend",
				clip(req.PreviousResponseID, maxLoggedString), x.prev.Upstream)
		}
		if x.prev != nil {
			c.call.pin = x.prev.Upstream // its upstream holds the conversation
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
	if err := req.Translatable(x.responsesOnly()); err != nil {
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

// checkChain refuses a continuation the gateway would have to rebuild past
// responses.max_stored_bytes: the stored response was itself over the bound, or its
// conversation and this request's input would be. It measures before anything is joined.
// A response a responses backend stores upstream is continued by id there and rebuilds
// nothing here.
func (x *responsesRun) checkChain() error {
	p, s := x.prev, x.c.s
	if p.Upstream != "" {
		return nil
	}
	if p.Overlong || int64(len(p.Input))+int64(len(p.Output))+int64(len(x.req.Input)) > s.maxStored {
		return translate.Errorf("previous_response_id", "the conversation of response %q is too long to continue by id (over the gateway's %d bytes, responses.max_stored_bytes): send the conversation's items in input instead",
			clip(x.req.PreviousResponseID, maxLoggedString), s.maxStored)
	}
	return nil
}

// passthrough reports whether the body can be forwarded as it is: no tool loop, the route
// and all its fallbacks are responses backends, any previous response is one such a
// backend stored, and no input item holds state Agate sealed for another backend type
// (translated, the request goes without it; unless it uses what only the passthrough
// serves).
func (x *responsesRun) passthrough() bool {
	if len(x.c.defs) > 0 || (x.prev != nil && x.prev.Upstream == "") || (x.req.Sealed && x.req.Untranslatable == nil) {
		return false
	}
	return x.responsesOnly()
}

// responsesOnly reports whether the route and all its fallbacks are responses backends,
// which serve the client's built-in tools on the translated path too.
func (x *responsesRun) responsesOnly() bool {
	c := x.c
	if !c.route.allOfType("responses") {
		return false
	}
	for _, fb := range c.route.fallbacks {
		if r, ok := c.rt.routes[fb]; !ok || !r.allOfType("responses") {
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

// The Responses API's side of the request path (endpointRun).

// forwarder returns the passthrough to responses backends when the body can be
// forwarded as it is (passthrough).
func (x *responsesRun) forwarder() forwarder {
	if !x.pass {
		return nil
	}
	if x.fw.Model == nil {
		x.fw.Model = jsonx.AppendString(nil, x.req.Core.Model)
	}
	return (*responsesForward)(x)
}

func (x *responsesRun) streamEncoder() translate.ClientStream {
	x.newEncoder(true)
	x.answer = responsesin.Answer{Enc: x.enc, Now: unixNow}
	return &x.answer
}

func (x *responsesRun) assembler() translate.ClientAssembler {
	x.newEncoder(false)
	x.answer = responsesin.Answer{Enc: x.enc, Now: unixNow}
	return &x.answer
}

// answered stores the response when the client asked for it (save): the Response object
// the client got (body, or after a stream the encoder's or the upstream's terminal one)
// and its output.
func (x *responsesRun) answered(ctx context.Context, body []byte) {
	if !x.keeps() {
		return
	}
	var response, output []byte
	switch {
	case body != nil:
		response = bytes.Clone(body) // the client's response buffer, reused once written
	case x.pass:
		response = x.fw.Final
	default:
		response = x.enc.AppendResponse(nil)
	}
	if x.pass {
		output = x.fw.Output
	} else {
		output = x.enc.AppendOutput(nil)
	}
	x.save(ctx, response, output)
}

// keeps reports whether the response is kept once answered: stored (store, with a
// store configured), or for the next turn of its WebSocket connection.
func (x *responsesRun) keeps() bool {
	return x.req.Store && x.c.s.responses != nil || x.ws != nil
}

func (x *responsesRun) newEncoder(stream bool) {
	x.enc = responsesin.NewEncoder(x.req, responsesin.EncoderOptions{ID: x.c.responseID(), Model: x.req.Core.Model,
		Created: x.c.start.Unix(), Stream: stream})
}

// save stores the response when the client asked for it. A passthrough response is kept
// under the upstream's id, marked as stored upstream. A response whose record would be
// over responses.max_stored_bytes (measured before its conversation is joined) is kept as
// an Overlong mark, so that its continuation is told why it cannot be. An id that is
// another key's (an upstream may echo what a client chose) is never taken over: the
// response is not stored.
func (x *responsesRun) save(ctx context.Context, response, output []byte) {
	s := x.c.s
	if (!x.req.Store || s.responses == nil) && x.ws == nil || len(response) == 0 {
		return
	}
	rec := &responsestore.Record{Key: x.c.key.name, Response: response, Output: output}
	id := x.c.responseID()
	size := int64(len(response)) + int64(len(output)) + int64(len(x.req.Input))
	if x.pass {
		// The backend that answered stores the response: a fallback's, when one answered.
		r := x.c.route
		if x.c.answeredBy != nil {
			r = x.c.answeredBy
		}
		rec.Upstream = r.backend.name
		id = responsesin.ResponseID(response)
		if id == "" {
			return
		}
		if size <= s.maxStored {
			rec.Input = []byte(x.req.Input)
		}
	} else {
		if x.prev != nil {
			size += int64(len(x.prev.Input)) + int64(len(x.prev.Output))
		}
		if size <= s.maxStored {
			var prev string
			if x.prev != nil {
				prev = joinArrays(string(x.prev.Input), string(x.prev.Output))
			}
			rec.Input = []byte(joinArrays(prev, x.req.Input))
		}
	}
	if size > s.maxStored {
		rec = &responsestore.Record{Key: rec.Key, Upstream: rec.Upstream, Overlong: true}
	}
	x.ws.keep(ctx, id, rec)
	if !x.req.Store || s.responses == nil {
		return
	}
	err := s.responses.Put(ctx, id, rec)
	switch {
	case errors.Is(err, responsestore.ErrIDTaken):
		x.c.call.log().Warn("not storing the response: its id belongs to another key", "backend", x.c.route.backend.name)
	case err != nil:
		x.c.call.log().Warn("storing the response failed", "error", err)
	}
}

// finish records the request's metrics, its span, its ledger record and its access line
// (responsesDone). code 0 means the funnel already counted it.
func (x *responsesRun) finish(ctx *fasthttp.RequestCtx, code int, stream bool) {
	c := x.c
	now := time.Now() // one reading for the histogram, the ledger and the log line
	d := responsesDone{requestDone: requestDone{series: c.call.seriesOf(c.route), logger: c.s.logger, span: c.span, rid: c.rid,
		label: c.route.label(), backend: c.route.backend.name, key: c.key.name, api: apiResponses,
		code: code, stream: stream, at: now, took: now.Sub(c.start),
		prompt: c.call.Usage.PromptTokens, completion: c.call.Usage.CompletionTokens, estimated: c.call.Estimated},
		passthrough: x.pass}
	if !c.firstT.IsZero() {
		d.ttft = c.firstT.Sub(c.start)
	}
	d.answered, d.fallback = c.answeredModel()
	finishSpan(c.span, c.call.Usage, c.start, c.firstT, code, stream)
	c.toLedger(ledgerStatus(ctx, code), stream, now)
	d.record()
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
	return upstream.Fault(backend, what)
}

// responsesForward is the Responses API's side of the passthrough (forwarder): every
// upstream event is forwarded with the client-facing model (the requested one, or the
// configured name of the fallback that answered) in its Response object and a
// sequence_number above the one before it (responsesin.Forward). A payload that is not a
// JSON object, or a stream that ends without a terminal event (response.completed,
// .incomplete, .failed or error), is an upstream error written in-band. A 200 whose body
// is not a JSON Response object is a 502 naming the backend.
type responsesForward responsesRun

func (f *responsesForward) request(dst []byte, r *route, _ *translate.Options) ([]byte, error) {
	return f.req.AppendBody(dst, r.upstreamModel), nil
}

// errors returns the forwarded stream's error writer: its error event is numbered after the
// events forwarded.
func (f *responsesForward) errors() translate.ClientErrors { return &f.fw }

func (f *responsesForward) begin(r *route) {
	f.fw.Begin()
	f.backend = r.backend.name
	f.c.call.resume.malformed = 0
	f.fol.begin(f.c.call.resume.active)
	f.modelOf(r)
}

// modelOf makes f.fw.Model route r's model: the requested one, or the configured name of
// the fallback that answers.
func (f *responsesForward) modelOf(r *route) {
	if r != f.c.route && !bytes.Equal(f.fw.Model[1:len(f.fw.Model)-1], []byte(r.name)) {
		f.fw.Model = jsonx.AppendString(nil, r.name) // a fallback's answer: once a request
	}
}

func (f *responsesForward) event(dst, _, data []byte, m *meter) ([]byte, passed, error) {
	// A delta in the compact flat layout is read once, here, for follow and the forwarder
	// alike (responsesin.ReadFlatEvent); any other event by each of them.
	fe, flat := responsesin.ReadFlatEvent(data)
	if f.c.call.resume.on { // continuation_responses.go
		d, skip, err := f.follow(data, &fe, flat)
		if skip || err != nil {
			return dst, 0, err
		}
		if len(d) != len(data) || len(d) > 0 && &d[0] != &data[0] {
			flat = false // follow changed it: the forwarder reads what the client gets
		}
		data = d
	}
	// A view of data, which lives until this returns; what is kept is copied.
	var out []byte
	var ev responsesin.Forwarded
	if flat {
		out, ev = f.fw.EventRead(dst, data, fe.StreamEvent)
	} else {
		var ok bool
		if out, ev, ok = f.fw.Event(dst, data); !ok { // nothing written: skipped, unless one too many
			return dst, 0, f.c.call.skipMalformed(f.c.call.at.backend, notResponseJSON(f.backend, "sent a stream event that is not a JSON object", data))
		}
	}
	m.noteOutput(ev.DeltaBytes) // estimated if no usage follows
	if ev.HasUsage {
		m.noteUsage(f.ownUsage(ev.Usage))
	}
	return out, passSent | passWrite | passContent, nil
}

func (f *responsesForward) end(err error, _ *meter) error {
	if err == nil && !f.fw.Ended() {
		return upstream.Fault(f.backend, "ended the stream before it finished")
	}
	return err
}

func (f *responsesForward) whole(dst, body []byte, r *route, m *meter) ([]byte, error) {
	resp, kind, model := responsesin.ReadAnswer(body)
	switch kind {
	case responsesin.BodyNotJSON:
		return dst, notResponseJSON(r.backend.name, "answered with a body that is not JSON", body)
	case responsesin.BodyError:
		return dst, r.backend.provider.DecodeError(http.StatusBadGateway, body)
	case responsesin.BodyOther:
		return dst, notResponseJSON(r.backend.name, "answered with a JSON value that is not a Response object", nil)
	}
	m.noteUsage(resp.Usage)
	if (*responsesRun)(f).keeps() { // answered stores it
		f.fw.Output = []byte(resp.Output)
	}
	f.modelOf(r)
	return responsesin.AppendModelAt(dst, body, model, f.fw.Model), nil
}

// handleStoredResponse serves GET and DELETE /v1/responses/{id} for the key's stored
// responses.
func (s *Server) handleStoredResponse(ctx *fasthttp.RequestCtx, rid, method, id string) {
	rt := s.runtime()
	key, err := requestKey(ctx, rt)
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
	rec := s.storedRecord(ctx, rid, key.name, id)
	if rec == nil {
		return
	}
	ctx.SetContentType("application/json")
	ctx.SetBody(rec.Response)
}

// overlong is the 404 for reading a response that was served but not kept, its record
// being over responses.max_stored_bytes.
func (s *Server) overlong(id string) error {
	return errorf(ErrNotFound, "the response %q was not kept: it was over the gateway's %d bytes for a stored response (responses.max_stored_bytes)",
		clip(id, maxLoggedString), s.maxStored)
}

// storedRecord returns the stored response id of key, or writes the error (404, also for a
// response served but not kept, its record over responses.max_stored_bytes; or 503 when
// the store cannot be read) and returns nil.
func (s *Server) storedRecord(ctx *fasthttp.RequestCtx, rid, key, id string) *responsestore.Record {
	rec, err := s.responses.Get(s.baseCtx, key, id)
	switch {
	case errors.Is(err, responsestore.ErrExpired):
		writeError(ctx, classify(errorf(ErrNotFound, "the response %q has expired from the gateway's store", clip(id, maxLoggedString)), rid))
		return nil
	case errors.Is(err, responsestore.ErrNotFound):
		writeError(ctx, classify(errorf(ErrNotFound, "no response with id %q was found", clip(id, maxLoggedString)), rid))
		return nil
	case err != nil:
		s.logger.Error("reading the response store", "request_id", rid, "error", err)
		writeError(ctx, classify(errorf(ErrUnavailable, "the gateway's response store cannot be reached right now; try again"), rid))
		return nil
	}
	if rec.Overlong {
		writeError(ctx, classify(s.overlong(id), rid))
		return nil
	}
	return rec
}

// handleInputItems serves GET /v1/responses/{id}/input_items for the key's stored
// responses: the items the response was generated from (those of earlier responses of its
// previous_response_id chain included), paged by limit, order and after as OpenAI pages them.
func (s *Server) handleInputItems(ctx *fasthttp.RequestCtx, rid, method, id string) {
	rt := s.runtime()
	key, err := requestKey(ctx, rt)
	if err != nil {
		writeError(ctx, classify(err, rid))
		return
	}
	if method != "GET" {
		s.methodNotAllowed(ctx, rid, "GET")
		return
	}
	args := ctx.QueryArgs()
	q, err := responsesin.ParseListQuery(string(args.Peek("limit")), string(args.Peek("order")), string(args.Peek("after")))
	if err != nil {
		writeError(ctx, classify(err, rid))
		return
	}
	if s.responses == nil {
		writeError(ctx, classify(errorf(ErrNotFound, "no response with id %q was found: this gateway stores no responses (responses.store: off)", clip(id, maxLoggedString)), rid))
		return
	}
	rec := s.storedRecord(ctx, rid, key.name, id)
	if rec == nil {
		return
	}
	body, err := responsesin.AppendInputItems(nil, id, rec.Input, q)
	if err != nil {
		writeError(ctx, classify(err, rid))
		return
	}
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
}
