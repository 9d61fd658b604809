package proxy

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/balance"
	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/upstream"
)

// This file serves models with deployments (models.<m>.deployments): each attempt of a
// request goes to one deployment package balance chooses; a retryable failure moves to
// another deployment of the model before the model's fallbacks are tried. A model without
// deployments takes none of this path.

// Affinity sources (models.<m>.affinity).
const (
	affinityOff = iota
	affinityPrefix
	affinityUser
	affinityHeader
)

// deployments are a route's deployments: the balance set and, by the same index, the
// route of each (the model's route with the deployment's backend and upstream model).
type deployments struct {
	model  string
	set    *balance.Set
	routes []*route
	// affinity is an affinity source; header the session header's name (affinityHeader).
	affinity int
	header   string
}

// balancing is what the deployments of every model share and a reload keeps: the
// affinity store (in memory, or in Redis with state type redis) and the health (the
// circuit breaker; nil: every deployment is healthy).
type balancing struct {
	health balance.Health
	memory *balance.Memory
	// entries and ttl are the settings memory was made with.
	entries int
	ttl     time.Duration
	redis   *balance.Redis
	// redisKey is the state settings redis was made with (URL, prefix, timeout, ttl).
	redisKey string
}

// newBalancing returns the balancing of cfg, taking over prev's stores when their
// settings are unchanged.
func newBalancing(cfg *config.Config, prev *balancing) (*balancing, error) {
	b := &balancing{entries: cmpOr(cfg.Balancing.AffinityEntries, config.DefaultAffinityEntries),
		ttl: cmpOr(cfg.Balancing.AffinityTTL, config.DefaultAffinityTTL)}
	if prev != nil {
		b.health = prev.health
	}
	affine, deployed := false, false
	for _, mc := range cfg.Models {
		if mc.Affinity != "" && mc.Affinity != "off" && len(mc.Deployments) > 1 {
			affine = true
		}
		deployed = deployed || len(mc.Deployments) > 1
	}
	// With state type redis the deployments' quotas and rests are shared (balance
	// QuotaStore) whether or not affinity is on.
	if !affine && (!deployed || cfg.State.Type != "redis") {
		return b, nil
	}
	if cfg.State.Type != "redis" {
		if prev != nil && prev.memory != nil && prev.entries == b.entries && prev.ttl == b.ttl {
			b.memory = prev.memory
		} else {
			b.memory = balance.NewMemory(b.entries, b.ttl)
		}
		return b, nil
	}
	st := cfg.State
	b.redisKey = st.URL + "\x00" + st.KeyPrefix + "\x00" + st.Timeout.String() + "\x00" + b.ttl.String()
	if prev != nil && prev.redis != nil && prev.redisKey == b.redisKey {
		b.redis = prev.redis
		return b, nil
	}
	opts, err := redis.ParseURL(st.URL)
	if err != nil {
		return nil, errors.New("state.url: not a Redis URL") // config validated it; never quoted
	}
	b.redis = &balance.Redis{Client: redis.NewClient(opts), Prefix: st.KeyPrefix, TTL: b.ttl, Timeout: st.Timeout}
	return b, nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// store returns the affinity store; nil for none.
func (b *balancing) store() balance.Affinity {
	switch {
	case b.redis != nil:
		return b.redis
	case b.memory != nil:
		return b.memory
	}
	return nil
}

// newDeployments returns the deployments of model name (config mc, its route r, whose
// backend it sets to the first usable deployment's), or nil for a model without more
// than one; prev is the runtime replaced, whose deployments'
// state the new set takes over.
func (rt *runtime) newDeployments(name string, mc config.Model, r *route, prev *runtime) *deployments {
	// A deployment whose backend lacks its credential is left out (warnNoCredential names
	// the backend); the model is refused only when every one lacks it (usable).
	ds := slices.DeleteFunc(slices.Clone(mc.Deployments), func(d config.Deployment) bool { return rt.noCredential[d.Backend] })
	if len(ds) == 0 {
		return nil
	}
	r.backend, r.upstreamModel, r.upstreamLabel = rt.backends[ds[0].Backend], ds[0].UpstreamModel, ds[0].Name()
	r.circuit, r.continuation = circuitKey(rt.cfg, name, r.backend, r.upstreamModel), continuationOf(r.backend, r.upstreamModel, mc.Continuation)
	if len(ds) < 2 {
		return nil
	}
	mc.Deployments = ds
	strategy, _ := balance.ParseStrategy(mc.Balance) // config validated it
	d := &deployments{model: name, routes: make([]*route, len(mc.Deployments))}
	for i, dc := range mc.Deployments {
		dr := *r
		dr.backend, dr.upstreamModel, dr.deployment, dr.model = rt.backends[dc.Backend], dc.UpstreamModel, dc.Name(), r
		dr.upstreamLabel, dr.kept = dc.Name(), new(routeSeries)             // its own label's handles
		dr.circuit = circuitKey(rt.cfg, name, dr.backend, dr.upstreamModel) // dc.Name() or none
		dr.continuation = continuationOf(dr.backend, dr.upstreamModel, mc.Continuation)
		d.routes[i] = &dr
	}
	// The deployments' circuits are asked by package balance (Health), not where the
	// model's route is tried (circuitVerdict): one Allow per attempt, one Record.
	r.circuit = ""
	opts := balance.Options{Model: name, Strategy: strategy, Health: rt.balancing.health}
	switch a := mc.Affinity; {
	case a == "prefix":
		d.affinity = affinityPrefix
	case a == "user":
		d.affinity = affinityUser
	case strings.HasPrefix(a, "header:"):
		d.affinity, d.header = affinityHeader, strings.TrimPrefix(a, "header:")
	}
	if d.affinity != affinityOff {
		opts.Affinity = rt.balancing.store()
	}
	if rt.balancing.redis != nil {
		opts.Quotas, opts.QuotaSync = rt.balancing.redis, rt.cfg.Balancing.QuotaSync
	}
	if prev != nil {
		if old, ok := prev.routes[name]; ok && old.deploy != nil {
			opts.Previous = old.deploy.set
		}
	}
	d.set = balance.New(DeploymentSpecs(mc.Deployments), opts)
	return d
}

// hasCredential reports whether model mc can be called: its backend, or one of its
// deployments', has the credential it needs.
func (rt *runtime) hasCredential(mc config.Model) bool {
	if !rt.noCredential[mc.Backend] {
		return true
	}
	for _, d := range mc.Deployments {
		if !rt.noCredential[d.Backend] {
			return true
		}
	}
	return false
}

// key returns the request's affinity key: 0 for none.
func (d *deployments) key(ctx *fasthttp.RequestCtx, req *translate.Request) uint64 {
	switch d.affinity {
	case affinityPrefix:
		return balance.PrefixKey(req)
	case affinityUser:
		return balance.StringKey("user", clip(req.User, 1024))
	case affinityHeader:
		return balance.StringKey(d.header, clip(string(peekAnyCase(&ctx.Request.Header, d.header)), 1024))
	}
	return 0
}

// of returns the model's route of a deployment's route; r itself otherwise.
func (r *route) of() *route {
	if r.model != nil {
		return r.model
	}
	return r
}

// serves reports whether backend is r's or one of its deployments'.
func (r *route) serves(backend string) bool {
	if r.backend.name == backend {
		return true
	}
	if r.deploy != nil {
		for _, dr := range r.deploy.routes {
			if dr.backend.name == backend {
				return true
			}
		}
	}
	return false
}

// noteAffinity computes the request's affinity key for its model call, once the request
// is prepared (a continuation's stored conversation prepended).
func (c *requestRun) noteAffinity(ctx *fasthttp.RequestCtx) {
	if d := c.route.deploy; d != nil && d.affinity != affinityOff {
		c.fullRequest() // request_head.go
		c.call.affinity = d.key(ctx, c.req)
	}
}

// attemptsOn tries route r: a model without deployments with attempts; one with
// deployments on one deployment after another, as package balance chooses them, each
// once, until one answers, the failure is not retryable, part of an answer reached the
// client, or no usable deployment is left. A call pinned to a backend (a continuation
// its upstream holds) uses only that backend's deployments.
func (c *modelCall) attemptsOn(ctx context.Context, r *route, try func(context.Context, *route) error) error {
	if r.deploy == nil {
		return c.attempts(ctx, r, try)
	}
	return c.attemptsOnDeployments(ctx, r, try)
}

// attemptsOnDeployments is attemptsOn for a model with deployments. It is a function of its
// own, never inlined, so that its frame is not on the stack of every other model's
// streams (skipFallback).
//
//go:noinline
func (c *modelCall) attemptsOnDeployments(ctx context.Context, r *route, try func(context.Context, *route) error) error {
	d := r.deploy
	var tried balance.Tried
	if c.pin != "" {
		for i, dr := range d.routes {
			if dr.backend.name != c.pin {
				tried.Add(i)
			}
		}
	}
	var last error
	for n := 0; ; n++ {
		if n > 0 && c.expired() {
			return last
		}
		start := time.Now()
		ch := d.set.Pick(ctx, start, c.affinity, &tried)
		c.noteChoice(d, ch)
		if !ch.OK() {
			if last == nil && ch.Unhealthy > 0 {
				last = c.deploymentsOpen(d, ch)
			}
			if last == nil {
				last = &translate.UpstreamError{Status: http.StatusServiceUnavailable, Type: "api_error", Code: "no_usable_deployment", Retryable: true,
					Message: "no deployment of model " + d.model + " is usable now: each is unhealthy, resting after a 429, at its max_conns or over its limits"}
			}
			return last
		}
		tried.Add(ch.Index)
		dr := d.routes[ch.Index]
		if n > 0 {
			c.metrics.UpstreamRetries.WithLabelValues(dr.backend.name, "deployment").Inc()
			c.log().Info("trying another deployment", "model", d.model, "deployment", dr.deployment, "attempt", n+1,
				"error", logError(last, c.rt.cfg.Log.UpstreamErrorMessages))
		}
		c.at = dr
		c.firstAt, c.headersAt, c.timeFirst = time.Time{}, time.Time{}, true
		last = c.tracedAttempt(ctx, dr, n, try)
		o := c.outcome(last, start)
		d.set.Done(ch.Index, o, time.Now())
		c.noteOutcome(d, dr, o, last)
		if last == nil || c.sent || ctx.Err() != nil || !upstream.Retryable(last) {
			return last
		}
	}
}

// deploymentsOpen is the error of a request to a model none of whose deployments was
// tried, ch.Refused by their health (their circuits are open), as circuitOpen is for a
// model of one backend: a 503 upstream_circuit_open, Retry-After the shortest rest of
// their cooldowns; retryable, so that the model's fallbacks are tried.
func (c *modelCall) deploymentsOpen(d *deployments, ch balance.Choice) *translate.UpstreamError {
	var wait time.Duration
	if cs := c.rt.circuits; cs != nil {
		now := cs.now()
		for i, dr := range d.routes {
			if _, in := cs.set.State(dr.circuit, now); ch.Refused.Has(i) && in > 0 && (wait == 0 || in < wait) {
				wait = in
			}
		}
	}
	wait = max(wait, time.Second)
	return &translate.UpstreamError{Status: http.StatusServiceUnavailable, Type: "api_error", Code: "upstream_circuit_open", Retryable: true,
		RetryAfter: wait, Message: "model " + d.model + " is not called for " + strconv.Itoa(int((wait+time.Second-1)/time.Second)) +
			"s: the circuit breakers of its deployments are open after consecutive failures; retry later"}
}

// outcome is how the attempt that started at start and ended with err went, for package
// balance: its Health (the circuit breaker) is told what circuitOutcome says, as a model
// of one backend's circuit is.
func (c *modelCall) outcome(err error, start time.Time) balance.Outcome {
	o := balance.Outcome{OK: true, Tokens: int64(c.meter.last.PromptTokens + c.meter.last.CompletionTokens)}
	switch {
	case !c.firstAt.IsZero():
		o.TTFT = c.firstAt.Sub(start)
	case !c.headersAt.IsZero():
		o.TTFT = c.headersAt.Sub(start)
	}
	if ue := upstream.AsError(err); ue != nil && ue.Status == http.StatusTooManyRequests {
		o.OK, o.RateLimited, o.RetryAfter = false, true, ue.RetryAfter
	}
	known, ok := c.circuitOutcome(err)
	o.Unknown = !known
	if known {
		o.OK = ok
	}
	return o
}

// noteChoice counts a deployment choice and marks the deployments its health refused.
func (c *modelCall) noteChoice(d *deployments, ch balance.Choice) {
	m := c.metrics
	if ch.Affine {
		result := "miss"
		if ch.Hit {
			result = "hit"
		}
		m.DeploymentAffinity.WithLabelValues(d.model, result).Inc()
	}
	for i := range d.routes {
		if ch.Refused.Has(i) {
			m.DeploymentHealthy.WithLabelValues(d.model, d.routes[i].deployment).Set(0)
		}
	}
	if ch.OK() {
		via := "balance"
		if ch.Hit {
			via = "affinity"
		}
		m.DeploymentSelected.WithLabelValues(d.model, d.routes[ch.Index].deployment, via).Inc()
	}
}

// noteOutcome counts an attempt on deployment route dr, and logs it.
func (c *modelCall) noteOutcome(d *deployments, dr *route, o balance.Outcome, err error) {
	m := c.metrics
	outcome, healthy := "ok", 1.0
	switch {
	case o.RateLimited:
		outcome, healthy = "rate_limited", 0
	case !o.OK:
		outcome, healthy = "error", 0
	case err != nil:
		outcome = "client_error"
	}
	m.DeploymentAttempts.WithLabelValues(d.model, dr.deployment, outcome).Inc()
	m.DeploymentHealthy.WithLabelValues(d.model, dr.deployment).Set(healthy)
	if o.OK && o.TTFT > 0 {
		m.DeploymentFirstEvent.WithLabelValues(d.model, dr.deployment).Observe(o.TTFT.Seconds())
	}
	if err != nil {
		c.log().Info("deployment attempt failed", "model", d.model, "deployment", dr.deployment, "outcome", outcome,
			"error", logError(err, c.rt.cfg.Log.UpstreamErrorMessages))
	}
}
