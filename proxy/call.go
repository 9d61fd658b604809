package proxy

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agate-gateway/agate/metrics"
	"github.com/agate-gateway/agate/telemetry"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/upstream"
)

// modelCall runs model turns for one client request against a route and its fallbacks,
// with retries. It implements the loop's Model interface. It is the glue of one client
// request over package upstream, which sends and reads each attempt: the route and its
// fallbacks, the key, the body buffers lent from the Server's pools, the usage charged,
// the limits, the spans and the metrics. Not safe for concurrent use.
type modelCall struct {
	rt      *runtime
	route   *route
	key     *apiKey
	metrics *metrics.Metrics
	// base and rid make the request's logger on first use (log).
	base   *slog.Logger
	rid    string
	logger *slog.Logger
	// body holds the upstream request body from its encoding until send returns (the
	// request is then written), and a non-streamed answer's body while it is decoded, lent
	// from the Server's pool of body buffers.
	body upstream.Buffer
	// bodySize is the size the upstream request body is expected to reach (serve: a little
	// over the client's body), for its buffer (upstream.Buffer.TakeFor).
	bodySize int
	// reads holds the read buffers of upstream streams (upstream.Pump); nil means none.
	reads *sync.Pool
	// sent is set once any event reached the emit callback: from then on a failure cannot
	// be retried, because the client has seen part of an answer; it may be continued
	// (resume, continuation.go).
	sent bool
	// resume records what a streamed turn showed the client, to continue it after a
	// failure; room is the event it shows instead of one it edits.
	resume resume
	room   translate.Event
	// answer is the Event a whole answer's events are decoded into
	// (translate.ResponseDecoderInto), so that the decoder allocates none.
	answer translate.Event
	// tries is the number of the running attempt on its route, from 1 (tracedAttempt).
	tries int
	// at is the route of the running attempt, or of the last one: once an answer was
	// accepted, the route that answered it (the route or one of its fallbacks). reason is
	// why at was tried if it is a fallback (fallbackOnError, ...).
	at     *route
	reason string
	// accepted is set once the running attempt's upstream accepted it (a 2xx head).
	accepted bool
	// flush, when set, sends what the output buffered to the client; it is called after
	// every upstream read (streaming outputs only).
	flush func() error
	// Usage sums the usage of every turn; Estimated is set once a turn's was estimated, in
	// part or whole.
	Usage     translate.Usage
	Estimated bool
	// meter counts the usage of the running attempt.
	meter meter
	// spend prices each turn for usd budgets; nil means none.
	spend *limitRun
	// headers are sent upstream after the provider's own, replacing any of the same name
	// (the Messages passthrough's anthropic-version); nil means none.
	headers []translate.Header
	// own is the room for headers (the Messages passthrough's one).
	own [1]translate.Header
	// betas are the client's anthropic-beta names (the Messages passthrough), sent to each
	// backend as far as its allowed_betas go (upstreamHeaders); nil means none.
	betas *clientBetas
	// hdrs is the room for the headers of one upstream request (send).
	hdrs [8]translate.Header
	// opts is the room for the encoder options of one upstream call (options).
	opts translate.Options

	// x is the memory of the upstream exchange in progress (send).
	x upstream.Exchange

	// deadline is when the request's time is up (route.requestTimeout, counted from its
	// first turn): no attempt, backoff or fallback goes past it. Zero: none.
	deadline time.Time
	// first bounds the running attempt's wait for its first event (route.firstToken);
	// nil when there is no such bound.
	first *firstEvent

	// series are the metric series of seriesRoute and key (seriesOf).
	series      *metrics.Series
	seriesRoute *route

	// tracer is nil when tracing is off; chat is the span of the running attempt.
	tracer *telemetry.Tracer
	chat   *telemetry.Chat

	// emit is where the running attempt's events go (run). countFn is countEvent as a
	// func value, made on first use and kept by a recycled requestRun (Reset): a method value
	// handed to a provider is allocated, and this way once per modelCall, not per turn.
	emit    translate.Emit
	countFn translate.Emit

	// pathFor, when set, gives the upstream path on a route in place of its provider's
	// chat path (embeddings); operation names the attempts' spans' gen_ai.operation.name
	// ("" is chat).
	pathFor   func(*route) string
	operation string
	// For the ledger: the tool calls the model made, the fallbacks tried, and the time
	// spent waiting for upstream response headers, over the whole request.
	toolCalls, fallbacks int
	upstreamTime         time.Duration
	// captured is the answer's text, up to captureMax bytes, for the ledger's
	// capture_content (captureMax 0: nothing is captured).
	captured   []byte
	captureMax int
	// affinity is the request's affinity key (0: none) and pin the backend a
	// continuation must go to ("": any), for a model with deployments; firstAt and
	// headersAt time the running attempt's first event and response head (deployments.go).
	// firstAt is read only for deployments (outcome), which set timeFirst: other attempts
	// leave the clock alone.
	affinity           uint64
	pin                string
	firstAt, headersAt time.Time
	timeFirst          bool
	// sentAt is when the running attempt's upstream request was sent (send's clock
	// reading, the start of its wait for headers); zero until then. An attempt's
	// duration for the ledger runs from it (tracedAttempt), with no clock reading of its
	// own at the attempt's start.
	sentAt time.Time
	// continuedFrom is the route whose stream broke, once a continuation finished the
	// answer on c.at (continuation.go); nil when none did.
	continuedFrom *route
	// tried is the request's attempts, for the ledger (attempts.go), noted only when
	// noteAttempts is set (the server has a ledger; tried is then not nil): the run's
	// attemptRoom, outside the memory a recycled run zeroes (requestRun.Reset).
	tried        *attemptLog
	noteAttempts bool
}

