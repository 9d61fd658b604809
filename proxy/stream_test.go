package proxy

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agate-gateway/agate/upstream"
)

const streamConfig = `
backends:
  up: {type: openai, base_url: "{{UP}}", retries: {max: 0}}
models:
  gpt: {backend: up, upstream_model: up-model}
`

// TestStream_ClientDisconnect: when the client goes away mid-stream, the upstream request
// is cancelled promptly (the fake upstream sees its request context end).
func TestStream_ClientDisconnect(t *testing.T) {
	cancelled := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		w.Write([]byte("data: " + chunkJSON(`{"role":"assistant","content":""}`, "null") + "\n\n"))
		f.Flush()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-r.Context().Done():
				close(cancelled)
				return
			case <-tick.C:
				// A slow, endless answer.
				w.Write([]byte("data: " + chunkJSON(`{"content":"la "}`, "null") + "\n\n"))
				f.Flush()
			}
		}
	})
	g := startGateway(t, streamConfig, map[string]string{"UP": up.v1()})
	ctx, cancel := context.WithCancel(context.Background())
	client := g.client("")
	s := client.Chat.Completions.NewStreaming(ctx, userParams("gpt", "sing forever"))
	for i := 0; i < 3 && s.Next(); i++ {
	}
	if err := s.Err(); err != nil {
		t.Fatalf("stream error before disconnect: %v", err)
	}
	cancel() // the client hangs up
	s.Close()
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream request was not cancelled after the client disconnected")
	}
	eventually(t, "in-flight gauge back to 0", func() bool { return g.metricValue("gateway_inflight_requests", nil) == 0 })
	eventually(t, "the request counted as 499", func() bool {
		return g.metricValue("gateway_requests_total", map[string]string{"code": "499", "stream": "true"}) == 1
	})
}

// hijackClose sends head, then drops the connection without ending the chunked body.
func hijackClose(head string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		defer conn.Close()
		chunk := func(s string) { buf.WriteString(strings.ToLower(strconvHex(len(s))) + "\r\n" + s + "\r\n") }
		// Connection: close keeps the gateway from pooling the connection it will find dead.
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n")
		chunk(head)
		buf.Flush()
	}
}

func strconvHex(n int) string {
	const digits = "0123456789abcdef"
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 16 {
		b = append([]byte{digits[n%16]}, b...)
	}
	return string(b)
}

