package proxy

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// BenchmarkResponseCacheHit: a request answered from the memory response cache through
// the whole gateway (chat completions, whole and streamed with 200 text events), beside
// the same request to the upstream with the cache skipped: what a hit costs and saves.
func BenchmarkResponseCacheHit(b *testing.B) {
	up := newBenchUpstream(b)
	g := startGatewayWith(b, `
backends:
  up: {type: openai, base_url: "http://{{UP}}/v1", retries: {max: 0}}
models:
  gpt: {backend: up, upstream_model: up-model, cache: {responses: {when: always}}}
keys:
  bench: {key: sk-bench, models: ["*"]}
`, map[string]string{"UP": up.addr}, gatewayOptions{logOut: io.Discard})
	addr := strings.TrimPrefix(g.base, "http://")
	words := make([]string, benchEvents)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i)
	}
	for _, kind := range []struct {
		name, body string
		stream     bool
	}{
		{"nonstream", `{"model":"gpt","messages":[{"role":"user","content":"hi"}]}`, false},
		{"stream200", `{"model":"gpt","stream":true,"messages":[{"role":"user","content":"` + strings.Join(words, " ") + `"}]}`, true},
	} {
		b.Run("hit/"+kind.name, func(b *testing.B) {
			runBench(b, addr, kind.body, kind.stream)
			if testutil.ToFloat64(g.srv.metrics.ResponseCache.Results.WithLabelValues(cacheHit)) == 0 {
				b.Fatal("no hits")
			}
		})
	}
}
