package config

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestValidate_Limits(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string // the whole error; "" means valid
	}{
		{
			name:   "state redis without url",
			mutate: func(c *Config) { c.State.Type = "redis" },
			want:   "config: state.url: required for state type redis",
		},
		{
			name: "state url not redis, not quoted",
			mutate: func(c *Config) {
				c.State.Type = "redis"
				c.State.URL = "http://user:" + secretAPIKey + "@127.0.0.1:6379"
			},
			want: "config: state.url: must be a redis:// or rediss:// URL with a host",
		},
		{
			name: "state rediss with password is valid",
			mutate: func(c *Config) {
				c.State.Type = "redis"
				c.State.URL = "rediss://agate:" + secretAPIKey + "@redis.example.com:6380/2"
			},
		},
		{
			name:   "state url on memory",
			mutate: func(c *Config) { c.State.URL = "redis://127.0.0.1:6379" },
			want:   "config: state.url: only for state type redis",
		},
		{
			name:   "state type unknown",
			mutate: func(c *Config) { c.State.Type = "etcd" },
			want:   `config: state.type: "etcd" is not one of memory, redis`,
		},
		{
			name:   "state on_error unknown",
			mutate: func(c *Config) { c.State.OnError = "retry" },
			want:   `config: state.on_error: "retry" is not one of allow, deny`,
		},
		{
			name:   "negative key limit",
			mutate: func(c *Config) { k := c.Keys["ci"]; k.Limits.Concurrent = -1; c.Keys["ci"] = k },
			want:   "config: keys.ci.limits.concurrent: must not be negative",
		},
		{
			name:   "negative model limit",
			mutate: func(c *Config) { m := c.Models["demo"]; m.Limits.TokensPerMinute = -5; c.Models["demo"] = m },
			want:   "config: models.demo.limits.tokens_per_minute: must not be negative",
		},
		{
			name:   "negative price",
			mutate: func(c *Config) { m := c.Models["demo"]; m.Price = &Price{Output: -1}; c.Models["demo"] = m },
			want:   "config: models.demo.price.output: must be a non-negative number",
		},
		{
			name:   "NaN budget",
			mutate: func(c *Config) { k := c.Keys["ci"]; k.Budget.USD = math.NaN(); c.Keys["ci"] = k },
			want:   "config: keys.ci.budget.usd: must be a non-negative number",
		},
		{
			name: "usd budget reaching unpriced models names each",
			mutate: func(c *Config) {
				k := c.Keys["ci"]
				k.Models = []string{"demo", "gemini-*"}
				k.Budget.USD = 5
				c.Keys["ci"] = k
				m := c.Models["demo"]
				m.Price = &Price{Input: 1}
				c.Models["demo"] = m
			},
			// gemini-flash falls back to claude-sonnet, which is priced in the example.
			want: `config: keys.ci.budget.usd: the key can use model "gemini-flash", which has no price (set models.gemini-flash.price or narrow keys.ci.models)`,
		},
		{
			name: "usd budget reaching an unpriced fallback",
			mutate: func(c *Config) {
				k := c.Keys["ci"]
				k.Models = []string{"gemini-flash"}
				k.Budget.USD = 5
				c.Keys["ci"] = k
				m := c.Models["gemini-flash"]
				m.Price = &Price{Input: 1}
				c.Models["gemini-flash"] = m
				m = c.Models["claude-sonnet"]
				m.Price = nil
				c.Models["claude-sonnet"] = m
			},
			want: `config: keys.ci.budget.usd: the key can use model "claude-sonnet", which has no price (set models.claude-sonnet.price or narrow keys.ci.models)`,
		},
		{
			name: "usd budget on priced models only is valid",
			mutate: func(c *Config) {
				k := c.Keys["ci"]
				k.Models = []string{"claude-sonnet", "claude/*"}
				k.Budget.USD = 5
				c.Keys["ci"] = k
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.mutate(c)
			got := ""
			if err := c.Validate(); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate() mismatch (-want +got):\n%s", diff)
			}
			if strings.Contains(got, secretAPIKey) {
				t.Errorf("error quotes a secret: %s", got)
			}
		})
	}
}
