package proxy

import (
	"context"
	"errors"
	"time"

	"github.com/agate-gateway/agate/ledger"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/upstream"
)

// This file is the ledger's attempts summary: every upstream attempt of a request
// (retries, deployments, fallbacks, continuations, every tool-loop turn) noted where
// tracedAttempt runs it, in the model call's own fixed room (no allocation on the request
// path), and copied into the request's ledger record (toLedger).

// attemptLog is the attempts of one request: the first ledger.MaxAttempts of them, and
// how many came after.
type attemptLog struct {
	first [ledger.MaxAttempts]ledger.Attempt
	// on are the routes first's attempts were made on (routeAttempt's test).
	on      [ledger.MaxAttempts]*route
	n       int
	omitted int
}

// empty forgets the attempts noted, for the run's next request. Their entries are left
// as they are, not cleared: note writes an entry whole and attempts and last read the
// noted ones only (an entry past n holds a configured name or a clipped error type until
// it is noted again). Zeroing the log's kilobyte was most of a ledger's Reset, and
// clearing the noted ones cost as much as it spared.
func (l *attemptLog) empty() { l.n, l.omitted = 0, 0 }

// note adds the attempt on r that took took and ended with err, charged u (the meter's
// charge: countUsage); continued is set for a continuation's attempt.
func (l *attemptLog) note(r *route, err error, took time.Duration, continued bool, u *translate.Usage) {
	if l.n == len(l.first) {
		l.omitted++
		return
	}
	a := &l.first[l.n]
	l.on[l.n] = r
	l.n++
	*a = ledger.Attempt{Backend: r.backend.name, Deployment: r.upstreamLabel, Model: r.name, Duration: took, Continued: continued,
		PromptTokens: int64(u.PromptTokens), CompletionTokens: int64(u.CompletionTokens)}
	if err == nil {
		a.Status = 200
		return
	}
	a.ErrorType = attemptErrorType(err)
	if ue := upstream.AsError(err); ue != nil && ue.Cause == "" {
		a.Status = ue.Status // as upstream.StatusLabel: a connection failure or a timeout has none
	}
}

// attemptErrorType is the type of an attempt's failure, bounded: the upstream error's
// type (an upstream's word, clipped), client_closed when the client left, else api_error.
func attemptErrorType(err error) string {
	if ue := upstream.AsError(err); ue != nil {
		t := ue.Type
		if t == "" {
			t = translate.ErrorType(ue.Status)
		}
		return clip(t, maxErrorType)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, errClientGone) {
		return "client_closed"
	}
	return "api_error"
}

// attempts returns the attempts (nil when none; a nil l has none), l's own array until
// l is reused (Ledger.Add copies them), and the count of those left out.
func (l *attemptLog) attempts() ([]ledger.Attempt, int) {
	if l == nil {
		return nil, 0
	}
	if l.n == 0 {
		return nil, l.omitted
	}
	return l.first[:l.n:l.n], l.omitted
}

// last returns the last attempt noted, nil when none (a nil l has none).
func (l *attemptLog) last() *ledger.Attempt {
	if l == nil || l.n == 0 {
		return nil
	}
	return &l.first[l.n-1]
}

// ledgerAttempts fills r's attempts, deployment and continued_from, after the fields
// its route holds (FillRecord): a request's one attempt that was its route's is given
// as r's RouteAttempt, not copied.
func (c *requestRun) ledgerAttempts(r *ledger.Record) {
	call := c.call
	switch last := call.tried.last(); {
	case c.answeredBy != nil:
		r.Deployment = c.answeredBy.upstreamLabel
	case last != nil:
		r.Deployment = last.Deployment
	}
	if from := call.continuedFrom; from != nil && call.at != nil {
		r.ContinuedFrom = clip(from.name, maxLoggedString) // as noteContinued: a client-named model is bounded
	}
	if a := call.tried.routeAttempt(c.answeredBy, c.route.backend, r); a != nil {
		r.RouteAttempt, r.RouteAttemptDuration = true, a.Duration
		return
	}
	r.Attempts, r.AttemptsOmitted = call.tried.attempts()
}

// routeAttempt returns l's one attempt when it was the route's of r, a record filled
// but for its attempts, answered by route by (nil: none) of backend b (the requested
// route's): made on by, whose label is its name and whose deployment r's, by b, not a
// continuation, of r's status, error type and tokens (ledger.Record.RouteAttempt); else
// nil. Pointers are compared where the ledger's writer would compare texts.
func (l *attemptLog) routeAttempt(by *route, b *backend, r *ledger.Record) *ledger.Attempt {
	if l == nil || l.n != 1 || l.omitted != 0 || by == nil || l.on[0] != by || by.backend != b || by.name != by.metricLabel {
		return nil
	}
	a := &l.first[0]
	if a.Continued || a.Status != r.Status || a.ErrorType != r.ErrorType || a.PromptTokens != r.PromptTokens ||
		a.CompletionTokens != r.CompletionTokens { // its deployment is by's, r's
		return nil
	}
	return a
}
