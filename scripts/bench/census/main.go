// Command census is the load client of scripts/bench/census/census.sh and stat.sh: it sends
// the shared bench's small chat request (its smallBody: a system and a user message,
// max_tokens and temperature, about 300 bytes) n times over each of conc keep-alive
// connections, one request at a time on each, and exits non-zero when any answer is not a
// 200. -api responses or messages sends the bench's small request of that API instead (its
// responsesSmall or messagesSmall, scripts/bench/apis.patch: the same system prompt and
// user message; Messages with x-api-key and anthropic-version, as the bench sends them) to
// /v1/responses or /v1/messages; not with -stream. -large-kb N (chat only) sends the bench's
// scenario d request instead: its largeBody, a chat history with tools and parallel tool
// calls of about N KB (10 is the bench's default; the same generator, so the same bytes
// for the same model, N and -stream). With -stream the request is the bench's stream request (scenario c's: "stream":
// true and "stream_options": {"include_usage": true}); each answer is read to its end and
// must end with "data: [DONE]", and the events read are counted. It is a module of its own
// so that the gateway's module never builds it.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

func main() {
	addr := flag.String("addr", "", "the target's host:port")
	path := flag.String("path", "", "the request's path (default: the API's)")
	api := flag.String("api", "chat", "the client API: chat, responses or messages")
	model := flag.String("model", "oai-bench", "the request's model")
	key := flag.String("key", "sk-bench", "the bearer key sent")
	n := flag.Int("n", 100, "requests per connection")
	conc := flag.Int("conc", 1, "connections")
	stream := flag.Bool("stream", false, "send the bench's stream request and read each SSE answer to its end")
	largeKB := flag.Int("large-kb", 0, "send the bench's scenario d request of about this many KB (0: the small request)")
	flag.Parse()
	if *addr == "" || *n < 0 || *conc < 1 || (*api != "chat" && *api != "responses" && *api != "messages") ||
		(*stream && *api != "chat") || *largeKB < 0 || *largeKB > 100000 || (*largeKB > 0 && *api != "chat") {
		fmt.Fprintln(os.Stderr, "census: -addr is required; -n >= 0, -conc >= 1; -api chat, responses or messages (-stream, -large-kb: chat); 0 <= -large-kb <= 100000")
		os.Exit(2)
	}
	if *path == "" {
		*path = map[string]string{"chat": "/v1/chat/completions", "responses": "/v1/responses", "messages": "/v1/messages"}[*api]
	}
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	req := map[string]any{ // the bench's smallBody; encoding/json sorts the members, as the bench's
		"model": *model,
		"messages": []message{
			{"system", "You are a helpful assistant. Answer concisely and accurately."},
			{"user", "Write a short paragraph about the history of the bicycle."},
		},
		"max_tokens":  1024,
		"temperature": 0.7,
	}
	if *stream { // the bench's finishBody for a stream
		req["stream"] = true
		req["stream_options"] = map[string]any{"include_usage": true}
	}
	const system = "You are a helpful assistant. Answer concisely and accurately."
	const user = "Write a short paragraph about the history of the bicycle."
	switch *api { // apis.patch's responsesSmall and messagesSmall
	case "responses":
		req = map[string]any{"model": *model, "instructions": system,
			"input":             []map[string]any{{"role": "user", "content": user}},
			"max_output_tokens": 1024, "temperature": 0.7, "store": false}
	case "messages":
		req = map[string]any{"model": *model, "max_tokens": 1024, "system": system,
			"messages": []message{{"user", user}}, "temperature": 0.7}
	}
	body, err := json.Marshal(req)
	if err != nil {
		panic(err)
	}
	if *largeKB > 0 {
		body = largeBody(*model, *stream, *largeKB)
	}
	var bad, events atomic.Int64
	var wg sync.WaitGroup
	t0 := time.Now()
	for range *conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hc := &fasthttp.HostClient{Addr: *addr, MaxConns: 1, StreamResponseBody: *stream}
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			for range *n {
				req.Reset()
				req.SetRequestURI("http://" + *addr + *path)
				req.Header.SetMethod(fasthttp.MethodPost)
				req.Header.SetContentType("application/json")
				if *api == "messages" {
					req.Header.Set("x-api-key", *key)
					req.Header.Set("anthropic-version", "2023-06-01")
				} else {
					req.Header.Set("Authorization", "Bearer "+*key)
				}
				req.SetBody(body)
				err := hc.DoTimeout(req, resp, time.Minute)
				if err == nil && resp.StatusCode() == fasthttp.StatusOK && *stream {
					var n int64
					n, err = readStream(resp.BodyStream())
					events.Add(n)
					resp.CloseBodyStream()
				}
				if err != nil || resp.StatusCode() != fasthttp.StatusOK {
					if bad.Add(1) <= 3 {
						fmt.Fprintf(os.Stderr, "census: %v, status %d\n", err, resp.StatusCode())
					}
				}
			}
		}()
	}
	wg.Wait()
	fmt.Fprintf(os.Stderr, "census: %d requests, %d bad, %d events, %v\n", *n**conc, bad.Load(), events.Load(), time.Since(t0).Round(time.Millisecond))
	if bad.Load() > 0 {
		os.Exit(1)
	}
}

// readStream reads an SSE answer to its end and returns how many data lines it held; it
// fails unless the last one is "data: [DONE]".
func readStream(r io.Reader) (int64, error) {
	br := bufio.NewReaderSize(r, 4096)
	var n int64
	last := []byte(nil)
	for {
		line, err := br.ReadSlice('\n')
		if bytes.HasPrefix(line, []byte("data:")) {
			n++
			last = append(last[:0], bytes.TrimSpace(line[5:])...)
		}
		if err == io.EOF {
			break
		}
		if err != nil && err != bufio.ErrBufferFull {
			return n, err
		}
	}
	if string(last) != "[DONE]" {
		return n, fmt.Errorf("stream did not end with data: [DONE] (last %q)", last)
	}
	return n, nil
}