// log returns the request's logger (request_id first), made on first use: most
// requests log nothing through it.
func (c *modelCall) log() *slog.Logger {
	if c.logger == nil {
		c.logger = requestLogger(c.base, c.rid)
	}
	return c.logger
}

// Stream runs one model turn for req and passes its events to emit. Failures before any
// event was emitted are retried (429, 5xx, connection errors) with exponential backoff and
// jitter, then tried on the fallback models; later failures are returned.
func (c *modelCall) Stream(ctx context.Context, req *translate.Request, emit translate.Emit) error {
	return c.run(ctx, req, true, emit)
}

// Complete runs one non-streamed model turn.
func (c *modelCall) Complete(ctx context.Context, req *translate.Request, emit translate.Emit) error {
	return c.run(ctx, req, false, emit)
}

// run runs one translated turn: the route's provider phrases the request and decodes the
// answer into events for emit.
func (c *modelCall) run(ctx context.Context, req *translate.Request, stream bool, emit translate.Emit) error {
	if c.countFn == nil {
		c.countFn = c.countEvent
	}
	c.meter.prompt = req
	c.startResume(req, stream)
	err := c.withRetries(ctx, func(ctx context.Context, r *route) error {
		return c.translated(ctx, req, r, stream, emit)
	})
	if err != nil && c.sent && c.resume.on {
		err = c.continueTurn(ctx, req, emit, err)
	}
	return err
}

// translated runs one attempt of run on route r.
func (c *modelCall) translated(ctx context.Context, req *translate.Request, r *route, stream bool, emit translate.Emit) error {
	counted := c.countFn
	c.emit = emit
	if req.ParallelToolCalls != nil && !*req.ParallelToolCalls {
		c.emit = translate.FirstToolCallOnly(emit) // Gemini cannot be asked for one call a turn
	}
	if lp := r.local(); lp != nil {
		c.chat.Request(req, stream, r.maxTokens) // roundTrip records the others
		return lp.Answer(ctx, req, r.upstreamModel, func(ev *translate.Event) error {
			if err := counted(ev); err != nil || c.flush == nil {
				return err
			}
			return c.flush() // one event at a time, like an upstream stream
		})
	}
	ctx = c.startFirst(ctx, r, stream)
	defer c.endFirst()
	return c.roundTrip(ctx, r, stream, func(dst []byte, opts *translate.Options) ([]byte, error) {
		c.chat.Request(req, stream, opts.DefaultMaxTokens)
		return r.backend.provider.AppendRequest(dst, req, opts)
	}, func(x *upstream.Exchange, opts *translate.Options) error {
		c.armFirst(r)
		return c.firstOr(c.decode(ctx, x, r.backend, opts, counted))
	})
}

