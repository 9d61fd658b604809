package config

import (
	"strings"
	"testing"
	"time"
)

const breakerBase = `
backends:
  up: {type: openai, base_url: "http://127.0.0.1:1/v1"%s}
  off: {type: openai, base_url: "http://127.0.0.1:1/v1", retries: {circuit_breaker: {failures: 0}}}
  local: {type: mock}
models:
  a: {backend: up%s}
  b: {backend: up, circuit_breaker: {failures: 2}}
  c: {backend: up, circuit_breaker: {failures: -1}}
  d: {backend: off}
  e: {backend: off, circuit_breaker: {failures: 3}}
  m: {backend: local}
`

// TestCircuitOf: the breaker each model gets, from its backend's retries.circuit_breaker
// (on by default) and its own override.
func TestCircuitOf(t *testing.T) {
	cfg, err := Parse([]byte(strings.Replace(strings.Replace(breakerBase, "%s", "", 1), "%s", ", circuit_breaker: {cooldown: 1m}", 1)), nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		model string
		want  CircuitBreaker
		on    bool
	}{
		{"a", CircuitBreaker{Failures: 5, Cooldown: time.Minute}, true}, // backend's default failures, own cooldown
		{"b", CircuitBreaker{Failures: 2, Cooldown: 30 * time.Second}, true},
		{"c", CircuitBreaker{}, false}, // -1: off for the model
		{"d", CircuitBreaker{}, false}, // failures: 0 on the backend: off
		{"e", CircuitBreaker{Failures: 3, Cooldown: 30 * time.Second}, true},
		{"m", CircuitBreaker{}, false}, // mock backends never fail
		{"nope", CircuitBreaker{}, false},
	}
	for _, tt := range tests {
		got, on := cfg.CircuitOf(tt.model)
		if got != tt.want || on != tt.on {
			t.Errorf("CircuitOf(%q) = %+v %v, want %+v %v", tt.model, got, on, tt.want, tt.on)
		}
	}
}

// TestValidateFailover: each bad value is an error naming its key.
func TestValidateFailover(t *testing.T) {
	tests := []struct{ backend, model, want string }{
		{", retries: {circuit_breaker: {failures: -2}}", "", "backends.up.retries.circuit_breaker.failures"},
		{", retries: {circuit_breaker: {cooldown: -1s}}", "", "backends.up.retries.circuit_breaker.cooldown"},
		{"", ", circuit_breaker: {failures: -3}", "models.a.circuit_breaker.failures"},
		{"", ", context_fallbacks: [zzz]", `models.a.context_fallbacks[0]: unknown model "zzz"`},
		{"", ", context_fallbacks: [a]", "models.a.context_fallbacks[0]: model cannot fall back to itself"},
		{"", ", context_fallbacks: [b, b]", `models.a.context_fallbacks[1]: duplicate fallback "b"`},
	}
	for _, tt := range tests {
		yaml := strings.Replace(strings.Replace(breakerBase, "%s", tt.backend, 1), "%s", tt.model, 1)
		_, err := Parse([]byte(yaml), nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s%s: %v, want an error with %q", tt.backend, tt.model, err, tt.want)
		}
	}
}
