package proxy

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/config"
)

// anthropicMessage is a whole Messages API answer, for fake Anthropic upstreams.
const anthropicMessage = `{"model":"claude-x","id":"msg_01","type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}`

// TestMessages_BetasAllowed: a client's anthropic-beta names reach an Anthropic upstream
// only as far as the backend's allowed_betas go (by default a list of betas that change no
// price: context-1m is not on it); the others are dropped and counted by backend, on
// /v1/messages and count_tokens, and a fallback backend applies its own list.
func TestMessages_BetasAllowed(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	const clientBetas = "claude-code-20250219, context-1m-2025-08-07,interleaved-thinking-2025-05-14,,fast-mode-2026-02-01"
	tests := []struct {
		name        string
		allowed     string // the backend's allowed_betas member, "" for none
		header      string // the client's anthropic-beta
		path        string
		wantBeta    string // what the upstream got; "" means no header
		wantDropped float64
	}{
		{name: "default list", header: clientBetas, path: "/v1/messages",
			wantBeta: "claude-code-20250219,interleaved-thinking-2025-05-14", wantDropped: 2},
		{name: "default list, count_tokens", header: clientBetas, path: "/v1/messages/count_tokens",
			wantBeta: "claude-code-20250219,interleaved-thinking-2025-05-14", wantDropped: 2},
		{name: "operator allows context-1m", allowed: ", allowed_betas: [context-1m-2025-08-07]", header: clientBetas, path: "/v1/messages",
			wantBeta: "context-1m-2025-08-07", wantDropped: 3},
		{name: "none allowed", allowed: ", allowed_betas: []", header: clientBetas, path: "/v1/messages", wantDropped: 4},
		{name: "all allowed", allowed: `, allowed_betas: ["*"]`, header: clientBetas, path: "/v1/messages",
			wantBeta: "claude-code-20250219,context-1m-2025-08-07,interleaved-thinking-2025-05-14,fast-mode-2026-02-01"},
		{name: "only premium betas", header: "context-1m-2025-08-07", path: "/v1/messages", wantDropped: 1},
		{name: "no header", path: "/v1/messages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			answer := anthropicMessage
			if strings.HasSuffix(tt.path, "count_tokens") {
				answer = `{"input_tokens":3}`
			}
			up := newUpstream(t, replayJSON(200, []byte(answer)))
			g := startGateway(t, `
backends:
  claude: {type: anthropic, base_url: "{{URL}}", api_key: upstream-secret{{ALLOWED}}}
models:
  m-claude: {backend: claude, upstream_model: claude-x}
keys:
  alice: {key: sk-alice, models: ["*"]}
`, map[string]string{"URL": up.Server.URL, "ALLOWED": tt.allowed})
			var headers []string
			if tt.header != "" {
				headers = []string{"anthropic-beta", tt.header}
			}
			r := g.do("POST", tt.path, "sk-alice", []byte(`{"model":"m-claude","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`), headers...)
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			calls := up.calls()
			if len(calls) != 1 {
				t.Fatalf("%d upstream calls, want 1", len(calls))
			}
			if got := calls[0].Header.Values("Anthropic-Beta"); !cmp.Equal(got, nonEmpty(tt.wantBeta)) {
				t.Errorf("upstream anthropic-beta = %q, want %q", got, nonEmpty(tt.wantBeta))
			}
			if got := g.metricValue("gateway_anthropic_betas_dropped_total", map[string]string{"backend": "claude"}); got != tt.wantDropped {
				t.Errorf("gateway_anthropic_betas_dropped_total{backend=claude} = %v, want %v", got, tt.wantDropped)
			}
		})
	}

	t.Run("a fallback backend applies its own list", func(t *testing.T) {
		down := newUpstream(t, replayJSON(500, []byte(`{"type":"error","error":{"type":"api_error","message":"down"}}`)))
		up := newUpstream(t, replayJSON(200, []byte(anthropicMessage)))
		g := startGateway(t, `
backends:
  first: {type: anthropic, base_url: "{{DOWN}}", api_key: k, retries: {max: 0}}
  second: {type: anthropic, base_url: "{{UP}}", api_key: k, allowed_betas: [context-1m-2025-08-07]}
models:
  m-first: {backend: first, upstream_model: claude-x, fallbacks: [m-second]}
  m-second: {backend: second, upstream_model: claude-x}
keys:
  alice: {key: sk-alice, models: ["*"]}
`, map[string]string{"DOWN": down.Server.URL, "UP": up.Server.URL})
		r := g.do("POST", "/v1/messages", "sk-alice", []byte(`{"model":"m-first","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`),
			"anthropic-beta", clientBetas)
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		got := []string{down.calls()[0].Header.Get("Anthropic-Beta"), up.calls()[0].Header.Get("Anthropic-Beta")}
		if diff := cmp.Diff([]string{"claude-code-20250219,interleaved-thinking-2025-05-14", "context-1m-2025-08-07"}, got); diff != "" {
			t.Errorf("anthropic-beta of each backend (-want +got):\n%s", diff)
		}
		for backend, want := range map[string]float64{"first": 2, "second": 3} {
			if got := g.metricValue("gateway_anthropic_betas_dropped_total", map[string]string{"backend": backend}); got != want {
				t.Errorf("dropped{backend=%s} = %v, want %v", backend, got, want)
			}
		}
	})
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

