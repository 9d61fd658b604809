package proxy

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/agate-gateway/agate/balance"
	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/metrics"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/upstream"
)

// This file continues a translated stream that failed after part of its answer reached
// the client (models.<name>.continuation): the upstream cut it, stalled past
// timeouts.stream_idle or sent an error event. The turn is asked again, on the same route
// while its retry budget lasts, then on the route's next fallbacks, within the request's
// deadline:
//
//   - prefill: with the text the client already has appended as a partial assistant
//     message, its trailing whitespace trimmed (Anthropic refuses a prefill that ends
//     with whitespace); the new answer's first text repeats whatever of that whitespace
//     it repeats, which is dropped, and the rest is relayed. A 400 to a prefill
//     (models that refuse prefill) is followed at once by a restart on the same route;
//     the client never sees that 400.
//   - restart: with the original request; the new answer's text is relayed from where
//     the client's ends, when it starts with the client's text; when it does not (other
//     text, a tool call, or an end before it), the stream ends with an in-band 502
//     continuation_diverged.
//
// Whatever the mode, the client sees one stream: the continuation's start event and its
// reasoning are swallowed (the client's reasoning ended when its text began), its usage
// events carry the usage of the turn's earlier attempts added to its own, and one
// finish ends it. Events are filtered here, before the client dialect's encoder, so
// every API's sequence numbers and content indexes stay the encoder's own.
//
// A stream is continued only when what the client has is plain text: not after any tool
// call, refusal or built-in tool item reached it (a call's arguments cannot be prefilled
// nor compared), not when reasoning but no text reached it (reasoning is neither
// prefilled nor reproducible), not after its finish, not for a request that asked for
// logprobs or several choices. Those end with the failure, as when continuation is off.

// contMode is a route's continuation (config.Model.Continuation).
type contMode uint8

const (
	contOff contMode = iota
	contPrefill
	contRestart
)

func (m contMode) String() string {
	switch m {
	case contPrefill:
		return config.ContinuationPrefill
	case contRestart:
		return config.ContinuationRestart
	}
	return config.ContinuationOff
}

// continuationOf is the mode of a model set to set ("" for the default) on backend b as
// upstream model: the default is that of the dialect that serves it (on the clouds,
// config.ContinuationDialect).
func continuationOf(b *backend, model, set string) contMode {
	if _, local := b.provider.(localProvider); local {
		return contOff // answered in process: nothing fails mid-stream
	}
	dialect := config.ContinuationDialect(b.typ, b.cfg.Vertex.Publisher, b.typ == "bedrock" && bedrockClaude(model))
	switch config.ContinuationOf(dialect, set) {
	case config.ContinuationPrefill:
		return contPrefill
	case config.ContinuationRestart:
		return contRestart
	}
	return contOff
}

// errDiverged is matched by the error that ends a stream whose restart did not repeat
// what the client had.
var errDiverged = errors.New("the continuation diverged")

// maxMalformedEvents is how many unreadable events one upstream stream may skip; the next
// one ends it.
const maxMalformedEvents = 16

// resume is the memory of a streamed translated turn that lets a failure be continued:
// what reached the client, recorded only when the turn may be continued (on), and the
// state of a running continuation. It lives in the modelCall; said keeps its memory
// across requests (Reset), up to keepSaid bytes.
type resume struct {
	// on is set while the turn records: streamed, translated, continuation not off on
	// the route or one of its fallbacks, one choice and no logprobs.
	on bool
	// said is the text (choice 0) the client received in this turn.
	said []byte
	// blocked, when set, is why the turn cannot be continued (a tool call reached the
	// client...); reasoning is set when reasoning reached the client before any text.
	blocked   string
	reasoning bool
	// active is set during a continuation attempt; pending is the part of said the new
	// answer is to repeat before anything is relayed (the trimmed whitespace of a
	// prefill, loosely: lenient); prior is the usage of the turn's earlier attempts.
	active  bool
	lenient bool
	// prefilled is set when the running continuation sent a prefill.
	prefilled bool
	pending   string
	prior     translate.Usage
	// base is the request's usage when the turn began.
	base translate.Usage
	// malformed counts the unreadable events skipped in the running attempt (decode).
	malformed int
	// fwd follows a forwarded chat stream's text (continuation_passthrough.go).
	fwd followed
}