// countEvent passes ev on to the attempt's emit (run), noting the usage it reports and
// that the client has now seen part of an answer.
func (c *modelCall) countEvent(ev *translate.Event) error {
	switch ev.Kind {
	case translate.EventTextDelta, translate.EventReasoningDelta, translate.EventRefusalDelta, translate.EventToolCallArgsDelta:
		c.meter.noteOutput(len(ev.Text))
		if c.captureMax > 0 && ev.Kind == translate.EventTextDelta {
			c.capture(ev.Text)
		}
	case translate.EventToolCallStart:
		c.meter.noteOutput(len(ev.Name))
		c.toolCalls++
	case translate.EventUsage:
		c.meter.noteUsage(ev.Usage)
	}
	if err := c.showing(); err != nil {
		return err
	}
	if c.timeFirst && c.firstAt.IsZero() {
		c.firstAt = time.Now()
	}
	if c.resume.on {
		// A continuation's events it does not show (the text the client has) still end
		// the wait for a first event (showing, above).
		shown, err := c.resume.pass(ev, &c.room)
		if shown == nil || err != nil {
			return err
		}
		ev = shown
	}
	c.sent = true
	c.chat.Event(ev)
	return c.emit(ev)
}

// roundTrip performs one upstream exchange on route r: encode phrases the request body
// for the route's options into dst (the lent body buffer), it is sent, and the accepted
// (2xx) exchange is handed to consume, then closed. Both the translated path (run) and
// the passthrough use it.
func (c *modelCall) roundTrip(ctx context.Context, r *route, stream bool,
	encode func(dst []byte, opts *translate.Options) ([]byte, error),
	consume func(*upstream.Exchange, *translate.Options) error) error {
	opts := c.options(r, stream)
	body, err := encode(c.body.TakeFor(c.bodySize), opts)
	c.body.Hold(body)
	if err != nil {
		return err
	}
	x, err := c.send(ctx, r, opts, false)
	if upstream.Resend(err) {
		// The body, given back once written, went to a connection the upstream had
		// closed: built again and sent at once on a fresh one (SendBuffer).
		body, err = encode(c.body.TakeFor(c.bodySize), opts)
		c.body.Hold(body)
		if err != nil {
			return err
		}
		x, err = c.send(ctx, r, opts, true)
	}
	if err != nil {
		return err
	}
	defer x.Close()
	return consume(x, opts)
}

// withRetries runs attempt on the route, retrying, then on each fallback route.
// The request's deadline (route.requestTimeout) bounds them all: an attempt's wait for
// headers ends at it, no backoff or fallback starts after it, and its passing is the
// request's error (requestTimeout) unless part of an answer reached the client. A route
// whose circuit is open is skipped without an attempt (breaker.go); an error that says the
// request is over the model's context window goes to the model's context_fallbacks
// instead of its fallbacks.
func (c *modelCall) withRetries(ctx context.Context, attempt func(context.Context, *route) error) error {
	c.sent = false
	fresh := false // the deadline was set just now: it has not passed before the first route
	if c.deadline.IsZero() && c.route.requestTimeout > 0 {
		c.deadline, fresh = time.Now().Add(c.route.requestTimeout), true
	}
	routes := []*route{c.route} // on the stack: no call may take it (it would escape)
	for _, fb := range c.route.fallbacks {
		if r, ok := c.rt.routes[fb]; ok {
			routes = append(routes, r)
		}
	}
	var last error
	reason, contextTried := fallbackOnError, false
	for i := 0; i < len(routes); i++ {
		r := routes[i]
		if !(i == 0 && fresh) && c.expired() {
			return c.requestTimeout(last)
		}
		if i > 0 && !c.key.allows(r.name) {
			// The key's model allowlist holds for fallbacks too.
			c.skipFallback(r, skipNotAllowed, "")
			continue
		}
		if v := c.circuitVerdict(r); !v.Allow && (!v.Held || i < len(routes)-1) {
			// An open circuit's route is not tried (a held one is, when nothing follows it).
			last, reason = c.skipCircuit(r, v), fallbackOnCircuit
			continue
		}
		if i > 0 {
			// So do the fallback's own limits, checked now that it is to be called.
			if ok, d := c.spend.admitFallback(r); !ok {
				c.skipFallback(r, skipLimited, d.String())
				continue
			}
		}
		if i > 0 {
			c.fallingBack(routes[i-1], r, reason, last)
		}
		c.at, c.reason = r, reason
		last = c.attemptsOn(ctx, r, attempt)
		if last == nil || c.sent || ctx.Err() != nil {
			return last
		}
		if c.expired() {
			return c.requestTimeout(last)
		}
		reason = fallbackOnError
		if ue := upstream.AsError(last); ue != nil && ue.Code == "upstream_circuit_open" {
			reason = fallbackOnCircuit // every deployment of r is open (deploymentsOpen)
		}
		if !upstream.Retryable(last) {
			if contextTried || !c.contextExceeded(c.at, last) { // c.at: the deployment that said it
				return last
			}
			// Over the model's context window: its context_fallbacks, and nothing else.
			routes, reason, contextTried = routes[:i+1], fallbackOnContext, true
			for _, fb := range c.route.contextFallbacks {
				if r, ok := c.rt.routes[fb]; ok {
					routes = append(routes, r)
				}
			}
		}
	}
	return last
}

