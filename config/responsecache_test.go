package config

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestResponseCache_Defaults(t *testing.T) {
	c, err := Parse([]byte(`backends: {o: {type: mock}}
models: {m: {backend: o, cache: {responses: {}}}, plain: {backend: o}}
keys: {k: {key: secret, models: ["*"], cache: {responses: {when: always, max_bytes: 1000}}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := ResponseCache{TTL: 10 * time.Minute, MaxBytes: 64 << 20, MaxEntryBytes: 1 << 20, Store: "memory", When: "deterministic"}
	if got := *c.Models["m"].Cache.Responses; got != want {
		t.Errorf("model defaults %+v, want %+v", got, want)
	}
	if c.Models["plain"].Cache != nil {
		t.Errorf("a model without cache: got one")
	}
	want = ResponseCache{TTL: 10 * time.Minute, MaxBytes: 1000, MaxEntryBytes: 1000, Store: "memory", When: "always"}
	if got := *c.Keys["k"].Cache.Responses; got != want {
		t.Errorf("key defaults %+v, want %+v (max_entry_bytes at most max_bytes)", got, want)
	}
}

func TestResponseCache_Validate(t *testing.T) {
	tests := []struct {
		name, block, state, want string
	}{
		{name: "store", block: "{store: disk}", want: `models.m.cache.responses.store: "disk" is not one of memory, redis`},
		{name: "when", block: "{when: sometimes}", want: `models.m.cache.responses.when: "sometimes" is not one of deterministic, always`},
		{name: "negative ttl", block: "{ttl: -1s}", want: "models.m.cache.responses.ttl: must not be negative"},
		{name: "negative max_bytes", block: "{max_bytes: -1}", want: "models.m.cache.responses.max_bytes: must not be negative"},
		{name: "entry over max", block: "{max_bytes: 10, max_entry_bytes: 20}", want: "models.m.cache.responses.max_entry_bytes: must not be more than max_bytes"},
		{name: "redis without state", block: "{store: redis}", want: "models.m.cache.responses.store: redis needs state.type: redis"},
		{name: "redis with state", block: "{store: redis}", state: `state: {type: redis, url: "redis://127.0.0.1:6379/0"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte("backends: {o: {type: mock}}\nmodels: {m: {backend: o, cache: {responses: "+tt.block+"}}}\n"+tt.state), nil)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("err = %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestResponseCache_Example parses the response cache example of config.example.yaml.
func TestResponseCache_Example(t *testing.T) {
	data, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	start := strings.Index(s, "# Response cache (docs/response-cache.md)")
	end := strings.Index(s, "# Tool result cache")
	if start < 0 || end < start {
		t.Fatal("no response cache example")
	}
	y := "backends: {openai: {type: openai, base_url: \"http://127.0.0.1:1/v1\"}}\n"
	for line := range strings.SplitSeq(s[start:end], "\n") {
		if rest, ok := strings.CutPrefix(line, "#   "); ok {
			y += rest + "\n"
		}
	}
	c, err := Parse([]byte(y), []string{"CI_KEY=ci-secret"})
	if err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	if c.Models["gpt-eval"].Cache.Responses.When != "deterministic" || c.Keys["ci"].Cache.Responses.When != "always" {
		t.Errorf("parsed %+v %+v", c.Models["gpt-eval"].Cache.Responses, c.Keys["ci"].Cache.Responses)
	}
}
