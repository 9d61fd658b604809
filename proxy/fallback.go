package proxy

import (
	"context"

	"github.com/agate-gateway/agate/limits"
	"github.com/agate-gateway/agate/translate"
)

// This file admits fallback models against their own limits: a model's requests per
// minute, tokens per minute and concurrency count every request the gateway sends it,
// whether a client named it or another model fell back to it.

// The reason label of gateway_fallbacks_skipped_total.
const (
	skipNotAllowed = "not_allowed" // the key's models allowlist does not name it
	skipLimited    = "limited"     // over one of its limits, or its limits cannot be checked
)

// fallbackAdmission is one fallback model admitted for a request: it is counted once per
// request (however many turns it serves), holds its slots until the request ends, and is
// charged the tokens it served.
type fallbackAdmission struct {
	route *route
	req   limits.Request
	adm   limits.Admission
	// admitted is set when Finish is due (the limiter answered and admitted).
	admitted bool
	// tokens are what the model served in the request's turns.
	tokens int64
}

// admitFallback reports whether fallback route r may be called for this request: true
// when r has no limits of its own, when it was admitted before in this request, or when
// it is admitted now; false (with the limit that refused it) over one of its limits, or
// when the state store does not answer and state.on_error is deny. A nil l (no limits
// run) admits everything.
func (l *limitRun) admitFallback(r *route) (bool, limits.Limit) {
	if l == nil || l.run == nil || !r.limited || r.rate == (limits.Rate{}) {
		return true, limits.NoLimit
	}
	for i := range l.fallbacks {
		if l.fallbacks[i].route == r {
			return true, limits.NoLimit
		}
	}
	l.fallbacks = append(l.fallbacks, fallbackAdmission{route: r})
	f := &l.fallbacks[len(l.fallbacks)-1]
	f.req = limits.Request{Model: r.name, ModelRate: r.rate}
	if r.rate.TokensPerMinute > 0 {
		f.req.Reserve.Tokens = l.run.tokenEstimate()
	}
	s := l.run.s
	if err := s.limiter.Admit(s.baseCtx, &f.req, &f.adm); err != nil {
		if s.onErrorDeny {
			l.fallbacks = l.fallbacks[:len(l.fallbacks)-1]
			return false, limits.NoLimit
		}
		return true, limits.NoLimit // on_error allow: called unlimited, nothing held
	}
	if d := f.adm.Denied; d != limits.NoLimit {
		l.fallbacks = l.fallbacks[:len(l.fallbacks)-1] // asked again on the next turn
		return false, d
	}
	f.admitted = true
	return true, limits.NoLimit
}

// served notes the tokens of one turn that route r served, for its fallback admission.
func (l *limitRun) served(r *route, u translate.Usage) {
	if l == nil {
		return
	}
	for i := range l.fallbacks {
		if f := &l.fallbacks[i]; f.route == r {
			f.tokens += int64(u.PromptTokens + u.CompletionTokens)
			return
		}
	}
}

// endFallbacks charges each admitted fallback model the tokens it served and releases its
// slots, once.
func (l *limitRun) endFallbacks() {
	for i := range l.fallbacks {
		f := &l.fallbacks[i]
		if f.admitted {
			f.admitted = false
			_ = l.run.s.limiter.Finish(context.Background(), &f.req, &f.adm, limits.Usage{Tokens: f.tokens})
		}
	}
	l.fallbacks = l.fallbacks[:0]
}