// skipFallback counts and logs fallback route r skipped: why is skipNotAllowed (the key
// may not use it) or skipLimited (over its limits, limit). It and fallingBack are
// withRetries' cold paths, kept out of its frame: withRetries is on the stack of every
// stream's writer, under the upstream send and every event (PERFORMANCE.md, "The stream
// event and peak RSS, fifteenth session").
//
//go:noinline
func (c *modelCall) skipFallback(r *route, why, limit string) {
	c.metrics.FallbacksSkipped.WithLabelValues(c.route.label(), r.name, c.key.name, why).Inc()
	if why == skipLimited {
		c.log().Info("fallback skipped: over its limits", "from", c.route.label(), "to", r.name, "limit", limit)
		return
	}
	c.log().Info("fallback skipped: the key may not use it", "from", c.route.label(), "to", r.name)
}

// fallingBack counts and logs the move from route from, whose attempts ended in last, to
// fallback r.
//
//go:noinline
func (c *modelCall) fallingBack(from, r *route, reason string, last error) {
	c.fallbacks++
	c.metrics.UpstreamRetries.WithLabelValues(r.backend.name, "fallback").Inc()
	c.log().Warn("falling back", "from", from.name, "to", r.name, "reason", reason, "error", logError(last, c.rt.cfg.Log.UpstreamErrorMessages))
}

// expired reports whether the request's deadline has passed.
func (c *modelCall) expired() bool {
	return !c.deadline.IsZero() && !time.Now().Before(c.deadline)
}

// requestTimeout is the request's error once its deadline passed, last being the error
// of its last attempt (logged): a 504 the client sees in its API's shape.
func (c *modelCall) requestTimeout(last error) error {
	lastErr := "none"
	if last != nil {
		lastErr = logError(last, c.rt.cfg.Log.UpstreamErrorMessages)
	}
	c.log().Warn("request deadline passed: nothing more is tried", "model", c.route.label(),
		"timeout", c.route.requestTimeout.String(), "error", lastErr)
	return &translate.UpstreamError{Status: http.StatusGatewayTimeout, Type: "api_error", Code: "request_timeout",
		Message: "the request to model " + c.route.name + " did not complete within its timeouts.request (" + c.route.requestTimeout.String() + ")"}
}

