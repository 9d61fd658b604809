package proxy

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/ledger"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/upstream"
)

// TestAttemptLog: each attempt is noted with its route's backend, deployment label and
// model, the status (as gateway_upstream_duration_seconds' status label: none for a
// connection failure or a timeout), a bounded error type
// and the continuation flag; the first ledger.MaxAttempts are kept, the rest counted.
func TestAttemptLog(t *testing.T) {
	r := &route{name: "gpt", backend: &backend{name: "east"}, upstreamLabel: "east/gpt-4o"}
	long := fmt.Sprintf("%0100d", 0)
	for _, tc := range []struct {
		name      string
		err       error
		continued bool
		want      ledger.Attempt
	}{
		{"answered", nil, false, ledger.Attempt{Status: 200}},
		{"an upstream's 429", &translate.UpstreamError{Status: 429, Type: "rate_limit_error"}, false,
			ledger.Attempt{Status: 429, ErrorType: "rate_limit_error"}},
		{"an upstream's 503 without a type", &translate.UpstreamError{Status: 503}, false,
			ledger.Attempt{Status: 503, ErrorType: translate.ErrorType(503)}},
		{"a type too long is clipped", &translate.UpstreamError{Status: 500, Type: long}, false,
			ledger.Attempt{Status: 500, ErrorType: clip(long, maxErrorType)}},
		{"a connection failure: no upstream status", &translate.UpstreamError{Status: 504, Type: "api_error", Cause: "dial tcp: i/o timeout"}, false,
			ledger.Attempt{ErrorType: "api_error"}},
		{"a fault the gateway names keeps its status", upstream.Fault("east", "sent an unreadable answer"), false,
			ledger.Attempt{Status: 502, ErrorType: "api_error"}},
		{"the client left", context.Canceled, false, ledger.Attempt{ErrorType: "client_closed"}},
		{"another failure", errors.New("boom"), false, ledger.Attempt{ErrorType: "api_error"}},
		{"a continuation", nil, true, ledger.Attempt{Status: 200, Continued: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l attemptLog
			l.note(r, tc.err, 1500*time.Millisecond, tc.continued, &translate.Usage{})
			want := tc.want
			want.Backend, want.Deployment, want.Model, want.Duration = "east", "east/gpt-4o", "gpt", 1500*time.Millisecond
			got, omitted := l.attempts()
			if diff := cmp.Diff([]ledger.Attempt{want}, got); diff != "" || omitted != 0 {
				t.Errorf("attempt (-want +got):\n%s; omitted %d", diff, omitted)
			}
		})
	}

	var l attemptLog
	if got, _ := l.attempts(); got != nil || l.last() != nil {
		t.Errorf("no attempt: %v, %v", got, l.last())
	}
	for range ledger.MaxAttempts + 3 {
		l.note(r, nil, 0, false, &translate.Usage{})
	}
	if got, omitted := l.attempts(); len(got) != ledger.MaxAttempts || omitted != 3 {
		t.Errorf("%d attempts noted as %d and %d omitted", ledger.MaxAttempts+3, len(got), omitted)
	}
}

// TestAttemptLog_Tokens: an attempt keeps the prompt and completion tokens it was
// charged, reasoning and cache figures left to the record's totals.
func TestAttemptLog_Tokens(t *testing.T) {
	r := &route{name: "gpt", backend: &backend{name: "east"}, upstreamLabel: "east/gpt-4o"}
	var l attemptLog
	l.note(r, &translate.UpstreamError{Status: 503}, time.Millisecond, false, &translate.Usage{})
	l.note(r, nil, time.Millisecond, false, &translate.Usage{PromptTokens: 120, CompletionTokens: 30, CachedTokens: 100, ReasoningTokens: 9})
	got, _ := l.attempts()
	if len(got) != 2 || got[0].PromptTokens != 0 || got[0].CompletionTokens != 0 || got[1].PromptTokens != 120 || got[1].CompletionTokens != 30 {
		t.Errorf("attempts %+v: want 0/0 then 120/30 tokens", got)
	}
}

// BenchmarkToLedger_Attempts is BenchmarkToLedger for a request with three attempts (a
// retry and a fallback): the ledger copies them (no allocation on the request path).
func BenchmarkToLedger_Attempts(b *testing.B) {
	l := &countingLedger{}
	c := pricedRun(l)
	r := c.route
	c.call.tried = c.attempts() // as serve does with a ledger
	c.call.tried.note(r, &translate.UpstreamError{Status: 503, Type: "server_error"}, time.Millisecond, false, &translate.Usage{})
	c.call.tried.note(r, &translate.UpstreamError{Status: 503, Type: "server_error"}, time.Millisecond, false, &translate.Usage{})
	c.call.tried.note(r, nil, time.Millisecond, false, &c.call.Usage)
	at := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		c.toLedger(200, true, at)
	}
	if l.n == 0 {
		b.Fatal("no record")
	}
}

