package proxy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/agate-gateway/agate/internal/jsonx"

	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/limits"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/messagesin"
)

// This file connects the chat handler to the limiter: admission before any upstream call,
// the charge and the release of concurrency slots when the response ends.

// limitRun is one request's limits: what it is checked against and what it holds.
type limitRun struct {
	req      limits.Request
	adm      limits.Admission
	admitted bool // Finish is due
	// microUSD sums the cost of every upstream turn, priced by the route that served it.
	microUSD float64
	// run is the request's run, which holds this limitRun (set by admit); nil before.
	run *requestRun
	// countOnly marks a request that is counted and holds its slots but is charged no
	// tokens (count_tokens): it reserves nothing.
	countOnly bool
	// estimate is the request's token estimate (prompt plus output cap), made on first
	// use (tokenEstimate): by the reservation, or by a fallback with a token limit.
	estimate, prompt int64
	// fallbacks are the fallback models admitted against their own limits.
	fallbacks []fallbackAdmission
}

// openLimiter returns opts.Limiter, or one built from the config's state section that
// the server then owns and closes at Shutdown.
func (s *Server) openLimiter(opts Options) error {
	if opts.Limiter != nil {
		s.limiter = opts.Limiter
		return nil
	}
	l, err := limits.Open(LimiterOptions(opts.Config.State), &limits.ErrorLog{Logger: s.logger, Count: s.metrics.StateError})
	if err != nil {
		return err
	}
	s.limiter, s.ownLimiter = l, true
	return nil
}

// limitRequest describes a request of key for route r to the limiter, from the limits
// the runtime resolved when it was built.
func limitRequest(key *apiKey, r *route) limits.Request {
	var req limits.Request
	if key.limited {
		req.Key, req.KeyRate, req.Budget = key.name, key.rate, key.budget
		req.Team, req.TeamRate, req.TeamBudget = key.team, key.teamRate, key.teamBudget
	}
	if r.limited {
		req.Model, req.ModelRate = r.name, r.rate
	}
	return req
}

// admit checks the request against its limits before any upstream call. It reports false
// when the request was refused and answered: 429 over a limit or budget, 503 when the
// state store cannot answer and state.on_error is deny.
func (c *requestRun) admit(ctx *fasthttp.RequestCtx) bool {
	s, l := c.s, &c.limits
	l.run = c
	l.req = limitRequest(c.key, c.route)
	if !l.req.Limited() {
		return true
	}
	if l.req.Budget.MicroUSD > 0 || l.req.TeamBudget.MicroUSD > 0 {
		if mc, ok := c.rt.cfg.Models[c.route.name]; !ok || mc.Price == nil {
			s.fail(ctx, c.rid, errorf(ErrForbidden, "this API key (or its team) has a usd budget and may use configured models only; %q has no price", c.req.Model),
				c.route.label(), c.route.backend.name, c.key.name, strconv.FormatBool(c.req.Stream))
			return false
		}
	}
	c.hitOnly(&l.req) // a response cache hit: request limits only
	l.req.Reserve = c.reserve(&l.req)
	// The limiter bounds its own wait (state.timeout); baseCtx ends it at a forced shutdown.
	if err := s.limiter.Admit(s.baseCtx, &l.req, &l.adm); err != nil {
		if s.onErrorDeny {
			s.fail(ctx, c.rid, errorf(ErrUnavailable, "rate limits cannot be checked right now (the state store did not answer); try again"),
				c.route.label(), c.route.backend.name, c.key.name, strconv.FormatBool(c.req.Stream))
			return false
		}
		return true // on_error allow: admitted unlimited, nothing held
	}
	c.setBudgetGauges()
	setRateLimitHeaders(&ctx.Response.Header, &l.adm)
	if d := l.adm.Denied; d != limits.NoLimit {
		s.metrics.RateLimitRejections.WithLabelValues(c.key.name, c.route.label(), d.String()).Inc()
		s.fail(ctx, c.rid, c.limitError(), c.route.label(), c.route.backend.name, c.key.name, strconv.FormatBool(c.req.Stream))
		return false
	}
	l.admitted = true
	return true
}

