// Command loadtest is Agate's end-to-end load harness. It starts, on loopback only, a fake
// OpenAI-compatible upstream, a raw byte-copy fasthttp reverse proxy (the floor) and Agate
// (openai passthrough and mock backends), then sends the same bounded number of requests
// through each with a fixed number of concurrent clients, and prints throughput, latency
// percentiles and process CPU per request side by side, with ratios to the raw proxy.
//
//	go run ./cmd/loadtest -n 20000 -c 32 -events 50
//
// Everything runs in one process on 127.0.0.1, so CPU per request includes the client and
// the upstream; their share is the same in every row, which is what makes rows comparable.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/metrics"
	"github.com/agate-gateway/agate/proxy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
)

func main() {
	n := flag.Int("n", 10000, "requests per target and mode (bounded)")
	c := flag.Int("c", 32, "concurrent clients")
	events := flag.Int("events", 50, "content events per streamed response")
	flag.Parse()
	if err := run(*n, *c, *events, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

func run(n, conc, events int, out io.Writer) error {
	up, err := startUpstream(events)
	if err != nil {
		return err
	}
	raw, err := startRaw(up)
	if err != nil {
		return err
	}
	agate, stop, err := startAgate(up)
	if err != nil {
		return err
	}
	defer stop()
	targets := []struct{ name, addr, model string }{
		{"upstream direct", up, "m"},
		{"raw proxy", raw, "m"},
		{"agate passthrough", agate, "passthrough"},
		{"agate mock", agate, "demo"},
	}
	fmt.Fprintf(out, "%d requests per row, %d concurrent clients, %d events per stream, GOMAXPROCS=%d\n\n", n, conc, events, runtime.GOMAXPROCS(0))
	fmt.Fprintf(out, "%-18s %-7s %10s %9s %9s %9s %12s %8s\n", "target", "mode", "req/s", "p50", "p99", "max", "cpu/req", "cpu/raw")
	for _, stream := range []bool{false, true} {
		var rawCPU time.Duration
		for _, t := range targets {
			r, err := load(t.addr, t.model, stream, n, conc)
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			if t.name == "raw proxy" {
				rawCPU = r.cpuPerReq
			}
			ratio := "-"
			if rawCPU > 0 && t.name != "upstream direct" {
				ratio = fmt.Sprintf("%.2fx", float64(r.cpuPerReq)/float64(rawCPU))
			}
			mode := "json"
			if stream {
				mode = "stream"
			}
			fmt.Fprintf(out, "%-18s %-7s %10.0f %9s %9s %9s %12s %8s\n", t.name, mode, r.rps,
				r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), r.max.Round(time.Microsecond),
				r.cpuPerReq.Round(100*time.Nanosecond), ratio)
		}
	}
	return nil
}

type result struct {
	rps           float64
	p50, p99, max time.Duration
	cpuPerReq     time.Duration
}

func load(addr, model string, stream bool, n, conc int) (result, error) {
	body := fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":"the quick brown fox jumps over the lazy dog"}]}`, model, stream)
	client := &fasthttp.Client{MaxConnsPerHost: conc * 2, ReadBufferSize: 16 << 10}
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	cpu0, t0 := cpuTime(), time.Now()
	for w := 0; w < conc; w++ {
		wg.Go(func() {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				req.Reset()
				req.Header.SetMethod("POST")
				req.SetRequestURI("http://" + addr + "/v1/chat/completions")
				req.Header.SetContentType("application/json")
				req.SetBodyString(body)
				start := time.Now()
				if err := client.Do(req, resp); err != nil {
					failed.Store(err)
					return
				}
				if resp.StatusCode() != 200 || (stream && !bytes.HasSuffix(resp.Body(), []byte("data: [DONE]\n\n"))) {
					failed.Store(fmt.Errorf("status %d: %.200s", resp.StatusCode(), resp.Body()))
					return
				}
				lat[i] = time.Since(start)
			}
		})
	}
	wg.Wait()
	elapsed, cpu := time.Since(t0), cpuTime()-cpu0
	if err, ok := failed.Load().(error); ok {
		return result{}, err
	}
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	return result{
		rps: float64(n) / elapsed.Seconds(), p50: lat[n/2], p99: lat[n*99/100], max: lat[n-1],
		cpuPerReq: cpu / time.Duration(n),
	}, nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func listen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

// startUpstream serves OpenAI chat completions: JSON, or a stream of events written and
// flushed one at a time.
func startUpstream(events int) (string, error) {
	ln, err := listen()
	if err != nil {
		return "", err
	}
	head := `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":`
	var evs [][]byte
	evs = append(evs, []byte(head+`{"role":"assistant","content":""},"finish_reason":null}]}`+"\n\n"))
	for i := 0; i < events; i++ {
		evs = append(evs, []byte(fmt.Sprintf(head+`{"content":"w%d "},"finish_reason":null}]}`+"\n\n", i)))
	}
	evs = append(evs, []byte(head+`{},"finish_reason":"stop"}]}`+"\n\n"),
		[]byte(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":50,"total_tokens":59}}`+"\n\n"),
		[]byte("data: [DONE]\n\n"))
	completion := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"the quick brown fox"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}`)
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		if !bytes.Contains(ctx.PostBody(), []byte(`"stream":true`)) {
			ctx.SetContentType("application/json")
			ctx.SetBody(completion)
			return
		}
		ctx.SetContentType("text/event-stream")
		ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
			for _, e := range evs {
				w.Write(e)
				if w.Flush() != nil {
					return
				}
			}
		})
	}}
	go srv.Serve(ln)
	return ln.Addr().String(), nil
}

// startRaw is the floor: a reverse proxy that copies request and response bytes.
func startRaw(upstream string) (string, error) {
	ln, err := listen()
	if err != nil {
		return "", err
	}
	client := &fasthttp.Client{StreamResponseBody: true, ReadBufferSize: 16 << 10, MaxConnsPerHost: 1024}
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
	return ln.Addr().String(), nil
}

func startAgate(upstream string) (string, func(), error) {
	y := fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
log: {level: error}
backends:
  up: {type: openai, base_url: "http://%s/v1"}
  offline: {type: mock}
models:
  passthrough: {backend: up, upstream_model: m}
  demo: {backend: offline}
`, upstream)
	cfg, err := config.Parse([]byte(y), nil)
	if err != nil {
		return "", nil, err
	}
	reg := prometheus.NewRegistry()
	srv, err := proxy.New(proxy.Options{Config: cfg, Metrics: metrics.New(reg), Gatherer: reg,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		return "", nil, err
	}
	ln, err := listen()
	if err != nil {
		return "", nil, err
	}
	go srv.Serve(ln)
	return ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}, nil
}