// attempts tries one route up to 1+retries times (upstream.Retries.Do), each attempt in
// its own span with its usage counted (tracedAttempt); a failure after the client saw
// part of an answer is not retried, nor a silent upstream (upstream.TimedOut) unless the
// backend's retries.on_timeout is retry, nor one whose backoff would outlast the
// request's deadline, nor one whose circuit its failure opened.
func (c *modelCall) attempts(ctx context.Context, r *route, try func(context.Context, *route) error) error {
	b := r.backend
	return b.retries.Do(ctx, func(ctx context.Context, attempt int) error {
		return c.tracedAttempt(ctx, r, attempt, try) // counted, in a client span
	}, func(attempt int, delay time.Duration, err error) bool {
		if c.sent || (!b.retryTimeouts && upstream.TimedOut(err)) || c.circuitOpen(r) {
			return false
		}
		if !c.deadline.IsZero() && time.Now().Add(delay).After(c.deadline) {
			return false
		}
		c.metrics.UpstreamRetries.WithLabelValues(b.name, "retry").Inc()
		c.log().Info("retrying upstream", "backend", b.name, "attempt", attempt+1, "delay", delay.String(), "error", logError(err, c.rt.cfg.Log.UpstreamErrorMessages))
		return true
	})
}

// counted runs one attempt and adds the usage it reported to the request's.
func (c *modelCall) counted(ctx context.Context, r *route, try func(context.Context, *route) error) error {
	c.meter.reset()
	c.accepted = false
	defer c.countUsage(r)
	err := try(ctx, r)
	c.recordCircuit(r, err)
	return err
}

// decode reads the answer of x, streamed or whole (opts.Stream), as events for emit.
func (c *modelCall) decode(ctx context.Context, x *upstream.Exchange, b *backend, opts *translate.Options, emit translate.Emit) error {
	if !opts.Stream {
		body, err := c.body.Answer(ctx, x, b.name)
		if err != nil {
			return err
		}
		if d, ok := b.provider.(translate.ResponseDecoderInto); ok {
			err = d.DecodeResponseInto(body, &c.answer, emit)
		} else {
			err = b.provider.DecodeResponse(body, emit)
		}
		if err != nil {
			c.body.DropAnswer(x) // the error may quote the body
			return err
		}
		c.body.Release() // events alias the body only while emit runs (translate.Event)
		return nil
	}
	body, err := upstream.DecodedBody(x, b.name)
	if err != nil {
		return err
	}
	dec := b.provider.NewStreamDecoder(opts)
	c.resume.malformed = 0
	err = b.client.Pump(ctx, body, c.reads, func(typ, data []byte) error {
		if err := dec.Event(typ, data, emit); err != nil {
			if errors.Is(err, translate.ErrMalformedEvent) {
				return c.skipMalformed(b, err) // one unreadable event: the stream goes on
			}
			return err
		}
		return nil
	}, c.flush, func() error { return dec.Close(emit) })
	// The stream ended early (the client left, the upstream failed): count what the
	// upstream had reported, which Close would have emitted.
	c.meter.noteUsageSoFar(dec, err)
	return err
}

// send posts c.body to the route's upstream and times the wait for response headers;
// again is set for the second send of a body upstream.Resend asked for.
func (c *modelCall) send(ctx context.Context, r *route, opts *translate.Options, again bool) (*upstream.Exchange, error) {
	b := r.backend
	start := time.Now()
	headers := append(c.hdrs[:0], c.upstreamHeaders(b)...)
	headers = traceHeaders(ctx, c.tracer, headers)
	// A model call makes one exchange at a time and closes it before the next (roundTrip
	// and the endpoints' attempts defer Close): each is made in the call's own.
	var path string
	if c.pathFor != nil {
		path = c.pathFor(r)
	} else {
		path = b.provider.Path(r.upstreamModel, opts.Stream)
	}
	x, err := b.client.SendBuffer(ctx, c.deadline, path, headers, &c.body, again, opts.Stream, &c.x)
	c.body.Release()
	c.accepted, c.sentAt = err == nil, start
	c.headersAt = time.Now()
	took := c.headersAt.Sub(start)
	c.upstreamTime += took
	if upstream.Resend(err) {
		return nil, err // one attempt with the next send, as SendBy's own second send is
	}
	observe(ctx, c.tracer, r.upstreamSeries(c.metrics).Of(upstream.StatusLabel(err)), took.Seconds())
	if ue := keyRejected(err); ue != nil {
		return nil, c.credentialRejected(b, ue)
	}
	return x, err
}

