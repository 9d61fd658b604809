package config

import (
	"math"
	"net/url"
	"path"
	"sort"
)

var (
	stateTypes    = []string{"", "memory", "redis"}
	stateOnErrors = []string{"", "allow", "deny"}
)

// validateLimits checks the state section, every limits, budget and price, and that a key
// with a usd budget can reach only priced models.
func (c *Config) validateLimits(v *validator) {
	s := c.State
	v.oneOf("state.type", s.Type, stateTypes)
	v.oneOf("state.on_error", s.OnError, stateOnErrors)
	v.nonNegativeDuration("state.timeout", s.Timeout)
	v.nonNegative("state.reserve_output_tokens", s.ReserveOutputTokens)
	switch {
	case s.Type == "redis" && s.URL == "":
		v.addf("state.url", "required for state type redis")
	case s.Type == "redis":
		v.redisURL("state.url", s.URL)
	case s.URL != "":
		v.addf("state.url", "only for state type redis")
	}
	for name, m := range c.Models {
		p := "models." + name
		validateLimitFields(v, p+".limits", m.Limits)
		if m.Price != nil {
			for field, x := range map[string]float64{"input": m.Price.Input, "output": m.Price.Output,
				"cached_input": m.Price.CachedInput, "cache_write": m.Price.CacheWrite} {
				if x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
					v.addf(p+".price."+field, "must be a non-negative number")
				}
			}
		}
	}
	for name, k := range c.Keys {
		p := "keys." + name
		validateLimitFields(v, p+".limits", k.Limits)
		v.nonNegative(p+".budget.tokens", k.Budget.Tokens)
		if k.Budget.USD < 0 || math.IsNaN(k.Budget.USD) || math.IsInf(k.Budget.USD, 0) {
			v.addf(p+".budget.usd", "must be a non-negative number")
		}
		v.nonNegativeDuration(p+".budget.period", k.Budget.Period)
		if k.Budget.USD > 0 {
			for _, model := range c.unpricedModels(k.Models) {
				v.addf(p+".budget.usd", "the key can use model %q, which has no price (set models.%s.price or narrow keys.%s.models)", model, model, name)
			}
		}
	}
}

func validateLimitFields(v *validator, p string, l Limits) {
	v.nonNegative(p+".requests_per_minute", l.RequestsPerMinute)
	v.nonNegative(p+".tokens_per_minute", l.TokensPerMinute)
	v.nonNegative(p+".concurrent", l.Concurrent)
}

// unpricedModels returns, sorted, the configured models that globs match (as a key's
// models list does) or that such a model falls back to, and that have no price.
func (c *Config) unpricedModels(globs []string) []string {
	var out []string
	seen := map[string]bool{}
	var visit func(name string)
	visit = func(name string) {
		m, ok := c.Models[name]
		if !ok || seen[name] {
			return
		}
		seen[name] = true
		if m.Price == nil {
			out = append(out, name)
		}
		for _, fb := range m.Fallbacks {
			visit(fb)
		}
	}
	for name := range c.Models {
		for _, g := range globs {
			if ok, _ := path.Match(g, name); ok || g == "*" || g == name {
				visit(name)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// redisURL checks a Redis URL without quoting it (it may carry a password).
func (v *validator) redisURL(path, raw string) {
	if u, err := url.Parse(raw); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
		v.addf(path, "must be a redis:// or rediss:// URL with a host")
	}
}
