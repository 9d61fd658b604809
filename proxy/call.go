package proxy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/agate-gateway/agate/internal/sse"
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
	// buf holds the upstream request body from its encoding until send returns (the
	// request is then written), taken from and returned to bufs (the Server's pool of
	// body buffers; nil means none).
	buf  []byte
	bufp *[]byte // the pooled slice header buf came from
	bufs *sync.Pool
	// reads holds the read buffers of upstream streams (upstream.Pump); nil means none.
	reads *sync.Pool
	// sent is set once any event reached the emit callback: from then on a failure cannot
	// be retried, because the client has seen part of an answer.
	sent bool
	// flush, when set, sends what the output buffered to the client; it is called after
	// every upstream read (streaming outputs only).
	flush func() error
	// Usage sums the usage of every turn; Estimated is set once a turn's was estimated, in
	// part or whole (usage.go).
	Usage     translate.Usage
	Estimated bool
	// lastUsage is the usage the running attempt's upstream reported last, tail the bytes
	// of output it sent past those figures (noteOutput), prompt the request of the running
	// turn, whose tokens are estimated when the upstream reports none (attemptUsage).
	lastUsage translate.Usage
	tail      int
	prompt    *translate.Request
	spend     *limitRun // limits.go: prices each turn for usd budgets; nil means none
	// headers are sent upstream after the provider's own, replacing any of the same name
	// (the Messages passthrough's anthropic-version); nil means none.
	headers []translate.Header
	// betas are the client's anthropic-beta names (the Messages passthrough), sent to each
	// backend as far as its allowed_betas go (upstreamHeaders); nil means none.
	betas *clientBetas
	// hdrs is the room for the headers of one upstream request (send).
	hdrs [8]translate.Header
	// opts is the room for the encoder options of one upstream call (options).
	opts translate.Options

	// x is the memory of the upstream exchange in progress (send).
	x exchange

	// series are the metric series of seriesRoute and key (seriesOf).
	series      *metrics.Series
	seriesRoute *route

	// tracer is nil when tracing is off; chat is the span of the running attempt (tracing.go).
	tracer *telemetry.Tracer
	chat   *telemetry.Chat

	// emit is where the running attempt's events go (run). countFn is countEvent as a
	// func value, made on first use and kept by a recycled requestRun (Reset): a method value
	// handed to a provider is allocated, and this way once per modelCall, not per turn.
	emit    translate.Emit
	countFn translate.Emit
}

// log returns the request's logger (request_id first), made on first use: most
// requests log nothing through it.
func (c *modelCall) log() *slog.Logger {
	if c.logger == nil {
		c.logger = requestLogger(c.base, c.rid)
	}
	return c.logger
}

// takeBuf returns an empty buffer for the next upstream request body.
func (c *modelCall) takeBuf() []byte {
	if c.buf == nil && c.bufs != nil {
		if b, ok := c.bufs.Get().(*[]byte); ok {
			c.buf, c.bufp = *b, b
		}
	}
	return c.buf[:0]
}

// releaseBuf returns c.buf to the pool once the request it held was written; large ones
// are left to the garbage collector.
func (c *modelCall) releaseBuf() {
	if c.bufs != nil && c.buf != nil && cap(c.buf) <= maxPooledBody {
		b := c.bufp
		if b == nil {
			b = new([]byte)
		}
		*b = c.buf[:0]
		c.bufs.Put(b)
	}
	c.buf, c.bufp = nil, nil
}

// dropBuf forgets c.buf without pooling it: something may still refer to its bytes.
func (c *modelCall) dropBuf() { c.buf, c.bufp = nil, nil }

// answerBody returns x's whole body, to be read while x is open. A body fasthttp read
// whole (send: not streamed, not encoded) is the response's own buffer, used where it is
// rather than copied; any other is read into c.buf (readPooled). Once nothing refers to
// the body the caller calls releaseBuf, or dropAnswer when something still may.
func (c *modelCall) answerBody(ctx context.Context, x *exchange, backend string) ([]byte, error) {
	if body, ok := x.Buffered(); ok {
		return body, nil
	}
	return c.readPooled(ctx, x, backend)
}

// dropAnswer leaves the body answerBody returned to whatever still refers to it: a pooled
// buffer is forgotten (dropBuf), the response's own buffer is taken out of the response,
// which fasthttp would otherwise reuse once x is closed.
func (c *modelCall) dropAnswer(x *exchange) {
	if c.buf == nil {
		x.KeepBody()
	}
	c.dropBuf()
}

// readPooled reads x's whole body (upstream.ReadBody) into c.buf, a pooled buffer. The caller
// returns it with releaseBuf once nothing refers to the body, or drops it (dropBuf) when
// something may; a read error has already released it.
func (c *modelCall) readPooled(ctx context.Context, x *exchange, backend string) ([]byte, error) {
	body, err := upstream.ReadBody(ctx, x, backend, c.takeBuf())
	if err != nil {
		c.releaseBuf()
		return nil, err
	}
	if cap(body) > cap(c.buf) {
		c.buf = body[:0] // a larger body's buffer goes to the pool in its stead
	}
	return body, nil
}

