// Command census is the load client of scripts/bench/census/census.sh and stat.sh: it sends
// the shared bench's small chat request (its smallBody: a system and a user message,
// max_tokens and temperature, about 300 bytes) n times over each of conc keep-alive
// connections, one request at a time on each, and exits non-zero when any answer is not a
// 200. -api responses or messages sends the bench's small request of that API instead (its
// responsesSmall or messagesSmall, scripts/bench/apis.patch: the same system prompt and
// user message; Messages with x-api-key and anthropic-version, as the bench sends them) to
// /v1/responses or /v1/messages. -large-kb N (chat only) sends the bench's scenario d
// request instead: its largeBody, a chat history with tools and parallel tool calls of
// about N KB (10 is the bench's default; the same generator, so the same bytes for the
// same model, N and -stream). With -stream the request is the bench's stream request
// (scenario c's: chat's with "stream": true and "stream_options": {"include_usage": true};
// the Responses and Messages ones with "stream": true, as apis.patch's finishAPIBody);
// each answer is read to its end and must end as the bench requires (apis.patch's
// streamEnd: chat's "data: [DONE]", the Responses API's "event: response.completed", the
// Messages API's "event: message_stop"), and the data lines read are counted. It is a
// module of its own so that the gateway's module never builds it.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
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
		*largeKB < 0 || *largeKB > 100000 || (*largeKB > 0 && *api != "chat") {
		fmt.Fprintln(os.Stderr, "census: -addr is required; -n >= 0, -conc >= 1; -api chat, responses or messages (-large-kb: chat); 0 <= -large-kb <= 100000")
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
	if *stream && *api != "chat" { // apis.patch's finishAPIBody: these APIs have no stream_options
		req["stream"] = true
	}
	body, err := json.Marshal(req)
	if err != nil {
		panic(err)
	}
	if *largeKB > 0 {
		body = largeBody(*model, *stream, *largeKB)
	}
	var bad, events atomic.Int64
	var ttftMu sync.Mutex
	var ttfts []time.Duration
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
			for i := range *n {
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
				start := time.Now()
				err := hc.DoTimeout(req, resp, time.Minute)
				if err == nil && resp.StatusCode() == fasthttp.StatusOK && *stream {
					var n int64
					var ttft time.Duration
					n, ttft, err = readStream(resp.BodyStream(), streamEnd[*api], contentKey[*api], start)
					events.Add(n)
					if i > 0 { // the first stream of a connection waited for its connect too
						ttftMu.Lock()
						ttfts = append(ttfts, ttft)
						ttftMu.Unlock()
					}
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
	if len(ttfts) > 0 {
		slices.Sort(ttfts)
		pct := func(p float64) time.Duration {
			return ttfts[min(len(ttfts)-1, int(p*float64(len(ttfts))))].Round(10 * time.Microsecond)
		}
		fmt.Fprintf(os.Stderr, "census: TTFT p50 %v p90 %v p99 %v max %v (%d streams)\n", pct(.5), pct(.9), pct(.99), ttfts[len(ttfts)-1], len(ttfts))
	}
	if bad.Load() > 0 {
		os.Exit(1)
	}
}

// streamEnd is the line a stream of each client API must end with (apis.patch's streamEnd):
// chat's last data line, the Responses and Messages APIs' last event line.
var streamEnd = map[string]string{
	"chat":      "data: [DONE]",
	"responses": "event: response.completed",
	"messages":  "event: message_stop",
}

// contentKey is the member whose non-empty string value makes a data line of each client
// API carry answer text (the bench's contentLen and streamData): the first such line's
// arrival is the stream's time to first token.
var contentKey = map[string][]byte{
	"chat":      []byte(`"content":"`),
	"responses": []byte(`"delta":"`),
	"messages":  []byte(`"text":"`),
}

// readStream reads an SSE answer to its end and returns how many data lines it held and
// the time from start to the first that carries text (key's value not empty; 0 if none);
// it fails unless its last data line (chat) or event line (the others) is end.
func readStream(r io.Reader, end string, key []byte, start time.Time) (int64, time.Duration, error) {
	var ttft time.Duration
	br := bufio.NewReaderSize(r, 4096)
	var n int64
	last := []byte(nil)
	prefix := []byte(end[:strings.IndexByte(end, ':')+1]) // "data:" or "event:"
	for {
		line, err := br.ReadSlice('\n')
		if bytes.HasPrefix(line, []byte("data:")) {
			n++
			if i := bytes.Index(line, key); ttft == 0 && i >= 0 && i+len(key) < len(line) && line[i+len(key)] != '"' {
				ttft = time.Since(start)
			}
		}
		if bytes.HasPrefix(line, prefix) {
			last = append(last[:0], prefix...)
			last = append(last, ' ')
			last = append(last, bytes.TrimSpace(line[len(prefix):])...)
		}
		if err == io.EOF {
			break
		}
		if err != nil && err != bufio.ErrBufferFull {
			return n, ttft, err
		}
	}
	if string(last) != end {
		return n, ttft, fmt.Errorf("stream did not end with %s (last %q)", end, last)
	}
	return n, ttft, nil
}