// credentialRejected logs the upstream's rejection ue of the gateway's credential for b
// and returns the client's error (credentialFault). Out of send's frame, as withRetries'
// cold paths (skipFallback).
//
//go:noinline
func (c *modelCall) credentialRejected(b *backend, ue *translate.UpstreamError) error {
	c.log().Error("upstream rejected the gateway's credential", "backend", b.name, "upstream_error", logError(ue, c.rt.cfg.Log.UpstreamErrorMessages))
	return credentialFault(b.name, b.credentialKey())
}

// keyRejected returns err's upstream error when it is a rejected API key: every
// provider's error decoder maps one to 401 (Gemini's 400 API_KEY_INVALID included).
func keyRejected(err error) *translate.UpstreamError {
	if ue := upstream.AsError(err); ue != nil && ue.Status == http.StatusUnauthorized {
		return ue
	}
	return nil
}

// credentialFault is what the client gets for an upstream that rejected the gateway's
// credential (keyRejected): a 502 that says so. The key is the gateway's, not the
// client's: passing the 401 on would tell the client its own key is wrong. key is the
// backend's config key to check (backend.credentialKey).
func credentialFault(backend, key string) *translate.UpstreamError {
	fault := upstream.Fault(backend, "rejected the gateway's credential: the gateway operator must check backends."+backend+"."+key)
	fault.Code = "upstream_auth_failed"
	return fault
}

// countUsage adds the last attempt's usage (meter.charge: reported, or estimated where
// the upstream reported none) to the request total, its cost and the token metrics. It
// leaves it in the meter, for the attempt's span.
func (c *modelCall) countUsage(r *route) {
	u, estimated := c.meter.charge()
	c.Usage.Add(u)
	c.spend.addCost(c.rt, r, u)
	c.spend.served(r, u)
	s := c.seriesOf(r)
	s.AddTokens(tokenCounts(u))
	if estimated {
		c.Estimated = true
		s.CountEstimated()
	}
}

// seriesOf returns the metric series of route r and the call's key, looked up once for
// the route the call last asked about (a request's calls and its record ask for the same).
func (c *modelCall) seriesOf(r *route) *metrics.Series {
	if c.series == nil || c.seriesRoute != r {
		c.series, c.seriesRoute = r.seriesFor(c.metrics, c.key.name), r
	}
	return c.series
}

// options returns the encoder options for route r. They live in c (no allocation per
// call): a request's upstream calls run one at a time, each done with its options
// before the next asks for them.
func (c *modelCall) options(r *route, stream bool) *translate.Options {
	b := r.backend
	c.opts = translate.Options{
		UpstreamModel:    r.upstreamModel,
		Stream:           stream,
		DefaultMaxTokens: r.maxTokens,
		PromptCache:      r.promptCache,
		DropUnsupported:  b.cfg.DropUnsupportedParams,
		Store:            b.cfg.Store,
	}
	if b.cfg.DropUnsupportedParams { // Dropped is called only then (Options.Drop)
		c.opts.Dropped = func(p string) { c.metrics.DroppedParams.WithLabelValues(b.name, paramLabel(p)).Inc() }
	}
	return &c.opts
}

func tokenCounts(u translate.Usage) metrics.TokenCounts {
	return metrics.TokenCounts{Prompt: u.PromptTokens, Completion: u.CompletionTokens, Cached: u.CachedTokens,
		CacheCreation: u.CacheCreationTokens, Reasoning: u.ReasoningTokens}
}

// tracedAttempt runs one upstream attempt on route r (attempt counts from 0) in its own
// client span.
func (c *modelCall) tracedAttempt(ctx context.Context, r *route, attempt int, try func(context.Context, *route) error) (err error) {
	c.tries = attempt + 1
	if c.noteAttempts { // a clock reading an attempt spared without a ledger
		// The attempt is timed from its request's sending (send's clock reading: its
		// body's encoding before it, microseconds, is left out), to spare a reading here;
		// one that failed before it was sent took no upstream time (0).
		c.sentAt = time.Time{}
		// After counted: the meter holds the attempt's charge (countUsage).
		defer func() {
			var took time.Duration
			if !c.sentAt.IsZero() {
				took = time.Since(c.sentAt)
			}
			c.tried.note(r, err, took, c.resume.active, &c.meter.last)
		}()
	}
	if c.tracer == nil {
		return c.counted(ctx, r, try)
	}
	ctx, c.chat = c.tracer.StartChat(ctx, telemetry.Attempt{Type: r.backend.typ, Backend: r.backend.name, Route: r.name,
		Model: r.upstreamModel, Number: attempt + 1, Fallback: r.of() != c.route, BaseURL: r.backend.baseURL, FallbackReason: c.fallbackReason(r),
		Operation: c.operation})
	err = c.counted(ctx, r, try)
	c.chat.End(c.meter.last, err)
	c.chat = nil
	return err
}

