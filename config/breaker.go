package config

import (
	"fmt"
	"slices"
	"time"
)

// CircuitBreaker is when a deployment (a backend's upstream model) is left alone after
// failing: after Failures consecutive retryable failures of its attempts (5xx, 529,
// resets, timeouts; not the client's 4xx, not 429) the circuit opens, and for Cooldown
// the model's requests go straight to its fallbacks (or get a 503
// upstream_circuit_open when it has none); then one request probes it: its success
// closes the circuit, its failure opens it for another Cooldown. With state.type redis
// the replicas share the openings (package breaker).
type CircuitBreaker struct {
	// Failures is how many consecutive failed attempts open the circuit. In a backend's
	// retries.circuit_breaker, unset means the default 5 and 0 or -1 turn the breaker off
	// (after Load: 0 is off); in a model's circuit_breaker, 0 means the backend's value
	// and -1 turns it off for that model.
	Failures int `koanf:"failures"`
	// Cooldown is how long an open circuit sends no request to the deployment before a
	// probe. Default 30s; in a model's circuit_breaker, 0 means the backend's value.
	Cooldown time.Duration `koanf:"cooldown"`
}

const (
	defaultCircuitFailures = 5
	defaultCircuitCooldown = 30 * time.Second
)

// applyCircuitDefaults fills in each backend's retries.circuit_breaker: on by default.
func (c *Config) applyCircuitDefaults(raw map[string]any) {
	for name, b := range c.Backends {
		cb := &b.Retries.CircuitBreaker
		switch {
		case !hasKey(raw, "backends", name, "retries", "circuit_breaker", "failures"):
			cb.Failures = defaultCircuitFailures
		case cb.Failures == -1:
			cb.Failures = 0
		}
		setDefault(&cb.Cooldown, defaultCircuitCooldown)
		c.Backends[name] = b
	}
}

// CircuitOf returns the circuit breaker of model name (its own circuit_breaker over its
// backend's retries.circuit_breaker), and false when it has none: an unknown model, a
// breaker turned off, or a mock backend (which never fails).
func (c *Config) CircuitOf(name string) (CircuitBreaker, bool) {
	return c.CircuitOn(name, c.Models[name].Backend)
}

// CircuitOn is CircuitOf for model name's deployment on backend (one of its
// deployments: the model's circuit_breaker over that backend's
// retries.circuit_breaker).
func (c *Config) CircuitOn(name, backend string) (CircuitBreaker, bool) {
	m, ok := c.Models[name]
	if !ok {
		return CircuitBreaker{}, false
	}
	b, ok := c.Backends[backend]
	if !ok || b.Type == "mock" {
		return CircuitBreaker{}, false
	}
	cb := b.Retries.CircuitBreaker
	if o := m.CircuitBreaker; o != nil {
		if o.Failures != 0 {
			cb.Failures = o.Failures
		}
		if o.Cooldown != 0 {
			cb.Cooldown = o.Cooldown
		}
	}
	if cb.Failures <= 0 {
		return CircuitBreaker{}, false
	}
	if cb.Cooldown <= 0 {
		cb.Cooldown = defaultCircuitCooldown
	}
	return cb, true
}

// validateFailover checks every backend's retries.circuit_breaker and every model's
// circuit_breaker and context_fallbacks.
func (c *Config) validateFailover(v *validator) {
	for name, b := range c.Backends {
		p := "backends." + name + ".retries.circuit_breaker"
		if b.Retries.CircuitBreaker.Failures < -1 {
			v.addf(p+".failures", "must be -1 or 0 (off) or more")
		}
		v.nonNegativeDuration(p+".cooldown", b.Retries.CircuitBreaker.Cooldown)
	}
	for name, m := range c.Models {
		p := "models." + name
		if cb := m.CircuitBreaker; cb != nil {
			if cb.Failures < -1 {
				v.addf(p+".circuit_breaker.failures", "must be -1 (off), 0 (the backend's) or more")
			}
			v.nonNegativeDuration(p+".circuit_breaker.cooldown", cb.Cooldown)
		}
		c.validateFallbacks(v, p+".context_fallbacks", name, m.ContextFallbacks)
	}
}

// validateFallbacks checks model name's list of fallback models at path: each another
// configured model, once.
func (c *Config) validateFallbacks(v *validator, path, name string, list []string) {
	for i, f := range list {
		fp := fmt.Sprintf("%s[%d]", path, i)
		switch _, ok := c.Models[f]; {
		case f == name:
			v.addf(fp, "model cannot fall back to itself")
		case !ok:
			v.addf(fp, "unknown model %q", f)
		case slices.Index(list, f) < i:
			v.addf(fp, "duplicate fallback %q", f)
		}
	}
}