// keepSaid bounds the memory a recycled modelCall keeps for said.
const keepSaid = 4 << 10

// start begins a turn: c records what reaches the client when the turn may be continued.
func (c *modelCall) startResume(req *translate.Request, stream bool) {
	k := &c.resume
	said := k.said[:0]
	if cap(said) > keepSaid {
		said = nil
	}
	*k = resume{said: said, base: c.Usage}
	if !stream || req.Logprobs || req.Choices() > 1 {
		return
	}
	k.on = c.route.continues()
	for _, fb := range c.route.fallbacks {
		if r, ok := c.rt.routes[fb]; ok && r.continues() {
			k.on = true
		}
	}
}

// continues reports whether a stream of route r may be continued: its continuation is
// not off, or, for a model with deployments, one deployment's is not.
func (r *route) continues() bool {
	if r.deploy != nil {
		for _, dr := range r.deploy.routes {
			if dr.continuation != contOff {
				return true
			}
		}
		return false
	}
	return r.continuation != contOff
}

// pass records ev, an event of the running attempt about to reach the client, and
// returns the event to show instead (nil: none), or the error that ends the attempt
// (errDiverged). Called only while k.on.
func (k *resume) pass(ev *translate.Event, room *translate.Event) (*translate.Event, error) {
	if k.active {
		switch ev.Kind {
		case translate.EventStart, translate.EventReasoningDelta, translate.EventReasoningBlock:
			return nil, nil // the client's stream started, and its reasoning ended, before
		case translate.EventTextDelta:
			text, ok := k.match(ev.Text)
			if !ok {
				return nil, errDiverged
			}
			if text == "" {
				return nil, nil
			}
			if len(text) != len(ev.Text) {
				*room = *ev
				room.Text = text
				ev = room
			}
		case translate.EventUsage:
			*room = *ev
			room.Usage.Add(k.prior)
			return room, nil
		case translate.EventToolCallStart, translate.EventRefusalDelta, translate.EventBuiltinItem, translate.EventFinish:
			if k.pending != "" && !k.lenient {
				return nil, errDiverged // the new answer did something else, or ended, before repeating the text
			}
			k.pending = ""
		}
	}
	switch ev.Kind {
	case translate.EventTextDelta:
		k.said = append(k.said, ev.Text...)
	case translate.EventReasoningDelta, translate.EventReasoningBlock:
		if len(k.said) == 0 {
			k.reasoning = true
		}
	case translate.EventToolCallStart, translate.EventToolCallArgsDelta, translate.EventToolCallEnd:
		k.blocked = "tool_call"
	case translate.EventRefusalDelta:
		k.blocked = "refusal"
	case translate.EventBuiltinItem:
		k.blocked = "builtin_item"
	case translate.EventFinish:
		k.blocked = "finished"
	}
	return ev, nil
}

// match takes text, the next text of a continuation, against pending: it returns what of
// text is new to the client, and false when text differs from what the client has
// (restart). A prefill's pending whitespace is dropped as far as text repeats it.
func (k *resume) match(text string) (string, bool) {
	if k.pending == "" {
		return text, true
	}
	n := 0
	for n < len(text) && n < len(k.pending) && text[n] == k.pending[n] {
		n++
	}
	switch {
	case n == len(k.pending): // repeated it all
		k.pending = ""
		return text[n:], true
	case n == len(text): // repeated part of it so far
		k.pending = k.pending[n:]
		return "", true
	case k.lenient:
		k.pending = ""
		return text[n:], true
	}
	return "", false
}

// continuable reports whether the turn's failure may be continued from what reached the
// client, and if not, why (a bounded label).
func (k *resume) continuable() bool {
	return k.on && k.blocked == "" && !(k.reasoning && len(k.said)+k.fwd.n == 0)
}

// failureContinuable reports whether err, the failure of an attempt, is the upstream's
// (a cut, a stall, an error event, a 5xx or 429) rather than the client leaving, the
// gateway refusing, or an upstream 4xx that would come again.
func failureContinuable(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, errClientGone) || errors.Is(err, errDiverged) {
		return false
	}
	return upstreamContinuable(err)
}