// upstreamHeaders returns the request's own headers for backend b: c.headers and, for a
// client that sent anthropic-beta, the names b allows; a cloud's, cloudHeaders.
func (c *modelCall) upstreamHeaders(b *backend) []translate.Header {
	if h, ok := c.cloudHeaders(b); ok { // Claude on a cloud (messages_cloud.go)
		return h
	}
	if c.betas == nil {
		return c.headers
	}
	value := c.betas.valueFor(b.name, b.betas, c.metrics)
	if value == "" {
		return c.headers
	}
	return append(slices.Clip(c.headers), translate.Header{Name: "anthropic-beta", Value: value})
}

// firstEvent bounds the wait for an attempt's first event once its response head came
// (models.<name>.timeouts.first_token): when the bound passes before any event reached
// the client, the attempt's context is cancelled (which closes the upstream stream) and
// the attempt fails with err, a silent upstream's error (upstream.TimedOut), to be
// failed over or retried as the backend's retries.on_timeout says. Made only for routes
// with the bound.
type firstEvent struct {
	// state is 0 while waiting, 1 once timed out, 2 once an event was shown: whichever
	// of the timer and the first event comes first decides.
	state  atomic.Int32
	cancel context.CancelFunc
	timer  *time.Timer
	err    error
}

// arm starts the bound of d.
func (f *firstEvent) arm(d time.Duration) {
	f.timer = time.AfterFunc(d, func() {
		if f.state.CompareAndSwap(0, 1) {
			f.cancel()
		}
	})
}

// shown notes that the first event is to reach the client; false when the bound passed
// first (the event must then not be shown).
func (f *firstEvent) shown() bool { return f.state.CompareAndSwap(0, 2) }

// timedOut reports whether the bound passed before the first event.
func (f *firstEvent) timedOut() bool { return f.state.Load() == 1 }

// startFirst makes the first-event bound of a streamed attempt on r when the route has
// one (route.firstToken), whose passing cancels the returned context; endFirst stops it.
// The translated path and the passthrough both use it: armFirst once the response head
// came, showing before an event reaches the client, firstOr at the attempt's end.
func (c *modelCall) startFirst(ctx context.Context, r *route, stream bool) context.Context {
	if !stream || r.firstToken <= 0 {
		return ctx
	}
	var cancel context.CancelFunc
	ctx, cancel = context.WithCancel(ctx)
	c.first = &firstEvent{cancel: cancel,
		err: upstream.TimeoutFault(r.backend.name, "sent no event within models."+r.name+".timeouts.first_token ("+r.firstToken.String()+")")}
	return ctx
}

// armFirst starts the running attempt's first-event bound, if any: from the response head on.
func (c *modelCall) armFirst(r *route) {
	if c.first != nil {
		c.first.arm(r.firstToken)
	}
}

// showing is called before an event of the attempt reaches the client: it returns the
// attempt's timeout error when its first-event bound passed first (too late: the attempt
// is failing over), else nil, the event being shown.
func (c *modelCall) showing() error {
	if !c.sent && c.first != nil && !c.first.shown() && c.first.timedOut() {
		return c.first.err
	}
	return nil
}

// firstOr returns the attempt's timeout error when its first-event bound passed (the
// error that ended the attempt is then the cancellation), else err.
func (c *modelCall) firstOr(err error) error {
	if c.first != nil && c.first.timedOut() {
		return c.first.err
	}
	return err
}

// endFirst stops the running attempt's first-event bound, if any.
func (c *modelCall) endFirst() {
	if f := c.first; f != nil {
		if f.timer != nil {
			f.timer.Stop()
		}
		f.cancel()
		c.first = nil
	}
}
