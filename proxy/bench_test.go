package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	goruntime "runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// The benchmarks below measure, side by side in one run, three servers in front of the
// same loopback fasthttp upstream, each for a non-stream request and a 200-event stream:
//
//   - raw: a byte-copy fasthttp reverse proxy written here, the floor;
//   - passthrough: Agate's openai backend;
//   - anthropic: Agate's anthropic backend (translated both ways; non-stream only);
//   - mock: Agate's mock backend (no upstream at all).
//
// "history" is a non-streaming ~4 KB request with tools and a tool-call history (raw and
// passthrough only), the per-byte cost of the passthrough.
//
// The client is a fasthttp client reading whole responses. Client, proxy and upstream
// share the process, so ns/op and allocs/op include all three; the "agate-" metrics
// subtract the raw proxy's figures (measured first) to isolate what Agate adds. cpu-ns/op
// is process CPU time (user+system) per request.
//
//	go test -run XXX -bench . -benchmem ./proxy/

const benchEvents = 200

// benchUpstream is a loopback fasthttp server answering OpenAI chat completions.
type benchUpstream struct {
	addr   string
	stream []byte   // 200 content chunks between a role chunk and finish, usage, [DONE]
	events [][]byte // stream split into events
	json   []byte
	anth   []byte // a recorded Anthropic Messages response (testdata/bench/anthropic-message.json)
}

func newBenchUpstream(b *testing.B) *benchUpstream {
	u := &benchUpstream{json: completionJSON("up-model", "Hello there, this is a short answer.")}
	words := make([]string, benchEvents)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i)
	}
	u.stream = streamSSE(words...)
	u.events = splitEvents(u.stream)
	var err error
	if u.anth, err = os.ReadFile("testdata/bench/anthropic-message.json"); err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	u.addr = ln.Addr().String()
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		if string(ctx.Path()) == "/v1/messages" {
			ctx.SetContentType("application/json")
			ctx.SetBody(u.anth)
			return
		}
		if bytes.Contains(ctx.PostBody(), []byte(`"stream":true`)) {
			// One write and flush per event, as a model streams its tokens.
			ctx.SetContentType("text/event-stream")
			ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
				for _, ev := range u.events {
					w.Write(ev)
					if w.Flush() != nil {
						return
					}
				}
			})
			return
		}
		ctx.SetContentType("application/json")
		ctx.SetBody(u.json)
	}}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Shutdown() })
	return u
}

// startRawProxy is the floor: a fasthttp reverse proxy that forwards the request bytes and
// copies the response body through, flushing after each read for streams.
func startRawProxy(b *testing.B, upstream string) string {
	client := &fasthttp.Client{StreamResponseBody: true, ReadBufferSize: 16 << 10}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		req := fasthttp.AcquireRequest()
		ctx.Request.CopyTo(req)
		req.SetHost(upstream)
		resp := fasthttp.AcquireResponse()
		err := client.Do(req, resp)
		fasthttp.ReleaseRequest(req)
		if err != nil {
			fasthttp.ReleaseResponse(resp)
			ctx.Error(err.Error(), 502)
			return
		}
		ctx.SetStatusCode(resp.StatusCode())
		ctx.Response.Header.SetContentTypeBytes(resp.Header.ContentType())
		if !bytes.HasPrefix(resp.Header.ContentType(), []byte("text/event-stream")) {
			body, _ := io.ReadAll(resp.BodyStream())
			ctx.SetBody(body)
			fasthttp.ReleaseResponse(resp)
			return
		}
		ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
			defer fasthttp.ReleaseResponse(resp)
			buf := make([]byte, 16<<10)
			s := resp.BodyStream()
			for {
				n, err := s.Read(buf)
				if n > 0 {
					w.Write(buf[:n])
					if w.Flush() != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		})
	}}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Shutdown() })
	return ln.Addr().String()
}