func TestFilterBetas(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	def := betaPolicy{allowed: config.DefaultAnthropicBetas()}
	tests := []struct {
		name        string
		policy      betaPolicy
		values      []string
		want        string
		wantDropped int
	}{
		{name: "one allowed", policy: def, values: []string{"prompt-caching-2024-07-31"}, want: "prompt-caching-2024-07-31"},
		{name: "spaces and empty names", policy: def, values: []string{" claude-code-20250219 ,\t, ,effort-2025-11-24"},
			want: "claude-code-20250219,effort-2025-11-24"},
		{name: "several header lines", policy: def, values: []string{"context-1m-2025-08-07", "pdfs-2024-09-25"},
			want: "pdfs-2024-09-25", wantDropped: 1},
		{name: "case matters", policy: def, values: []string{"PDFS-2024-09-25"}, wantDropped: 1},
		{name: "a prefix is not a name", policy: def, values: []string{"pdfs-2024-09-25x,pdfs"}, wantDropped: 2},
		{name: "all", policy: betaPolicy{all: true}, values: []string{"a, b"}, want: "a,b"},
		{name: "none", policy: betaPolicy{allowed: []string{}}, values: []string{"pdfs-2024-09-25"}, wantDropped: 1},
		{name: "empty", policy: def, values: []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var values [][]byte
			for _, v := range tt.values {
				values = append(values, []byte(v))
			}
			got, dropped := tt.policy.filterBetas(values)
			if got != tt.want || dropped != tt.wantDropped {
				t.Errorf("filterBetas = %q, %d; want %q, %d", got, dropped, tt.want, tt.wantDropped)
			}
		})
	}
}

// FuzzFilterBetas: whatever the header holds, only allowed names go, each a name of the
// header without commas or surrounding space, and every name is either kept or counted.
func FuzzFilterBetas(f *testing.F) {
	for _, s := range []string{
		"claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,mid-conversation-tool-changes-2026-07-01,thinking-token-count-2026-05-13,advanced-tool-use-2025-11-20,effort-2025-11-24",
		"context-1m-2025-08-07", " , ,", "pdfs-2024-09-25,\tcontext-1m-2025-08-07 ", "a\x00,b\r\n",
	} {
		f.Add(s)
	}
	p := newBetaPolicy(config.Backend{Type: "anthropic"})
	f.Fuzz(func(t *testing.T, header string) {
		kept, dropped := p.filterBetas([][]byte{[]byte(header)})
		names := 0
		for _, n := range strings.Split(header, ",") {
			if strings.Trim(n, " \t") != "" {
				names++
			}
		}
		var got []string
		if kept != "" {
			got = strings.Split(kept, ",")
		}
		if len(got)+dropped != names {
			t.Fatalf("%q: kept %q and dropped %d of %d names", header, kept, dropped, names)
		}
		for _, n := range got {
			if !slices.Contains(config.DefaultAnthropicBetas(), n) {
				t.Fatalf("%q: forwarded %q, which is not allowed", header, n)
			}
		}
	})
}
