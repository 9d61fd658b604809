package config

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParse_Deployments: a model with deployments parses with its defaults, and names
// its first deployment as its backend.
func TestParse_Deployments(t *testing.T) {
	doc := `
backends:
  a: {type: mock}
  b: {type: mock}
models:
  pool:
    upstream_model: base
    deployments:
      - {backend: a, weight: 3, max_conns: 4}
      - {backend: b, upstream_model: other, priority: 1, limits: {requests_per_minute: 10}}
    balance: least_busy
    affinity: header:x-session-id
    price: {input: 1, output: 2}
  single: {backend: a}
`
	c, err := Parse([]byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	price := &Price{Input: 1, Output: 2}
	want := Model{Backend: "a", UpstreamModel: "base", Price: price, Balance: "least_busy", Affinity: "header:x-session-id", PromptCache: "off",
		Deployments: []Deployment{
			{Backend: "a", UpstreamModel: "base", Weight: 3, MaxConns: 4, Price: price},
			{Backend: "b", UpstreamModel: "other", Weight: 1, Priority: 1, Limits: Limits{RequestsPerMinute: 10}, Price: price},
		}}
	if diff := cmp.Diff(want, c.Models["pool"]); diff != "" {
		t.Errorf("models.pool (-want +got):\n%s", diff)
	}
	if got := c.Models["pool"].Deployments[1].Name(); got != "b/other" {
		t.Errorf("Name() = %q", got)
	}
	if m := c.Models["single"]; m.Deployments != nil || m.Balance != "" || m.Affinity != "" {
		t.Errorf("a one-backend model changed: %+v", m)
	}
}

func TestValidate_Deployments(t *testing.T) {
	tests := []struct {
		name   string
		models string
		want   string // the whole error; "" means valid
	}{
		{name: "valid", models: `{deployments: [{backend: a}, {backend: b}], balance: cost, affinity: prefix}`},
		{name: "user affinity", models: `{backend: a, affinity: user}`},
		{name: "unknown backend", models: `{deployments: [{backend: a}, {backend: nope}]}`,
			want: `config: models.m.deployments[1].backend: unknown backend "nope"`},
		{name: "missing backend", models: `{deployments: [{backend: a}, {upstream_model: x}]}`,
			want: `config: models.m.deployments[1].backend: required`},
		{name: "mixed types, translated for each", models: `{deployments: [{backend: a}, {backend: c}]}`},
		{name: "duplicate", models: `{deployments: [{backend: a}, {backend: a}]}`,
			want: `config: models.m.deployments[1]: the same backend and upstream_model as deployments[0]`},
		{name: "same backend, other model", models: `{deployments: [{backend: a}, {backend: a, upstream_model: y}]}`},
		{name: "backend and deployments", models: `{backend: b, deployments: [{backend: a}]}`,
			want: `config: models.m.backend: a model with deployments names its backends in deployments: remove backend`},
		{name: "negative fields", models: `{deployments: [{backend: a, weight: -1, priority: -1, max_conns: -2, limits: {tokens_per_minute: -3}}]}`,
			want: "config: models.m.deployments[0].limits.tokens_per_minute: must not be negative\n" +
				"config: models.m.deployments[0].max_conns: must not be negative\n" +
				"config: models.m.deployments[0].priority: must not be negative\n" +
				"config: models.m.deployments[0].weight: must not be negative"},
		{name: "concurrent", models: `{deployments: [{backend: a, limits: {concurrent: 3}}]}`,
			want: "config: models.m.deployments[0].limits.concurrent: a deployment's concurrency is max_conns"},
		{name: "balance", models: `{backend: a, balance: random}`,
			want: `config: models.m.balance: "random" is not one of weighted, least_busy, latency, cost`},
		{name: "affinity", models: `{backend: a, affinity: "header:bad name"}`,
			want: `config: models.m.affinity: "header:bad name" is not one of off, prefix, user, header:<name>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := "backends:\n  a: {type: mock}\n  b: {type: mock}\n  c: {type: openai, base_url: 'http://127.0.0.1:1/v1'}\nmodels:\n  m: " + tt.models + "\n"
			got := ""
			if _, err := Parse([]byte(doc), nil); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLoad_ExampleDeployments uncomments the example's model with deployments.
func TestLoad_ExampleDeployments(t *testing.T) {
	data, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	inBlock := false
	for line := range strings.SplitSeq(string(data), "\n") {
		switch {
		case line == "  # claude-pool:":
			inBlock = true
		case !strings.HasPrefix(line, "  #  "):
			inBlock = false
		}
		if inBlock {
			line = "  " + strings.TrimPrefix(line, "  # ")
		}
		out = append(out, line)
	}
	c, err := Parse([]byte(strings.Join(out, "\n")), nil)
	if err != nil {
		t.Fatalf("Parse(uncommented example): %v", err)
	}
	m := c.Models["claude-pool"]
	if len(m.Deployments) != 2 || m.Balance != "least_busy" || m.Affinity != "prefix" || m.Deployments[1].Priority != 1 {
		t.Fatalf("claude-pool = %+v", m)
	}
}
