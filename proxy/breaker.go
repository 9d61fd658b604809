package proxy

import (
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agate-gateway/agate/breaker"
	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/limits"
	"github.com/agate-gateway/agate/metrics"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/upstream"
)

// This file connects the model calls to the circuit breakers (package breaker): one
// circuit per configured deployment, keyed "<backend>/<upstream model>", whose state
// outlives reloads (the Server owns the Set), shared with the other replicas through the
// limiter's Redis when state.type is redis. withRetries asks before it tries a route
// (circuitVerdict: an open circuit's route is skipped, its fallbacks are tried, and with
// none the client gets circuitOpen's 503) and before a retry on it; counted records each
// attempt's outcome (recordCircuit).

// circuits are the Server's circuit breakers and its clock.
type circuits struct {
	set *breaker.Set
	now func() time.Time
}

// The reasons a request goes to a fallback, on its log line and its attempt span.
const (
	fallbackOnError   = "error"          // the route before failed retryably
	fallbackOnCircuit = "circuit_open"   // the route before was skipped: its circuit is open
	fallbackOnContext = "context_length" // the route before said the request is over its context window
)

// skipCircuitOpen is the reason label of gateway_fallbacks_skipped_total for a route (the
// requested model's included) not tried because its circuit is open.
const skipCircuitOpen = "circuit_open"

// openCircuits makes the Server's circuit breakers: on the limiter's Redis when it has one
// (state.type redis), else of this process alone.
func (s *Server) openCircuits(opts Options) {
	now := opts.Clock
	if now == nil {
		now = time.Now
	}
	o := breaker.Options{Observer: circuitObserver{m: s.metrics, log: s.logger}}
	if r, ok := s.limiter.(interface{ Client() *redis.Client }); ok {
		errs := &limits.ErrorLog{Logger: s.logger, Count: s.metrics.StateError}
		o.Redis, o.Prefix, o.Timeout, o.Errors = r.Client(), opts.Config.State.KeyPrefix, opts.Config.State.Timeout, errs.StateError
	}
	s.circuits = &circuits{set: breaker.New(o), now: now}
}

// configureCircuits gives rt the Server's circuits and sets them to rt's deployments:
// those still configured keep their state; prev (nil at start) is the runtime rt
// replaces, whose dropped deployments leave the gauge.
func (s *Server) configureCircuits(rt, prev *runtime) {
	rt.circuits = s.circuits
	names := make([]string, 0, len(rt.routes))
	for name := range rt.routes {
		names = append(names, name)
	}
	sort.Strings(names) // the first model of a deployment gives its policy
	cs := make([]breaker.Circuit, 0, len(names))
	keep := map[string]bool{}
	for _, name := range names {
		for _, r := range rt.routes[name].circuits() {
			cb, _ := rt.cfg.CircuitOn(name, r.backend.name)
			cs = append(cs, breaker.Circuit{Key: r.circuit, Backend: r.backend.name, Model: r.upstreamModel,
				Policy: breaker.Policy{Failures: cb.Failures, Cooldown: cb.Cooldown}})
			keep[r.circuit] = true
		}
	}
	s.circuits.set.Configure(cs)
	now := s.circuits.now()
	for _, c := range cs {
		st, _ := s.circuits.set.State(c.Key, now)
		s.metrics.Circuits.State.WithLabelValues(c.Backend, c.Model).Set(float64(st))
	}
	if prev != nil {
		for _, pr := range prev.routes {
			for _, r := range pr.circuits() {
				if !keep[r.circuit] {
					s.metrics.Circuits.State.DeleteLabelValues(r.backend.name, r.upstreamModel)
				}
			}
		}
	}
}

// circuits returns the routes of r's circuits: r itself, or its deployments' routes for
// a model with deployments (whose own route has none); those with a circuit only.
func (r *route) circuits() []*route {
	if r.deploy != nil {
		var out []*route
		for _, dr := range r.deploy.routes {
			if dr.circuit != "" {
				out = append(out, dr)
			}
		}
		return out
	}
	if r.circuit == "" {
		return nil
	}
	return []*route{r}
}

// circuitHealth is the circuit breakers as the deployments' balance.Health when
// Options.Health is nil: a deployment's circuit is keyed "<backend>/<upstream model>",
// the name package balance gives it, so a model's deployments and a model served by one
// of those backends alone share one circuit. Time is the breakers' clock
// (Options.Clock), whatever the caller passes.
type circuitHealth struct{ s *Server }

func (h circuitHealth) Allow(key string, _ time.Time) bool {
	c := h.s.circuits
	return c.set.Allow(key, c.now())
}

func (h circuitHealth) Record(key string, ok bool, _ time.Time) {
	c := h.s.circuits
	c.set.Record(key, ok, c.now())
}

// circuitKey is the circuit of configured model name on backend b: "<backend>/<upstream
// model>", or "" when it has none (config.CircuitOf).
func circuitKey(cfg *config.Config, name string, b *backend, upstreamModel string) string {
	if _, ok := cfg.CircuitOn(name, b.name); !ok || b.client == nil {
		return ""
	}
	return b.name + "/" + upstreamModel
}

// circuitObserver turns the breakers' transitions into the gauge, the counter and a log
// line.
type circuitObserver struct {
	m   *metrics.Metrics
	log *slog.Logger
}