// upstreamContinuable reports whether err is an upstream failure that another attempt
// may not meet: a transport error, a 5xx or a 429 (an error event's included), or one of
// Bedrock's stream exceptions that its API reference (ResponseStream) says to retry
// though their status is a 4xx: modelStreamErrorException (424, "An error occurred while
// streaming the response. Retry your request.") and modelTimeoutException (408).
func upstreamContinuable(err error) bool {
	ue := upstream.AsError(err)
	return ue != nil && (ue.Retryable || ue.Status >= 500 || ue.Status == http.StatusTooManyRequests ||
		ue.Code == "modelStreamErrorException" || ue.Code == "modelTimeoutException")
}

// continueTurn runs the continuation of a streamed turn whose attempt failed with
// failure after events reached the client: each continuation attempt in its own span,
// counted and logged. It returns nil once a continuation ended well, the in-band error
// of a divergence, or failure when nothing could continue the stream.
func (c *modelCall) continueTurn(ctx context.Context, req *translate.Request, emit translate.Emit, failure error) error {
	k := &c.resume
	if !failureContinuable(ctx, failure) {
		return failure
	}
	if !k.continuable() {
		why := k.blocked
		if why == "" {
			why = "reasoning_only"
		}
		c.contOutcome(metrics.ContinuationNotPossible)
		c.log().Warn("stream failed where it cannot be continued", "model", c.route.label(), "after", why,
			"error", logError(failure, c.rt.cfg.Log.UpstreamErrorMessages))
		return failure
	}
	routes := c.continuationRoutes()
	from := c.at
	failed := c.tries // the attempts on the failed route so far, that one included
	for i, r := range routes {
		if !r.continues() || i > 0 && !c.mayFallBack(r) {
			continue
		}
		if i > 0 {
			c.fallbacks++ // a fallback tried, for the ledger
		}
		tried := c.continuationCandidates(r, i == 0)
		tries := 1 + r.backend.retries.Max
		switch {
		case r.deploy != nil:
			tries = len(r.deploy.routes) // each deployment once
		case i == 0:
			tries -= c.tries // the failed attempts on this route so far
		}
		restart := false // a prefill was refused: restarts from then on
		for n := 0; n < tries; n++ {
			if c.expired() || !c.pause(ctx, r, n) {
				c.contOutcome(metrics.ContinuationFailed)
				c.log().Warn("stream not continued: the request's deadline passed", "model", c.route.label())
				return failure
			}
			attempt := n
			if i == 0 {
				attempt += failed
			}
			on, err := c.resumeAttempt(ctx, req, r, restart, attempt, emit, failure, &tried)
			if on == nil {
				break // its circuit is open, or no deployment of it is usable
			}
			if k.prefilled && !c.sent && refusedPrefill(err) {
				c.contOutcome(metrics.ContinuationRefused)
				c.log().Warn("prefill refused: restarting instead", "model", r.name, "backend", on.backend.name,
					"error", logError(err, c.rt.cfg.Log.UpstreamErrorMessages))
				restart = true
				same := c.only(r, on)
				if on, err = c.resumeAttempt(ctx, req, r, restart, attempt, emit, failure, &same); on == nil {
					continue // its deployment is not usable now: another may be
				}
			}
			switch {
			case err == nil:
				c.contOutcome(metrics.ContinuationContinued)
				c.continuedFrom = from
				return nil
			case errors.Is(err, errDiverged):
				c.contOutcome(metrics.ContinuationDiverged)
				c.log().Warn("stream not continued: the new answer differs from what the client has", "model", r.name)
				return &translate.UpstreamError{Status: http.StatusBadGateway, Type: "api_error", Code: "continuation_diverged",
					Message: "the upstream of model " + c.route.name + " failed mid-stream and the answer could not be continued: a new answer did not start with the text already sent"}
			case !failureContinuable(ctx, err):
				if ctx.Err() != nil || errors.Is(err, errClientGone) {
					return err
				}
				if c.sent { // failed for good after showing more
					c.contOutcome(metrics.ContinuationFailed)
					return err
				}
				n = tries // refused outright (a 4xx): the next route may serve
			case !k.continuable():
				c.contOutcome(metrics.ContinuationNotPossible)
				return err // what reached the client now cannot be continued
			}
		}
	}
	c.contOutcome(metrics.ContinuationFailed)
	c.log().Warn("stream not continued: no route could continue it", "model", c.route.label(),
		"error", logError(failure, c.rt.cfg.Log.UpstreamErrorMessages))
	return failure
}

