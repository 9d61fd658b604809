package proxy

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
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