// errClientGone is returned by emit callbacks when the client disconnected.
var errClientGone = errors.New("client disconnected")

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
	counted := c.countFn
	c.prompt = req
	return c.withRetries(ctx, func(ctx context.Context, r *route) error {
		c.emit = emit
		if req.ParallelToolCalls != nil && !*req.ParallelToolCalls {
			c.emit = translate.FirstToolCallOnly(emit) // Gemini cannot be asked for one call a turn
		}
		if lp, ok := r.backend.provider.(localProvider); ok {
			c.chat.Request(req, stream, r.maxTokens) // tracing.go (roundTrip records the others)
			return lp.Answer(ctx, req, r.upstreamModel, func(ev *translate.Event) error {
				if err := counted(ev); err != nil || c.flush == nil {
					return err
				}
				return c.flush() // one event at a time, like an upstream stream
			})
		}
		return c.roundTrip(ctx, r, req, stream, func(x *exchange, opts *translate.Options) error {
			return c.decode(ctx, x, r.backend, opts, counted)
		})
	})
}

// countEvent passes ev on to the attempt's emit (run), noting the usage it reports and
// that the client has now seen part of an answer.
func (c *modelCall) countEvent(ev *translate.Event) error {
	switch ev.Kind {
	case translate.EventTextDelta, translate.EventReasoningDelta, translate.EventRefusalDelta, translate.EventToolCallArgsDelta:
		c.noteOutput(len(ev.Text))
	case translate.EventToolCallStart:
		c.noteOutput(len(ev.Name))
	case translate.EventUsage:
		c.noteUsage(ev.Usage)
	}
	c.sent = true
	c.chat.Event(ev) // tracing.go
	return c.emit(ev)
}

// roundTrip performs one upstream exchange on route r: it phrases req for the route's
// provider, sends it, and hands the accepted (2xx) exchange to consume. Both the
// translated path (run) and the passthrough use it.
func (c *modelCall) roundTrip(ctx context.Context, r *route, req *translate.Request, stream bool,
	consume func(*exchange, *translate.Options) error) error {
	opts := c.options(r, stream)
	c.chat.Request(req, stream, opts.DefaultMaxTokens) // tracing.go
	var err error
	c.buf, err = r.backend.provider.AppendRequest(c.takeBuf(), req, opts)
	if err != nil {
		return err
	}
	x, err := c.send(ctx, r, opts)
	if err != nil {
		return err
	}
	defer x.Close()
	return consume(x, opts)
}

// withRetries runs attempt on the route, retrying, then on each fallback route.
func (c *modelCall) withRetries(ctx context.Context, attempt func(context.Context, *route) error) error {
	c.sent = false
	routes := []*route{c.route}
	for _, fb := range c.route.fallbacks {
		if r, ok := c.rt.routes[fb]; ok {
			routes = append(routes, r)
		}
	}
	var last error
	for i, r := range routes {
		if i > 0 && !c.key.allows(r.name) {
			// The key's model allowlist holds for fallbacks too.
			c.metrics.FallbacksSkipped.WithLabelValues(c.route.label(), r.name, c.key.name, skipNotAllowed).Inc()
			c.log().Info("fallback skipped: the key may not use it", "from", c.route.label(), "to", r.name)
			continue
		}
		if i > 0 {
			// So do the fallback's own limits (fallback.go), checked now that it is to be called.
			if ok, d := c.spend.admitFallback(r); !ok {
				c.metrics.FallbacksSkipped.WithLabelValues(c.route.label(), r.name, c.key.name, skipLimited).Inc()
				c.log().Info("fallback skipped: over its limits", "from", c.route.label(), "to", r.name, "limit", d.String())
				continue
			}
		}
		if i > 0 {
			c.metrics.UpstreamRetries.WithLabelValues(r.backend.name, "fallback").Inc()
			c.log().Warn("falling back", "from", routes[i-1].name, "to", r.name, "error", logError(last, c.rt.cfg.Log.UpstreamErrorMessages))
		}
		last = c.attempts(ctx, r, attempt)
		if last == nil || c.sent || !upstream.Retryable(last) || ctx.Err() != nil {
			return last
		}
	}
	return last
}

// attempts tries one route up to 1+retries times (upstream.Retries.Do), each attempt in
// its own span with its usage counted (tracedAttempt); a failure after the client saw
// part of an answer is not retried.
func (c *modelCall) attempts(ctx context.Context, r *route, try func(context.Context, *route) error) error {
	b := r.backend
	return b.retries.Do(ctx, func(ctx context.Context, attempt int) error {
		return c.tracedAttempt(ctx, r, attempt, try) // tracing.go: c.counted in a client span
	}, func(attempt int, delay time.Duration, err error) bool {
		if c.sent {
			return false
		}
		c.metrics.UpstreamRetries.WithLabelValues(b.name, "retry").Inc()
		c.log().Info("retrying upstream", "backend", b.name, "attempt", attempt+1, "delay", delay, "error", logError(err, c.rt.cfg.Log.UpstreamErrorMessages))
		return true
	})
}