// resumeAttempt runs one continuation attempt of route r (restart: in restart mode,
// else in the mode of the route that serves it): on r itself when its circuit allows
// (circuitOpen; recordCircuit records it), or, for a model with deployments, on the
// deployment package balance picks among those not in tried (which it joins), its
// outcome told to balance and so to its Health, as attemptsOn does. on is the route that
// served, nil when none was tried (r's circuit is open, or no deployment is usable).
func (c *modelCall) resumeAttempt(ctx context.Context, req *translate.Request, r *route, restart bool, attempt int,
	emit translate.Emit, failure error, tried *balance.Tried) (on *route, err error) {
	mode := func(on *route) contMode {
		if restart {
			return contRestart
		}
		return on.continuation
	}
	d := r.deploy
	if d == nil {
		if c.circuitOpen(r) {
			return nil, nil
		}
		return r, c.resumeOn(ctx, req, r, mode(r), attempt, emit, failure)
	}
	start := time.Now()
	ch := d.set.Pick(ctx, start, c.affinity, tried)
	c.noteChoice(d, ch)
	if !ch.OK() {
		return nil, nil
	}
	tried.Add(ch.Index)
	dr := d.routes[ch.Index]
	c.firstAt, c.headersAt, c.timeFirst = time.Time{}, time.Time{}, true
	err = c.resumeOn(ctx, req, dr, mode(dr), attempt, emit, failure)
	o := c.outcome(err, start)
	d.set.Done(ch.Index, o, time.Now())
	c.noteOutcome(d, dr, o, err)
	return dr, err
}

// continuationCandidates returns the deployments of route r a continuation leaves out:
// those whose continuation is off, and, on the route that failed (first), the failed
// deployment, since another healthy one may continue at once; a call pinned to a backend
// (its upstream holds the conversation) keeps to that backend's deployments, the failed
// one included. None for a route without deployments.
func (c *modelCall) continuationCandidates(r *route, first bool) balance.Tried {
	var tried balance.Tried
	if r.deploy == nil {
		return tried
	}
	for i, dr := range r.deploy.routes {
		if dr.continuation == contOff || c.pin != "" && dr.backend.name != c.pin || first && c.pin == "" && dr == c.at {
			tried.Add(i)
		}
	}
	return tried
}

// only returns the deployments of route r to leave out for a choice of on alone.
func (c *modelCall) only(r *route, on *route) balance.Tried {
	var tried balance.Tried
	if r.deploy != nil {
		for i, dr := range r.deploy.routes {
			if dr != on {
				tried.Add(i)
			}
		}
	}
	return tried
}

// resumeOn runs one continuation attempt on route r in mode, in its own span: the
// request again, with what the client has as a prefill or to be repeated (restart).
func (c *modelCall) resumeOn(ctx context.Context, req *translate.Request, r *route, mode contMode, attempt int, emit translate.Emit, failure error) error {
	k := &c.resume
	if k.fwd.attempt != nil {
		return c.resumeForward(ctx, req, r, mode, attempt, failure) // a passthrough
	}
	k.active, k.lenient, k.prefilled, k.pending = true, false, false, string(k.said)
	k.prior = usageSince(c.Usage, k.base)
	ask := req
	if mode == contPrefill && len(k.said) > 0 {
		prefill := strings.TrimRight(k.pending, " \t\r\n")
		k.pending, k.lenient = k.pending[len(prefill):], true
		if prefill != "" {
			k.prefilled = true
			ask = req.Clone()
			ask.Messages = append(ask.Messages, translate.Message{Role: translate.RoleAssistant,
				Content: []translate.Part{{Type: translate.PartText, Text: prefill}}})
			if err := prefillMembers(ask, r); err != nil {
				return err
			}
		}
	}
	c.log().Warn("continuing the stream", "model", r.name, "backend", r.backend.name, "mode", mode.String(),
		"sent_bytes", len(k.said), "error", logError(failure, c.rt.cfg.Log.UpstreamErrorMessages))
	c.sent = false
	c.at = r
	c.meter.prompt = ask // what an estimate of the prompt counts
	err := c.tracedAttempt(ctx, r, attempt, func(ctx context.Context, r *route) error {
		return c.translated(ctx, ask, r, true, emit)
	})
	if err == nil && k.pending != "" && !k.lenient {
		err = errDiverged // the new answer ended shorter than what the client has
	}
	return err
}