// reserve returns what req reserves when it is admitted (limits.Request.Reserve): the
// prompt estimate (messagesin.EstimateTokens) plus the output cap (the request's, else
// its model's max_tokens, else state.reserve_output_tokens), and for a usd budget these
// tokens priced at the model's input and output prices. Nothing when no token limit or
// budget applies, or for a request charged no tokens (countOnly).
func (c *requestRun) reserve(req *limits.Request) limits.Usage {
	l := &c.limits
	if l.countOnly || req.KeyRate.TokensPerMinute == 0 && req.ModelRate.TokensPerMinute == 0 &&
		req.Budget.Tokens == 0 && req.Budget.MicroUSD == 0 && req.TeamRate.TokensPerMinute == 0 &&
		req.TeamBudget.Tokens == 0 && req.TeamBudget.MicroUSD == 0 {
		return limits.Usage{}
	}
	res := limits.Usage{Tokens: c.tokenEstimate()}
	if req.Budget.MicroUSD > 0 || req.TeamBudget.MicroUSD > 0 {
		prompt, out := l.prompt, l.estimate-l.prompt
		if mc, ok := c.rt.cfg.Models[c.route.name]; ok && mc.Price != nil { // admit checked it
			// Prices are USD per million tokens, so tokens times price is micro-USD.
			res.MicroUSD = int64(math.Ceil(float64(prompt)*mc.Price.Input + float64(out)*mc.Price.Output))
		}
	}
	return res
}

// tokenEstimate returns the request's token estimate: its prompt (messagesin's estimate)
// plus its output cap (the request's, else its model's max_tokens, else
// state.reserve_output_tokens), made once.
func (c *requestRun) tokenEstimate() int64 {
	l := &c.limits
	if l.estimate > 0 {
		return l.estimate
	}
	out := int64(c.req.MaxTokens)
	if out <= 0 {
		out = int64(c.route.maxTokens)
	}
	if out <= 0 {
		out = int64(c.rt.cfg.State.ReserveOutputTokens)
	}
	if out <= 0 { // a config built in code, without Load's defaults
		out = config.DefaultReserveOutputTokens
	}
	c.fullRequest() // request_head.go
	l.prompt = int64(messagesin.EstimateTokens(c.req))
	l.estimate = l.prompt + out
	return l.estimate
}

// endLimits charges the request's usage (every turn) and releases its slots, once. It
// runs when the response has ended, whether completed, failed or left by the client.
// The limiter replaces the reservation taken at admission by this usage.
func (c *requestRun) endLimits() {
	l := &c.limits
	l.endFallbacks() // fallback.go
	if !l.admitted {
		return
	}
	l.admitted = false
	if err := c.s.limiter.Finish(context.Background(), &l.req, &l.adm, c.finalUsage()); err == nil {
		c.setBudgetGauges()
	}
}

func (c *requestRun) setBudgetGauges() {
	l := &c.limits
	if l.req.Budget.Tokens > 0 {
		c.s.metrics.BudgetRemaining.WithLabelValues(c.key.name, "tokens").Set(float64(l.adm.BudgetTokensLeft))
	}
	if l.req.Budget.MicroUSD > 0 {
		c.s.metrics.BudgetRemaining.WithLabelValues(c.key.name, "usd").Set(float64(l.adm.BudgetMicroUSDLeft) / 1e6)
	}
	// A team's budget is configured (or in the database): its names are as bounded as keys'.
	if l.req.TeamBudget.Tokens > 0 {
		c.s.metrics.TeamBudgetRemaining.WithLabelValues(l.req.Team, "tokens").Set(float64(l.adm.TeamBudgetTokensLeft))
	}
	if l.req.TeamBudget.MicroUSD > 0 {
		c.s.metrics.TeamBudgetRemaining.WithLabelValues(l.req.Team, "usd").Set(float64(l.adm.TeamBudgetMicroUSDLeft) / 1e6)
	}
}

// addCost adds the cost of one upstream turn served by route r, priced by its model.
func (l *limitRun) addCost(rt *runtime, r *route, u translate.Usage) {
	if l == nil || l.req.Budget.MicroUSD == 0 && l.req.TeamBudget.MicroUSD == 0 { // no usd budget: nothing to price
		return
	}
	mc, ok := rt.cfg.Models[r.name]
	if !ok || mc.Price == nil {
		return
	}
	p := mc.Price
	// Prompt tokens include cache reads and writes (OpenAI semantics).
	plain := max(0, u.PromptTokens-u.CachedTokens-u.CacheCreationTokens)
	// Prices are USD per million tokens, so tokens times price is micro-USD.
	l.microUSD += float64(plain)*p.Input + float64(u.CachedTokens)*p.CachedInput +
		float64(u.CacheCreationTokens)*p.CacheWrite + float64(u.CompletionTokens)*p.Output
}

// limitError is a refusal by a limit or budget, rendered by classify as OpenAI does.
type limitError struct{ a apiError }

func (e *limitError) Error() string { return e.a.Message }