// counted runs one attempt and adds the usage it reported to the request's.
func (c *modelCall) counted(ctx context.Context, r *route, try func(context.Context, *route) error) error {
	c.lastUsage, c.tail = translate.Usage{}, 0
	defer c.countUsage(r)
	return try(ctx, r)
}

// decode reads the answer of x, streamed or whole (opts.Stream), as events for emit.
func (c *modelCall) decode(ctx context.Context, x *exchange, b *backend, opts *translate.Options, emit translate.Emit) error {
	if !opts.Stream {
		body, err := c.answerBody(ctx, x, b.name)
		if err != nil {
			return err
		}
		if err := b.provider.DecodeResponse(body, emit); err != nil {
			c.dropAnswer(x) // the error may quote the body
			return err
		}
		c.releaseBuf() // events alias the body only while emit runs (translate.Event)
		return nil
	}
	body, err := upstream.DecodedBody(x, b.name)
	if err != nil {
		return err
	}
	dec := b.provider.NewStreamDecoder(opts)
	err = c.pumpSSE(ctx, body, b.name, func(typ, data []byte) error { return dec.Event(typ, data, emit) },
		c.flush, func() error { return dec.Close(emit) })
	// The stream ended early (the client left, the upstream failed): count what the
	// upstream had reported, which Close would have emitted.
	c.noteUsageSoFar(dec, err)
	return err
}

// send posts c.buf to the route's upstream and times the wait for response headers.
func (c *modelCall) send(ctx context.Context, r *route, opts *translate.Options) (*exchange, error) {
	b := r.backend
	start := time.Now()
	headers := append(c.hdrs[:0], c.upstreamHeaders(b)...)
	headers = c.traceHeaders(ctx, headers) // tracing.go: traceparent, tracestate
	// A model call makes one exchange at a time and closes it before the next (roundTrip
	// and the endpoints' attempts defer Close): each is made in the call's own.
	x, err := b.client.Send(ctx, b.provider.Path(r.upstreamModel, opts.Stream), headers, c.buf, opts.Stream, &c.x)
	c.releaseBuf()
	c.observe(ctx, c.metrics.UpstreamOf(b.name, upstream.StatusLabel(err)), time.Since(start).Seconds()) // tracing.go: with exemplar
	if ue := upstream.AsError(err); ue != nil && ue.Status == http.StatusUnauthorized {
		// Every provider's error decoder maps a rejected API key to 401 (Gemini's 400
		// API_KEY_INVALID included). The key is the gateway's, not the client's: passing
		// the 401 on would tell the client its own key is wrong.
		c.log().Error("upstream rejected the gateway's credential", "backend", b.name, "upstream_error", logError(ue, c.rt.cfg.Log.UpstreamErrorMessages))
		fault := upstreamFault(b.name, "rejected the gateway's credential: the gateway operator must check backends."+b.name+".api_key")
		fault.Code = "upstream_auth_failed"
		return nil, fault
	}
	return x, err
}

// countUsage adds the last attempt's usage (attemptUsage: reported, or estimated where
// the upstream reported none) to the request total, its cost and the token metrics. It
// leaves it in lastUsage, for the attempt's span.
func (c *modelCall) countUsage(r *route) {
	u, estimated := c.attemptUsage()
	c.lastUsage, c.tail = u, 0
	c.Usage.Add(u)
	c.spend.addCost(c.rt, r, u)
	c.spend.served(r, u) // fallback.go
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
		c.series, c.seriesRoute = c.metrics.SeriesOf(r.label(), r.backend.name, c.key.name), r
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

// pumpSSE reads an upstream event stream (upstream.Pump) with a read buffer from the
// Server's pool: onEvent for each event, afterRead once the events of each read are
// handled, onEnd at a clean end of stream.
func (c *modelCall) pumpSSE(ctx context.Context, body io.Reader, backend string, onEvent sse.Handler, afterRead, onEnd func() error) error {
	return upstream.Pump(ctx, body, backend, c.reads, onEvent, afterRead, onEnd)
}

// decodedBody and readBody are upstream.DecodedBody and upstream.ReadBody, under the
// names the endpoints call.
func decodedBody(x *exchange, backend string) (io.Reader, error) {
	return upstream.DecodedBody(x, backend)
}

func readBody(ctx context.Context, x *exchange, backend string, dst []byte) ([]byte, error) {
	return upstream.ReadBody(ctx, x, backend, dst)
}

func tokenCounts(u translate.Usage) metrics.TokenCounts {
	return metrics.TokenCounts{Prompt: u.PromptTokens, Completion: u.CompletionTokens, Cached: u.CachedTokens,
		CacheCreation: u.CacheCreationTokens, Reasoning: u.ReasoningTokens}
}