// pause waits before the n-th continuation attempt on r (from 0): none before the first
// on a fallback, else the backend's backoff. false when the wait would pass the request's
// deadline or ctx ended.
func (c *modelCall) pause(ctx context.Context, r *route, n int) bool {
	if n == 0 && r != c.at || r.deploy != nil && c.pin == "" {
		return true // another route, or another deployment: at once
	}
	d := r.backend.retries.BaseDelay << n
	if d > r.backend.retries.MaxDelay || d <= 0 {
		d = r.backend.retries.MaxDelay
	}
	d = d/2 + time.Duration(rand.Int64N(int64(d)/2+1))
	if !c.deadline.IsZero() && time.Now().Add(d).After(c.deadline) {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// continuationRoutes returns the route of the failed attempt (the model's, for a
// deployment) and the fallbacks of the request's route after it.
func (c *modelCall) continuationRoutes() []*route {
	at := c.at.of() // a deployment's model
	routes := []*route{at}
	after := at == c.route
	for _, fb := range c.route.fallbacks {
		r, ok := c.rt.routes[fb]
		if !ok {
			continue
		}
		if after {
			routes = append(routes, r)
		}
		after = after || r == at
	}
	return routes
}

// mayFallBack reports whether fallback route r may serve the request: the key's model
// allowlist and r's own limits, counted as withRetries counts them.
func (c *modelCall) mayFallBack(r *route) bool {
	if !c.key.allows(r.name) {
		c.metrics.FallbacksSkipped.WithLabelValues(c.route.label(), r.name, c.key.name, skipNotAllowed).Inc()
		return false
	}
	if ok, _ := c.spend.admitFallback(r); !ok {
		c.metrics.FallbacksSkipped.WithLabelValues(c.route.label(), r.name, c.key.name, skipLimited).Inc()
		return false
	}
	return true
}

// refusedPrefill reports whether err is an upstream's 400 to a request: a prefill it does
// not accept.
func refusedPrefill(err error) bool {
	ue := upstream.AsError(err)
	return ue != nil && ue.Status == http.StatusBadRequest
}

// contOutcome counts one outcome of a continuation.
func (c *modelCall) contOutcome(outcome string) {
	c.metrics.StreamContinuations.WithLabelValues(c.route.label(), outcome).Inc()
}

// usageSince is u minus base, field by field.
func usageSince(u, base translate.Usage) translate.Usage {
	return translate.Usage{PromptTokens: u.PromptTokens - base.PromptTokens, CompletionTokens: u.CompletionTokens - base.CompletionTokens,
		CachedTokens: u.CachedTokens - base.CachedTokens, CacheCreationTokens: u.CacheCreationTokens - base.CacheCreationTokens,
		ReasoningTokens: u.ReasoningTokens - base.ReasoningTokens}
}

// skipMalformed decides about err, a stream decoder's error for one unreadable event
// (translate.ErrMalformedEvent) of backend b: nil to skip it (counted, and logged once a
// stream without its content), or err when the stream has skipped too many to be
// followed.
func (c *modelCall) skipMalformed(b *backend, err error) error {
	k := &c.resume
	k.malformed++
	if k.malformed > maxMalformedEvents {
		return err
	}
	c.metrics.MalformedEvents.WithLabelValues(b.name).Inc()
	if k.malformed == 1 {
		c.log().Warn("skipped a malformed upstream event", "backend", b.name)
	}
	return nil
}