func (o circuitObserver) Transition(t breaker.Transition) {
	o.m.Circuits.State.WithLabelValues(t.Backend, t.Model).Set(float64(t.To))
	o.m.Circuits.Transitions.WithLabelValues(t.Backend, t.Model, t.To.String()).Inc()
	attrs := []any{"backend", t.Backend, "model", t.Model, "from", t.From.String(), "to", t.To.String(), "remote", t.Remote}
	switch t.To {
	case breaker.Open:
		o.log.Warn("circuit opened: the deployment is not called until its cooldown ends", append(attrs, "until", t.Until.UTC().Format(time.RFC3339))...)
	case breaker.HalfOpen:
		o.log.Info("circuit half-open: one request probes the deployment", attrs...)
	default:
		o.log.Info("circuit closed: the deployment answers again", attrs...)
	}
}

// circuitVerdict is whether route r may be called now; a route without a circuit always.
func (c *modelCall) circuitVerdict(r *route) breaker.Verdict {
	if r.circuit == "" || c.rt.circuits == nil {
		return breaker.Verdict{Allow: true}
	}
	return c.rt.circuits.set.CheckAt(r.circuit, c.rt.circuits.now) // a closed circuit reads no clock
}

// circuitOpen reports whether route r's circuit refuses another attempt of the running
// request: open, or half-open with its probe taken (a 429's hold does not stop the retry
// the upstream asked for).
func (c *modelCall) circuitOpen(r *route) bool {
	v := c.circuitVerdict(r)
	return !v.Allow && !v.Held
}

// recordCircuit tells route r's circuit the outcome of an attempt (circuitOutcome); a 429
// with Retry-After keeps the next requests off the route until then (breaker.Hold). A
// deployment's route is left to package balance, which tells its Health (circuitHealth)
// the same outcome when the attempt ends (attemptsOn): one Record per attempt.
func (c *modelCall) recordCircuit(r *route, err error) {
	if r.circuit == "" || c.rt.circuits == nil || r.model != nil {
		return
	}
	set, clock := c.rt.circuits.set, c.rt.circuits.now
	if ue := upstream.AsError(err); ue != nil && ue.Status == http.StatusTooManyRequests && ue.RetryAfter > 0 {
		set.Hold(r.circuit, clock().Add(ue.RetryAfter))
	}
	if known, ok := c.circuitOutcome(err); known {
		set.RecordAt(r.circuit, ok, clock) // a success on a quiet circuit reads no clock
	}
}

// circuitOutcome is what an attempt that ended with err tells of its deployment, for
// its circuit: known false when nothing, else ok whether it is up. A retryable upstream
// failure (5xx, 529, a reset, a timeout), a stream that broke midway and a rejected
// credential count against it; a
// 429 counts neither way, nor this gateway's own full connection pool (the upstream was
// not asked); any other answer, a 4xx included, shows the upstream up, and so does an
// attempt it accepted that ended for another reason (the client left). One that ended
// before the upstream answered, for a reason not the upstream's, tells nothing.
func (c *modelCall) circuitOutcome(err error) (known, ok bool) {
	if err == nil {
		return true, true
	}
	ue := upstream.AsError(err)
	switch {
	case ue == nil:
		// Not the upstream's failure: the client left, or the answer could not be read.
		return c.accepted, true
	case ue.Status == http.StatusTooManyRequests, ue.Code == "upstream_busy":
		return false, false
	case ue.Code == "upstream_auth_failed":
		return true, false // its credential cannot serve
	case ue.Retryable && (ue.Status >= 500 || ue.Status == http.StatusRequestTimeout):
		return true, false
	case c.sent && ue.Status >= 500:
		return true, false // a stream that broke midway (cut, an error event): upstream.Fault's 502
	}
	return true, true
}

// circuitOpen is the error of a request whose route is skipped (v: its circuit is open, or
// held) and that no fallback answered: a 503 upstream_circuit_open naming the model and its
// deployment, Retry-After the rest of the cooldown.
func circuitOpen(r *route, v breaker.Verdict) *translate.UpstreamError {
	secs := strconv.Itoa(int((v.RetryIn + time.Second - 1) / time.Second))
	why := "its circuit breaker is open after consecutive failures"
	if v.Held {
		why = "it asked to be left alone (429 with Retry-After)"
	}
	return &translate.UpstreamError{Status: http.StatusServiceUnavailable, Type: "api_error", Code: "upstream_circuit_open",
		RetryAfter: max(v.RetryIn, time.Second),
		Message: "model " + r.name + " (backend " + r.backend.name + ", upstream model " + r.upstreamModel + ") is not called for " +
			secs + "s: " + why + "; retry later"}
}

// skipCircuit notes that route r is not tried (v: its circuit is open, or it is held) and
// returns the error the request ends with if nothing after it answers.
func (c *modelCall) skipCircuit(r *route, v breaker.Verdict) error {
	c.metrics.FallbacksSkipped.WithLabelValues(c.route.label(), r.name, c.key.name, skipCircuitOpen).Inc()
	c.log().Info("route skipped: its circuit is open", "model", c.route.label(), "skipped", r.name, "backend", r.backend.name,
		"state", v.State.String(), "held", v.Held, "retry_in", v.RetryIn.Round(time.Millisecond).String())
	return circuitOpen(r, v)
}

// contextExceeded reports whether err, of an attempt on route r, says the request is over
// the model's context window (its provider's recognition, translate.ContextExceeded).
func (c *modelCall) contextExceeded(r *route, err error) bool {
	ue := upstream.AsError(err)
	return ue != nil && len(c.route.contextFallbacks) > 0 && translate.ContextExceeded(r.backend.provider, ue)
}

// fallbackReason is why route r is tried, when it is a fallback.
func (c *modelCall) fallbackReason(r *route) string {
	if r.of() == c.route {
		return ""
	}
	return c.reason
}