// TestStream_UpstreamFailsMidStream: after the first bytes reached the client, an upstream
// failure ends the stream with an in-band error event, which the SDK reports.
func TestStream_UpstreamFailsMidStream(t *testing.T) {
	head := "data: " + chunkJSON(`{"role":"assistant","content":""}`, "null") + "\n\n" +
		"data: " + chunkJSON(`{"content":"Hello"}`, "null") + "\n\n"
	tests := []struct {
		name    string
		handler http.HandlerFunc
		message string // in the in-band error
	}{
		{name: "upstream error event", handler: replaySSE([]byte(head +
			`data: {"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}` + "\n\n")),
			message: "The server had an error"},
		{name: "connection dropped", handler: hijackClose(head), message: "upstream"},
		{name: "clean end before finishing", handler: replaySSE([]byte(head)), message: "ended"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, tt.handler)
			g := startGateway(t, streamConfig, map[string]string{"UP": up.v1()})
			client := g.client("")
			s := client.Chat.Completions.NewStreaming(context.Background(), userParams("gpt", "hi"))
			var content string
			for s.Next() {
				if ch := s.Current(); len(ch.Choices) > 0 {
					content += ch.Choices[0].Delta.Content
				}
			}
			err := s.Err()
			if err == nil {
				t.Fatal("the SDK stream ended without an error")
			}
			if !strings.Contains(err.Error(), tt.message) {
				t.Errorf("error %q does not mention %q", err, tt.message)
			}
			if content != "Hello" {
				t.Errorf("content before the failure = %q, want Hello", content)
			}

			r := g.chat("", `{"model":"gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
			data := sseData(t, r.body)
			if r.status != 200 || len(data) == 0 || !strings.HasPrefix(data[len(data)-1], `{"error":{`) {
				t.Errorf("the raw stream does not end with an in-band error: status %d\n%s", r.status, r.body)
			}
		})
	}
}

// TestStream_GracefulShutdown: Shutdown waits for a stream in flight, which completes.
func TestStream_GracefulShutdown(t *testing.T) {
	release := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		w.Write([]byte("data: " + chunkJSON(`{"role":"assistant","content":"first"}`, "null") + "\n\n"))
		f.Flush()
		<-release
		w.Write(streamSSE("second", "third")[len("data: "+chunkJSON(`{"role":"assistant","content":""}`, "null")+"\n\n"):])
	})
	g := startGatewayWith(t, streamConfig, map[string]string{"UP": up.v1()}, gatewayOptions{noCleanupShutdown: true})
	client := g.client("")
	s := client.Chat.Completions.NewStreaming(context.Background(), userParams("gpt", "hi"))
	if !s.Next() {
		t.Fatalf("no first chunk: %v", s.Err())
	}
	content := s.Current().Choices[0].Delta.Content

	shutdownErr := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		shutdownErr <- g.srv.Shutdown(ctx)
	}()
	// Shutting down: new connections are refused...
	addr := strings.TrimPrefix(g.base, "http://")
	eventually(t, "the listener to close", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	// ...but the stream in flight is waited for.
	select {
	case err := <-shutdownErr:
		t.Fatalf("Shutdown returned (%v) while a stream was in flight", err)
	default:
	}
	close(release)
	for s.Next() {
		if ch := s.Current(); len(ch.Choices) > 0 {
			content += ch.Choices[0].Delta.Content
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("the stream in flight failed: %v", err)
	}
	if content != "firstsecondthird" {
		t.Errorf("content = %q, want the whole answer", content)
	}
	select {
	case err := <-shutdownErr:
		if err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Shutdown did not return after the stream completed")
	}
	if err := <-g.done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// TestStream_EventsReachClientAsProduced: every event is written to the client as soon as
// the upstream sends it, not when the stream ends: the fake upstream holds the rest of its
// answer until the client has read the first content chunk through the gateway, for a
// passthrough and a translated (Anthropic-wire) backend. A gateway that buffered would
// leave the client waiting until its deadline.
func TestStream_EventsReachClientAsProduced(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	sse := func(w http.ResponseWriter, events ...string) {
		for _, e := range events {
			w.Write([]byte(e))
		}
		w.(http.Flusher).Flush()
	}
	openaiUp := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, "data: "+chunkJSON(`{"role":"assistant","content":"first"}`, "null")+"\n\n")
		<-release
		sse(w, "data: "+chunkJSON(`{"content":" second"}`, `"stop"`)+"\n\n", "data: [DONE]\n\n")
	})
	anthropicUp := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n",
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"first\"}}\n\n")
		<-release
		sse(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" second\"}}\n\n",
			"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n",
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	})
	g := startGateway(t, `
backends:
  oai: {type: openai, base_url: "{{OAI}}", retries: {max: 0}}
  anth: {type: anthropic, base_url: "{{ANTH}}", api_key: k, retries: {max: 0}}
models:
  gpt: {backend: oai, upstream_model: up-model}
  claude: {backend: anth, upstream_model: claude}
`, map[string]string{"OAI": openaiUp.v1(), "ANTH": anthropicUp.URL})
	// Registered after the gateway's, so it runs before the gateway shuts down: a failed
	// subtest must not leave the upstream holding its stream open.
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	for _, model := range []string{"gpt", "claude"} {
		t.Run(model, func(t *testing.T) {
			release = make(chan struct{})
			once = sync.Once{}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			defer once.Do(func() { close(release) })
			client := g.client("")
			s := client.Chat.Completions.NewStreaming(ctx, userParams(model, "hi"))
			defer s.Close()
			var text string
			for text == "" && s.Next() {
				if ch := s.Current(); len(ch.Choices) > 0 {
					text = ch.Choices[0].Delta.Content
				}
			}
			if text != "first" {
				t.Fatalf("first content = %q (err %v), want \"first\" before the upstream goes on", text, s.Err())
			}
			once.Do(func() { close(release) })
			for s.Next() {
				if ch := s.Current(); len(ch.Choices) > 0 {
					text += ch.Choices[0].Delta.Content
				}
			}
			if err := s.Err(); err != nil || text != "first second" {
				t.Fatalf("stream = %q, %v; want \"first second\"", text, err)
			}
		})
	}
}

// TestDeepStack: a stream's writer takes the 8 KiB stack (growStreamStack) only for a
// backend reached over plain HTTP, whose send and events were measured within it; TLS,
// and a backend without an HTTP client (mock, local), take 16 KiB.
func TestDeepStack(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    *backend
		deep bool
	}{
		{"plain http", &backend{client: new(upstream.Client), baseURL: "http://127.0.0.1:8080/v1"}, false},
		{"https", &backend{client: new(upstream.Client), baseURL: "https://api.openai.com/v1"}, true},
		{"no client", &backend{baseURL: "http://127.0.0.1:8080"}, true},
		{"no backend", nil, true},
	} {
		if got := deepStack(tc.b); got != tc.deep {
			t.Errorf("%s: deepStack = %v, want %v", tc.name, got, tc.deep)
		}
	}
}
