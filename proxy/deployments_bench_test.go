package proxy

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
)

// BenchmarkDeployments is BenchmarkProxy's passthrough over a model with two deployments,
// without and with prefix affinity (in memory), against the one-backend model gpt:
// agate-allocs/op and cpu-x-one are what choosing a deployment adds to a request.
func BenchmarkDeployments(b *testing.B) {
	up := newBenchUpstream(b)
	g := startGatewayWith(b, `
backends:
  up: {type: openai, base_url: "http://{{UP}}/v1", retries: {max: 0}}
  up2: {type: openai, base_url: "http://{{UP}}/v1", retries: {max: 0}}
models:
  gpt: {backend: up, upstream_model: up-model}
  pool: {deployments: [{backend: up, upstream_model: up-model}, {backend: up2, upstream_model: up-model}]}
  affine: {deployments: [{backend: up, upstream_model: up-model}, {backend: up2, upstream_model: up-model}], affinity: prefix}
keys:
  bench: {key: sk-bench, models: ["*"]}
`, map[string]string{"UP": up.addr}, gatewayOptions{logOut: io.Discard})
	addr := strings.TrimPrefix(g.base, "http://")
	history, err := os.ReadFile("testdata/bench/history.json")
	if err != nil {
		b.Fatal(err)
	}
	for _, kind := range []string{"nonstream", "history"} {
		var one benchResult
		for _, model := range []string{"gpt", "pool", "affine"} {
			body := fmt.Sprintf(`{"model":"%s","messages":[{"role":"user","content":"hi"}]}`, model)
			if kind == "history" {
				body = strings.Replace(string(history), `"model":"fast"`, `"model":"`+model+`"`, 1)
			}
			b.Run(kind+"/"+model, func(b *testing.B) {
				r := runBench(b, addr, body, false)
				if model == "gpt" {
					one = r
					return
				}
				b.ReportMetric(r.allocsPerOp-one.allocsPerOp, "agate-allocs/op")
				b.ReportMetric(r.cpuPerOp/one.cpuPerOp, "cpu-x-one")
			})
		}
	}
}
