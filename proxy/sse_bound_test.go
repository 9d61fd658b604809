package proxy

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/internal/sse"
)

// TestStream_UpstreamEventTooLarge: an upstream event past the SSE parser's bound (here
// a data line that never ends) ends the client's stream with an in-band upstream error
// instead of being buffered without limit.
func TestStream_UpstreamEventTooLarge(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	head := "data: " + chunkJSON(`{"role":"assistant","content":""}`, "null") + "\n\n" +
		"data: " + chunkJSON(`{"content":"Hello"}`, "null") + "\n\n"
	line := []byte("data: " + strings.Repeat("x", 64<<10))
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.Write([]byte(head))
		w.(http.Flusher).Flush()
		for sent := 0; sent <= 2*sse.DefaultMaxEventBytes; sent += len(line) {
			if _, err := w.Write(line); err != nil {
				return // the gateway gave up: the point of the test
			}
			line = line[6:]
		}
	})
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
	if !strings.Contains(err.Error(), "sent an event over") {
		t.Errorf("error %q does not name the size bound", err)
	}
	if content != "Hello" {
		t.Errorf("content before the failure = %q, want Hello", content)
	}
}