// TestRequestRun_ResetKeepsAttemptLog: a recycled run keeps its attempt log, emptied,
// and a run that noted no attempts has none to report.
func TestRequestRun_ResetKeepsAttemptLog(t *testing.T) {
	r := &route{name: "gpt", backend: &backend{name: "east"}, upstreamLabel: "east/gpt-4o"}
	c := &requestRun{}
	if got, n := c.ownCall.tried.attempts(); got != nil || n != 0 || c.ownCall.tried.last() != nil {
		t.Fatalf("a run without a log reports %+v, %d omitted", got, n)
	}
	l := c.attempts()
	for range len(l.first) + 2 {
		l.note(r, nil, time.Millisecond, false, &translate.Usage{})
	}
	if got, n := l.attempts(); len(got) != len(l.first) || n != 2 {
		t.Fatalf("attempts %d, %d omitted", len(got), n)
	}
	c.Reset()
	if got, n := l.attempts(); got != nil || n != 0 || l.last() != nil || l.n != 0 {
		t.Fatalf("Reset left the log with %d attempts, %d omitted", len(got), n)
	}
	// The next request's attempts are its own: a noted entry is written whole.
	l.note(&route{name: "other", backend: &backend{name: "west"}}, errors.New("refused"), 2*time.Millisecond, true, &translate.Usage{})
	if got, _ := l.attempts(); len(got) != 1 || got[0] != (ledger.Attempt{Backend: "west", Model: "other", ErrorType: "api_error",
		Duration: 2 * time.Millisecond, Continued: true}) {
		t.Fatalf("the next request's attempt %+v", got)
	}
	l.empty()
	if c.attempts() != l {
		t.Fatal("Reset dropped the run's attempt log")
	}
	if c.ownCall.tried != nil {
		t.Fatal("Reset left the model call's log set")
	}
}

// TestAttemptLog_RouteAttempt: a request's one attempt is given as its record's route
// attempt only when it holds what the record's route does (the attempt the ledger then
// stores is made from the record: it must be the one noted), and as Attempts otherwise.
func TestAttemptLog_RouteAttempt(t *testing.T) {
	east := &backend{name: "east"}
	gpt := &route{name: "gpt", metricLabel: "gpt", backend: east, upstreamLabel: "east/gpt-4o"}
	other := &route{name: "mini", metricLabel: "mini", backend: east, upstreamLabel: "east/mini"}
	west := &route{name: "gpt", metricLabel: "gpt", backend: &backend{name: "west"}, upstreamLabel: "west/gpt-4o"}
	wild := &route{name: "east/x", metricLabel: "east/*", backend: east, upstreamLabel: "east/x"}
	usage := translate.Usage{PromptTokens: 12, CompletionTokens: 3}
	fail := &translate.UpstreamError{Status: 503, Type: "overloaded"}
	type note struct {
		on        *route
		err       error
		continued bool
		u         translate.Usage
	}
	for _, tc := range []struct {
		name      string
		notes     []note
		by        *route // the route that answered
		status    int
		errorType string
		u         translate.Usage // the record's tokens
		want      bool
	}{
		{"one attempt that answered", []note{{gpt, nil, false, usage}}, gpt, 200, "", usage, true},
		{"one that failed, the record its failure", []note{{gpt, fail, false, translate.Usage{}}}, gpt, 503, "overloaded", translate.Usage{}, true},
		{"none", nil, nil, 502, "api_error", translate.Usage{}, false},
		{"nothing answered", []note{{gpt, fail, false, translate.Usage{}}}, nil, 503, "overloaded", translate.Usage{}, false},
		{"two attempts", []note{{gpt, fail, false, translate.Usage{}}, {gpt, nil, false, usage}}, gpt, 200, "", usage, false},
		{"a continuation", []note{{gpt, nil, true, usage}}, gpt, 200, "", usage, false},
		{"another route answered", []note{{other, nil, false, usage}}, gpt, 200, "", usage, false},
		{"the record's status is not the attempt's (the client left)", []note{{gpt, nil, false, usage}}, gpt, 499, "client_closed", usage, false},
		{"the record's status is not the attempt's, its error type is", []note{{gpt, fail, false, translate.Usage{}}}, gpt, 502, "overloaded", translate.Usage{}, false},
		{"tokens not the attempt's", []note{{gpt, nil, false, usage}}, gpt, 200, "", translate.Usage{PromptTokens: 12, CompletionTokens: 4}, false},
		{"prompt tokens not the attempt's", []note{{gpt, nil, false, usage}}, gpt, 200, "", translate.Usage{PromptTokens: 11, CompletionTokens: 3}, false},
		{"a fallback's backend", []note{{west, nil, false, usage}}, west, 200, "", usage, false},
		{"a label that is not the route's name", []note{{wild, nil, false, usage}}, wild, 200, "", usage, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l attemptLog
			for _, n := range tc.notes {
				l.note(n.on, n.err, 1500*time.Millisecond, n.continued, &n.u)
			}
			r := ledger.Record{Backend: gpt.backend.name, Status: tc.status, ErrorType: tc.errorType,
				PromptTokens: int64(tc.u.PromptTokens), CompletionTokens: int64(tc.u.CompletionTokens)}
			if tc.by != nil {
				r.Served, r.Deployment = tc.by.label(), tc.by.upstreamLabel
			}
			a := l.routeAttempt(tc.by, gpt.backend, &r)
			if (a != nil) != tc.want {
				t.Fatalf("route attempt %v, want one: %t", a, tc.want)
			}
			if a == nil {
				return
			}
			made := ledger.Attempt{Backend: r.Backend, Deployment: r.Deployment, Model: r.Served, Status: r.Status, ErrorType: r.ErrorType,
				Duration: a.Duration, PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens}
			if diff := cmp.Diff(l.first[0], made); diff != "" {
				t.Errorf("the attempt the ledger makes from the record is not the one noted (-noted +made):\n%s", diff)
			}
		})
	}
}
