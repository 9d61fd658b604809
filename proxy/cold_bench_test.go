package proxy

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// BenchmarkProxyCold is one request at a time through each server of BenchmarkProxy with
// the caches emptied before each (64 MiB written, outside the timer): what a request
// costs when it finds the code and memory of the last one evicted, as at 1000 requests a
// second on a machine shared with other processes (scenario a of ../shared/bench). The
// client and the upstream run in the process too and start cold as well. cold-ns/op is
// the median request's wall time (a request that also waited for the scheduler says
// nothing of the work it found cold), agate-ns/op its excess over the raw proxy's,
// measured first. Compare builds with several runs: one run moves by some 10 µs.
//
//	go test -run XXX -bench ProxyCold -benchtime 400x ./proxy/
func BenchmarkProxyCold(b *testing.B) {
	up := newBenchUpstream(b)
	raw := startRawProxy(b, up.addr)
	agate := startBenchGateway(b, up.addr)
	history, err := os.ReadFile("testdata/bench/history.json")
	if err != nil {
		b.Fatal(err)
	}
	bodies := map[string]string{
		"nonstream": `{"model":"%s","messages":[{"role":"user","content":"hi"}]}`,
		"history":   strings.Replace(strings.ReplaceAll(string(history), "%", "%%"), `"model":"fast"`, `"model":"%s"`, 1),
	}
	evict := make([]byte, 64<<20)
	floor := map[string]float64{}
	for _, kind := range []string{"nonstream", "history"} {
		for _, target := range []struct{ name, addr, model string }{
			{"raw", raw, "up-model"}, {"passthrough", agate, "gpt"}, {"anthropic", agate, "claude"},
		} {
			b.Run(kind+"/"+target.name, func(b *testing.B) {
				client := &fasthttp.Client{ReadBufferSize: 16 << 10}
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				defer fasthttp.ReleaseRequest(req)
				defer fasthttp.ReleaseResponse(resp)
				req.Header.SetMethod("POST")
				req.SetRequestURI("http://" + target.addr + "/v1/chat/completions")
				req.Header.Set("Authorization", "Bearer sk-bench")
				req.Header.SetContentType("application/json")
				req.SetBodyString(fmt.Sprintf(bodies[kind], target.model))
				if err := client.Do(req, resp); err != nil || resp.StatusCode() != 200 {
					b.Fatalf("warm-up: %v %d %s", err, resp.StatusCode(), resp.Body())
				}
				took := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for i := range b.N {
					b.StopTimer()
					for j := 0; j < len(evict); j += 64 {
						evict[j] = byte(i)
					}
					b.StartTimer()
					start := time.Now()
					if err := client.Do(req, resp); err != nil {
						b.Fatal(err)
					}
					took = append(took, time.Since(start))
				}
				slices.Sort(took)
				ns := float64(took[len(took)/2].Nanoseconds())
				b.ReportMetric(ns, "cold-ns/op")
				if target.name == "raw" {
					floor[kind] = ns
				} else if f, ok := floor[kind]; ok {
					b.ReportMetric(ns-f, "agate-ns/op")
				}
			})
		}
	}
}