// benchResult is one measured configuration, kept to compare later ones with the floor.
type benchResult struct {
	nsPerOp, cpuPerOp, allocsPerOp float64
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// startBenchGateway starts the gateway the benchmarks measure, in front of the upstream
// at upAddr, and returns its address: model gpt is its OpenAI passthrough, claude its
// Anthropic translation, demo its mock backend; key sk-bench may use them all.
func startBenchGateway(b *testing.B, upAddr string) string {
	g := startGatewayWith(b, `
backends:
  up: {type: openai, base_url: "http://{{UP}}/v1", retries: {max: 0}}
  anth: {type: anthropic, base_url: "http://{{UP}}", api_key: test, retries: {max: 0}}
  offline: {type: mock}
models:
  gpt: {backend: up, upstream_model: up-model}
  claude: {backend: anth, upstream_model: claude-up}
  demo: {backend: offline}
keys:
  bench: {key: sk-bench, models: ["*"]}
`, map[string]string{"UP": upAddr}, gatewayOptions{logOut: io.Discard})
	return strings.TrimPrefix(g.base, "http://")
}

func BenchmarkProxy(b *testing.B) {
	up := newBenchUpstream(b)
	raw := startRawProxy(b, up.addr)
	agate := startBenchGateway(b, up.addr)

	words := make([]string, benchEvents)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i)
	}
	echo200 := strings.Join(words, " ")
	history, err := os.ReadFile("testdata/bench/history.json")
	if err != nil {
		b.Fatal(err)
	}
	bodies := map[string]string{
		"nonstream": `{"model":"%s","messages":[{"role":"user","content":"%s"}]}`,
		"stream200": `{"model":"%s","stream":true,"messages":[{"role":"user","content":"%s"}]}`,
		// history is a ~4 KB request with tools and a tool-call history, non-streaming.
		"history": strings.Replace(strings.ReplaceAll(string(history), "%", "%%"), `"model":"fast"`, `"model":"%s"`, 1) + "%.0s",
	}
	floor := map[string]benchResult{}
	for _, target := range []struct{ name, addr, model, prompt string }{
		{"raw", raw, "up-model", "hi"},
		{"passthrough", agate, "gpt", "hi"},
		{"anthropic", agate, "claude", "hi"},
		{"mock", agate, "demo", echo200},
	} {
		for _, kind := range []string{"nonstream", "stream200", "history"} {
			if kind == "history" && target.name == "mock" || kind == "stream200" && target.name == "anthropic" {
				continue
			}
			prompt := target.prompt
			if target.name == "mock" && kind == "nonstream" {
				prompt = "Hello there, this is a short answer."
			}
			body := fmt.Sprintf(bodies[kind], target.model, prompt)
			b.Run(target.name+"/"+kind, func(b *testing.B) {
				r := runBench(b, target.addr, body, kind == "stream200")
				if target.name == "raw" {
					floor[kind] = r
				} else if f, ok := floor[kind]; ok {
					b.ReportMetric(r.cpuPerOp/f.cpuPerOp, "cpu-x-raw")
					if kind == "stream200" {
						b.ReportMetric((r.nsPerOp-f.nsPerOp)/benchEvents, "agate-ns/event")
						b.ReportMetric((r.allocsPerOp-f.allocsPerOp)/benchEvents, "agate-allocs/event")
					} else {
						b.ReportMetric(r.allocsPerOp-f.allocsPerOp, "agate-allocs/op")
					}
				}
			})
		}
	}
}

// measure sends req b.N times with client, reading each whole response into resp, and
// reports the process CPU per request (cpu-ns/op); it returns the wall time, CPU and
// allocations per request, the benchmark timer covering the loop only.
func measure(b *testing.B, client *fasthttp.Client, req *fasthttp.Request, resp *fasthttp.Response) benchResult {
	var ms0, ms1 goruntime.MemStats
	goruntime.ReadMemStats(&ms0)
	cpu0 := cpuTime()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if err := client.Do(req, resp); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	cpu := cpuTime() - cpu0
	goruntime.ReadMemStats(&ms1)
	r := benchResult{
		nsPerOp:     float64(elapsed.Nanoseconds()) / float64(b.N),
		cpuPerOp:    float64(cpu.Nanoseconds()) / float64(b.N),
		allocsPerOp: float64(ms1.Mallocs-ms0.Mallocs) / float64(b.N),
	}
	b.ReportMetric(r.cpuPerOp, "cpu-ns/op")
	return r
}

// runBench posts body b.N times and reads each whole response.
func runBench(b *testing.B, addr, body string, stream bool) benchResult {
	client := &fasthttp.Client{ReadBufferSize: 16 << 10}
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.Header.SetMethod("POST")
	req.SetRequestURI("http://" + addr + "/v1/chat/completions")
	req.Header.Set("Authorization", "Bearer sk-bench")
	req.Header.SetContentType("application/json")
	req.SetBodyString(body)
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)

	// Check once that the answer is what we think we are measuring.
	if err := client.Do(req, resp); err != nil || resp.StatusCode() != 200 {
		b.Fatalf("warm-up: %v %d %s", err, resp.StatusCode(), resp.Body())
	}
	if stream {
		if n := bytes.Count(resp.Body(), []byte("data: ")); n < benchEvents {
			b.Fatalf("stream has %d events:\n%s", n, resp.Body())
		}
	}

	r := measure(b, client, req, resp)
	if stream {
		b.ReportMetric(r.nsPerOp/benchEvents, "ns/event")
		b.ReportMetric(r.allocsPerOp/benchEvents, "allocs/event")
	}
	return r
}