func (c *requestRun) limitError() error {
	l := &c.limits
	d, after := l.adm.Denied, l.adm.RetryAfter
	a := apiError{Status: 429, Code: "rate_limit_exceeded", Type: "requests",
		RetryAfter: max(1, int((after+time.Second-1)/time.Second))}
	if d.Quota() {
		a.Type, a.Code = "insufficient_quota", "insufficient_quota"
		subject, b := "key "+c.key.name, l.req.Budget
		if d.Team() {
			subject, b = "team "+l.req.Team+" (of key "+c.key.name+")", l.req.TeamBudget
		}
		what := fmt.Sprintf("tokens budget (%d tokens per %s)", b.Tokens, b.Period)
		if d == limits.BudgetUSD || d == limits.TeamBudgetUSD {
			what = fmt.Sprintf("usd budget (%s USD per %s)", strconv.FormatFloat(float64(b.MicroUSD)/1e6, 'f', -1, 64), b.Period)
		}
		a.Message = fmt.Sprintf("%s exceeded its %s; it renews in %s", subject, what, roughly(after))
		return &limitError{a}
	}
	// A rate: the key's own, its team's, shared by the team's keys, or the model's,
	// shared by all keys.
	subject, rate, all := "key "+c.key.name, l.req.KeyRate, ""
	switch {
	case d == limits.ModelRequests || d == limits.ModelTokens || d == limits.ModelConcurrent:
		subject, rate, all = "model "+c.route.name, l.req.ModelRate, " for all keys"
	case d.Team():
		subject, rate, all = "team "+l.req.Team, l.req.TeamRate, " for all its keys"
	}
	wait := "try again in " + roughly(after)
	switch d {
	case limits.KeyRequests, limits.ModelRequests, limits.TeamRequests:
		a.Message = fmt.Sprintf("rate limit reached for %s on requests per minute%s (limit %d); %s", subject, all, rate.RequestsPerMinute, wait)
	case limits.KeyTokens, limits.ModelTokens, limits.TeamTokens:
		a.Type = "tokens"
		a.Message = fmt.Sprintf("rate limit reached for %s on tokens per minute%s (limit %d); %s", subject, all, rate.TokensPerMinute, wait)
	case limits.KeyConcurrent, limits.ModelConcurrent, limits.TeamConcurrent:
		a.Message = fmt.Sprintf("rate limit reached for %s on concurrent requests%s (limit %d); try again when one of them ends", subject, all, rate.Concurrent)
	}
	return &limitError{a}
}

// roughly renders a wait for a message: to the second from one second on.
func roughly(d time.Duration) string {
	if d >= time.Second {
		return d.Round(time.Second).String()
	}
	return string(appendReset(nil, d))
}

// rateLimitHeaders are OpenAI's x-ratelimit-* names: limit, remaining and reset, for
// requests and for tokens.
var rateLimitHeaders = [2][3]string{
	{"x-ratelimit-limit-requests", "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests"},
	{"x-ratelimit-limit-tokens", "x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens"},
}

// setRateLimitHeaders sets OpenAI's x-ratelimit-* headers for the key's per-minute limits,
// without allocating.
func setRateLimitHeaders(h *fasthttp.ResponseHeader, a *limits.Admission) {
	var buf [24]byte
	for i, w := range [2]limits.WindowState{a.Requests, a.Tokens} {
		if w.Limit == 0 {
			continue
		}
		names := &rateLimitHeaders[i]
		h.SetBytesV(names[0], strconv.AppendInt(buf[:0], w.Limit, 10))
		h.SetBytesV(names[1], strconv.AppendInt(buf[:0], w.Remaining, 10))
		h.SetBytesV(names[2], appendReset(buf[:0], w.Reset))
	}
}

// appendReset appends d as OpenAI's reset headers show it, in seconds to the millisecond
// ("1s", "59.5s", "0.012s"); time.ParseDuration reads it.
func appendReset(b []byte, d time.Duration) []byte {
	ms := max(0, d.Milliseconds())
	b = strconv.AppendInt(b, ms/1000, 10)
	if frac := ms % 1000; frac != 0 {
		b = append(b, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
		for b[len(b)-1] == '0' {
			b = b[:len(b)-1]
		}
	}
	return append(b, 's')
}

// stateNotReady writes the readiness of the state store when it cannot be reached and
// reports whether it did: degraded (200) with on_error allow, since requests are still
// served; not ready (503) with deny.
func (s *Server) stateNotReady(ctx *fasthttp.RequestCtx) bool {
	rctx, cancel := context.WithCancel(s.baseCtx)
	defer cancel()
	err := s.limiter.Ready(rctx)
	if err == nil {
		return false
	}
	status := "degraded"
	if s.onErrorDeny {
		status = "not ready"
		ctx.SetStatusCode(503)
	}
	reason := "state store unreachable: " + err.Error()
	ctx.SetBody(append(append([]byte(`{"status":"`+status+`","reason":`), jsonx.AppendString(nil, reason)...), '}'))
	return true
}

// closeLimiter closes a limiter the server opened itself.
func (s *Server) closeLimiter() {
	if s.ownLimiter {
		if err := s.limiter.Close(); err != nil && !errors.Is(err, context.Canceled) {
			s.logger.Warn("closing the state store", "error", err.Error())
		}
	}
}
