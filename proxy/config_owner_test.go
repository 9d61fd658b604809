package proxy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/loop"
	"github.com/agate-gateway/agate/tools"
)

// TestApply_ConfigRules: a config edited in code after loading is judged by config's own
// rules, with config's messages; proxy restates none of them (issue 11 §3).
func TestApply_ConfigRules(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	tests := []struct {
		name string
		edit func(*config.Config)
		want string
	}{
		{name: "key_sha256 not a digest", edit: func(c *config.Config) {
			k := c.Keys["alice"]
			k.Key, k.KeySHA256 = "", "zz"
			c.Keys["alice"] = k
		}, want: "keys.alice.key_sha256: must be 64 lowercase hex characters"},
		{name: "base_url not http", edit: func(c *config.Config) {
			c.Backends["up"] = config.Backend{Type: "openai", BaseURL: "ftp://example.com", MaxConns: 1}
		}, want: "backends.up.base_url: must be an absolute http or https URL"},
		{name: "unknown backend type", edit: func(c *config.Config) {
			c.Backends["up"] = config.Backend{Type: "carrier-pigeon", BaseURL: "http://127.0.0.1:1", MaxConns: 1}
		}, want: "backends.up.type:"},
		{name: "unknown prompt_cache", edit: func(c *config.Config) {
			m := c.Models["demo"]
			m.PromptCache = "always"
			c.Models["demo"] = m
		}, want: "models.demo.prompt_cache:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := startGateway(t, reloadBefore, nil)
			if r := g.chat("sk-alice", helloDemo); r.status != 200 { // also: Serve runs before the cleanup's Shutdown
				t.Fatalf("before Apply: %d %s", r.status, r.body)
			}
			cfg := parseConfig(t, reloadBefore, nil)
			tt.edit(cfg)
			err := g.srv.Apply(cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Apply: %v, want an error with %q", err, tt.want)
			}
			if r := g.chat("sk-alice", helloDemo); r.status != 200 {
				t.Errorf("after the rejected Apply: %d %s", r.status, r.body)
			}
		})
	}
}

// TestProviderFor_EveryConfigType: every backend type config accepts has a provider in
// the one table, mock included (a Provider like the others, answering in process), or is
// a cloud's (cloudOf).
func TestProviderFor_EveryConfigType(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	var got []string
	for _, typ := range []string{"anthropic", "gemini", "responses", "openai", "mock"} {
		p, ok := providerFor(typ)
		if !ok || p == nil {
			t.Errorf("providerFor(%q): no provider", typ)
			continue
		}
		if _, local := p.(localProvider); local {
			got = append(got, typ)
		}
	}
	if diff := cmp.Diff([]string{"mock"}, got); diff != "" {
		t.Errorf("local providers (-want +got):\n%s", diff)
	}
	if _, ok := providerFor("carrier-pigeon"); ok {
		t.Error("providerFor accepted an unknown type")
	}
	for _, typ := range []string{"azure", "vertex", "bedrock"} {
		if c, ok := cloudOf(typ); !ok || c.provider == nil || c.signer == nil {
			t.Errorf("cloudOf(%q): no cloud", typ)
		}
	}
}

// TestDefaults_OneOwner: the defaults that loop and tools own and apply for direct library
// use agree with config's, and the open-mode key has them.
func TestDefaults_OneOwner(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	got := []any{loop.DefaultMaxCallsPerTurn, loop.DefaultMaxConcurrentCalls, tools.DefaultTimeout, tools.DefaultMaxResultBytes,
		anonymousKey.maxIterations, anonymousKey.maxCallsPerTurn, anonymousKey.maxConcurrentCalls}
	want := []any{config.DefaultMaxToolCallsPerTurn, config.DefaultMaxConcurrentToolCalls, config.DefaultToolTimeout, config.DefaultMaxResultBytes,
		config.DefaultMaxToolIterations, config.DefaultMaxToolCallsPerTurn, config.DefaultMaxConcurrentToolCalls}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}
