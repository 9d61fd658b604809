package proxy

import (
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/translate"
)

// BenchmarkLimits_AdmitFinish is what limits add to an admitted request in memory mode:
// building the limiter request, Admit, the x-ratelimit-* headers, and Finish with the
// usage. The key has every limit and a token budget; the model has limits too.
//
//	go test -run XXX -bench Limits -benchmem ./proxy/
func BenchmarkLimits_AdmitFinish(b *testing.B) {
	cfg := parseConfig(b, `
backends: {offline: {type: mock}}
models: {demo: {backend: offline, limits: {requests_per_minute: 1000000000000000, tokens_per_minute: 1000000000000000}}}
keys:
  alice: {key: alice-key, models: ["*"], limits: {requests_per_minute: 1000000000000000, tokens_per_minute: 1000000000000000, concurrent: 1000}}
state: {type: memory}
`, nil)
	g := startGatewayConfig(b, cfg, gatewayOptions{})
	rt := g.srv.runtime()
	key, err := rt.authenticate([]byte("Bearer alice-key"))
	if err != nil {
		b.Fatal(err)
	}
	route, err := rt.resolve("demo")
	if err != nil {
		b.Fatal(err)
	}
	c := &requestRun{s: g.srv, rt: rt, key: key, route: route, start: time.Now(), req: &translate.Request{Model: "demo"}}
	c.call = &modelCall{rt: rt, route: route, key: key, metrics: g.srv.metrics}
	c.call.Usage.PromptTokens, c.call.Usage.CompletionTokens = 90, 10
	var ctx fasthttp.RequestCtx
	b.ReportAllocs()
	for b.Loop() {
		ctx.Response.Header.Reset()
		if !c.admit(&ctx) {
			b.Fatalf("refused: %s", ctx.Response.Body())
		}
		c.endLimits()
	}
}
