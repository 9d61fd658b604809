package proxy

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/agate-gateway/agate/telemetry"
)

// BenchmarkTracing measures what tracing costs: the OpenAI passthrough and the mock
// backend, non-stream and a 200-event stream, with tracing off and on (every request
// sampled, spans batched to an exporter that drops them, so the figure is the SDK's and
// Agate's span work without the network). cpu-ns/op is process CPU per request;
// compare off and on side by side:
//
//	go test -run XXX -bench BenchmarkTracing -benchmem ./proxy/
func BenchmarkTracing(b *testing.B) {
	up := newBenchUpstream(b)
	const yaml = `
backends:
  up: {type: openai, base_url: "http://{{UP}}/v1", retries: {max: 0}}
  offline: {type: mock}
models:
  gpt: {backend: up, upstream_model: up-model}
  demo: {backend: offline}
keys:
  bench: {key: sk-bench, models: ["*"]}
`
	drop := &dropExporter{}
	tracer, err := telemetry.New(context.Background(), telemetry.Options{Traces: true}, telemetry.WithExporter(drop, false))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tracer.Shutdown(context.Background()) })
	gateways := map[string]string{}
	for name, tr := range map[string]*telemetry.Tracer{"off": nil, "on": tracer} {
		g := startGatewayWith(b, yaml, map[string]string{"UP": up.addr}, gatewayOptions{logOut: io.Discard, tracer: tr})
		gateways[name] = strings.TrimPrefix(g.base, "http://")
	}
	words := make([]string, benchEvents)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i)
	}
	bodies := map[string]string{
		"passthrough/nonstream": `{"model":"gpt","messages":[{"role":"user","content":"hi"}]}`,
		"passthrough/stream200": `{"model":"gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		"mock/stream200":        `{"model":"demo","stream":true,"messages":[{"role":"user","content":"` + strings.Join(words, " ") + `"}]}`,
	}
	for _, target := range []string{"passthrough/nonstream", "passthrough/stream200", "mock/stream200"} {
		off := benchResult{}
		for _, mode := range []string{"off", "on"} {
			b.Run(target+"/"+mode, func(b *testing.B) {
				r := runBench(b, gateways[mode], bodies[target], strings.HasSuffix(target, "stream200"))
				if mode == "off" {
					off = r
					return
				}
				if err := tracer.ForceFlush(context.Background()); err != nil {
					b.Fatal(err)
				}
				if drop.spans.Load() == 0 {
					b.Fatal("no span exported")
				}
				b.ReportMetric(r.cpuPerOp-off.cpuPerOp, "tracing-cpu-ns/op")
				b.ReportMetric(r.allocsPerOp-off.allocsPerOp, "tracing-allocs/op")
			})
		}
	}
}

// dropExporter counts and drops spans.
type dropExporter struct{ spans atomic.Int64 }

func (d *dropExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	d.spans.Add(int64(len(spans)))
	return nil
}

func (d *dropExporter) Shutdown(context.Context) error { return nil }
