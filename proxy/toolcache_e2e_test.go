package proxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/agate-gateway/agate/tools"
)

// TestToolLoop_CacheScope: two keys make the same read-only tool call through the server
// (the mock model calls the tool the prompt names). With cache scope key, the default, the
// second key's call runs the tool again instead of reusing the first key's result; with
// scope global it is served from the cache.
func TestToolLoop_CacheScope(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	tests := []struct {
		name     string
		cache    string
		wantRuns int64
	}{
		{name: "default scope is per key", cache: "{}", wantRuns: 2},
		{name: "key", cache: "{scope: key}", wantRuns: 2},
		{name: "global", cache: "{scope: global}", wantRuns: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var runs atomic.Int64
			hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				runs.Add(1)
				io.WriteString(w, "sunny")
			}))
			defer hook.Close()
			cfg := parseConfig(t, `
backends: {offline: {type: mock}}
models: {demo: {backend: offline}}
keys:
  alice: {key: alice-key, models: ["*"], tools: [weather]}
  bob: {key: bob-key, models: ["*"], tools: [weather]}
tools:
  weather: {type: http, url: "{{URL}}", read_only: true}
cache: {{CACHE}}
`, map[string]string{"URL": hook.URL, "CACHE": tt.cache})
			reg, err := tools.New(context.Background(), ToolSources(cfg.Tools), ToolCache(cfg.Cache), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer reg.Close()
			g := startGatewayConfig(t, cfg, gatewayOptions{tools: reg})
			for _, key := range []string{"alice-key", "bob-key", "alice-key"} {
				c := g.client(key)
				resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
					Model:    "demo",
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("ask weather")},
				})
				if err != nil {
					t.Fatalf("%s: %v", key, err)
				}
				if got := resp.Choices[0].Message.Content; got != "Tool results: sunny" {
					t.Errorf("%s: content = %q", key, got)
				}
			}
			if got := runs.Load(); got != tt.wantRuns {
				t.Errorf("the tool ran %d times for alice, bob, alice; want %d", got, tt.wantRuns)
			}
		})
	}
}
