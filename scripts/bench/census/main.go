// Command census is the load client of scripts/bench/census/census.sh and stat.sh: it sends
// the shared bench's small chat request (its smallBody: a system and a user message,
// max_tokens and temperature, about 300 bytes) n times over each of conc keep-alive
// connections, one request at a time on each, and exits non-zero when any answer is not a
// 200. It is a module of its own so that the gateway's module never builds it.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

func main() {
	addr := flag.String("addr", "", "the target's host:port")
	path := flag.String("path", "/v1/chat/completions", "the request's path")
	model := flag.String("model", "oai-bench", "the request's model")
	key := flag.String("key", "sk-bench", "the bearer key sent")
	n := flag.Int("n", 100, "requests per connection")
	conc := flag.Int("conc", 1, "connections")
	flag.Parse()
	if *addr == "" || *n < 0 || *conc < 1 {
		fmt.Fprintln(os.Stderr, "census: -addr is required; -n >= 0, -conc >= 1")
		os.Exit(2)
	}
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	body, err := json.Marshal(map[string]any{ // the bench's smallBody, its members in the same order
		"model": *model,
		"messages": []message{
			{"system", "You are a helpful assistant. Answer concisely and accurately."},
			{"user", "Write a short paragraph about the history of the bicycle."},
		},
		"max_tokens":  1024,
		"temperature": 0.7,
	})
	if err != nil {
		panic(err)
	}
	var bad atomic.Int64
	var wg sync.WaitGroup
	t0 := time.Now()
	for range *conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hc := &fasthttp.HostClient{Addr: *addr, MaxConns: 1}
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			for range *n {
				req.Reset()
				req.SetRequestURI("http://" + *addr + *path)
				req.Header.SetMethod(fasthttp.MethodPost)
				req.Header.SetContentType("application/json")
				req.Header.Set("Authorization", "Bearer "+*key)
				req.SetBody(body)
				if err := hc.DoTimeout(req, resp, time.Minute); err != nil || resp.StatusCode() != fasthttp.StatusOK {
					if bad.Add(1) <= 3 {
						fmt.Fprintf(os.Stderr, "census: %v, status %d\n", err, resp.StatusCode())
					}
				}
			}
		}()
	}
	wg.Wait()
	fmt.Fprintf(os.Stderr, "census: %d requests, %d bad, %v\n", *n**conc, bad.Load(), time.Since(t0).Round(time.Millisecond))
	if bad.Load() > 0 {
		os.Exit(1)
	}
}
