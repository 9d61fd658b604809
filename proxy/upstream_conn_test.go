package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// TestStream_UpstreamSilenceEndsStream: an upstream that stops sending mid-stream for
// longer than timeouts.stream_idle ends the client's stream with an in-band error, after
// the content that came before the silence.
func TestStream_UpstreamSilenceEndsStream(t *testing.T) {
	release := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: " + chunkJSON(`{"role":"assistant","content":"first"}`, "null") + "\n\n"))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	g := startGateway(t, `
backends:
  oai: {type: openai, base_url: "{{UP}}", retries: {max: 0}, timeouts: {stream_idle: 200ms}}
models:
  gpt: {backend: oai, upstream_model: up-model}
`, map[string]string{"UP": up.v1()})
	t.Cleanup(func() { close(release) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client := g.client("")
	s := client.Chat.Completions.NewStreaming(ctx, userParams("gpt", "hi"))
	defer s.Close()
	text := streamedText(s)
	if text != "first" {
		t.Errorf("content = %q, want \"first\" (what came before the silence)", text)
	}
	if s.Err() == nil || ctx.Err() != nil {
		t.Fatalf("stream error = %v (context %v), want the gateway's in-band error for the silent upstream", s.Err(), ctx.Err())
	}
	if msg := s.Err().Error(); !strings.Contains(msg, "timed out") && !strings.Contains(msg, "oai") {
		t.Errorf("stream error %q does not say the upstream of backend oai timed out", msg)
	}
}

// TestUpstream_LargeResponseHead: a response head of several KiB (rate-limit headers,
// cookies) fits the upstream read buffer, streamed or not.
func TestUpstream_LargeResponseHead(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		for i := range 60 {
			w.Header().Set("X-Padding-"+strings.Repeat("p", 2)+string(rune('a'+i%26))+strings.Repeat("q", i%7), strings.Repeat("v", 90))
		}
		if strings.Contains(string(r.Context().Value(bodyKey{}).([]byte)), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("data: " + chunkJSON(`{"role":"assistant","content":"hello"}`, `"stop"`) + "\n\ndata: [DONE]\n\n"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(completionJSON("up-model", "hello"))
	})
	g := startGateway(t, `
backends:
  oai: {type: openai, base_url: "{{UP}}", retries: {max: 0}}
models:
  gpt: {backend: oai, upstream_model: up-model}
`, map[string]string{"UP": up.v1()})
	ctx := context.Background()
	client := g.client("")
	r, err := client.Chat.Completions.New(ctx, userParams("gpt", "hi"))
	if err != nil || r.Choices[0].Message.Content != "hello" {
		t.Fatalf("non-stream: %v, %+v", err, r)
	}
	s := client.Chat.Completions.NewStreaming(ctx, userParams("gpt", "hi"))
	defer s.Close()
	text := streamedText(s)
	if s.Err() != nil || text != "hello" {
		t.Fatalf("stream: %q, %v", text, s.Err())
	}
}

// streamedText reads a chat completion stream to its end and returns its content.
func streamedText(s *ssestream.Stream[openai.ChatCompletionChunk]) string {
	var text string
	for s.Next() {
		if ch := s.Current(); len(ch.Choices) > 0 {
			text += ch.Choices[0].Delta.Content
		}
	}
	return text
}

// rawUpstream is an HTTP/1.1 upstream written by hand, for the connection faults a
// net/http server will not commit: answer(n, w) writes the raw response to the n-th
// request (from 1), and the connection is closed after it when it returns true. It
// counts the requests it read.
type rawUpstream struct {
	url      string
	requests atomic.Int32
}

func newRawUpstream(t *testing.T, answer func(n int, w io.Writer) (closeConn bool)) *rawUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &rawUpstream{url: "http://" + ln.Addr().String() + "/v1"}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					if answer(int(u.requests.Add(1)), c) {
						return
					}
				}
			}()
		}
	}()
	return u
}

// TestUpstream_IdleConnectionClosedIsRetried: a pooled keep-alive connection that the
// upstream closed while it sat idle fails before any answer; the request is sent again
// on a fresh connection at once, with the backend's own retries off. A small body is
// written whole into the closed connection and its read finds the end; a large one
// (over the socket's buffers) fails in its write, as a reset or a broken pipe.
func TestUpstream_IdleConnectionClosedIsRetried(t *testing.T) {
	for _, size := range []int{2, 40 << 10, 400 << 10} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			body := completionJSON("up-model", "hello")
			up := newRawUpstream(t, func(_ int, w io.Writer) bool {
				fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
				return true // closed without saying so: the gateway keeps it in its pool
			})
			g := startGateway(t, streamConfig, map[string]string{"UP": up.url})
			client := g.client("")
			for i := range 3 {
				r, err := client.Chat.Completions.New(context.Background(), userParams("gpt", strings.Repeat("h", size)))
				if err != nil || r.Choices[0].Message.Content != "hello" {
					t.Fatalf("request %d: %v", i+1, err)
				}
				time.Sleep(20 * time.Millisecond) // the upstream's close reaches the pooled connection
			}
			if n := up.requests.Load(); n != 3 {
				t.Errorf("the upstream answered %d requests, want 3", n)
			}
		})
	}
}

// TestUpstream_BodyCutShortIsNotSentAgain: a non-streamed answer whose chunked body ends
// early, at a chunk boundary, is a 502; the upstream had answered, so the request is not
// sent to it again.
func TestUpstream_BodyCutShortIsNotSentAgain(t *testing.T) {
	up := newRawUpstream(t, func(_ int, w io.Writer) bool {
		part := `{"id":"chatcmpl-1","object":"chat.completion",`
		fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", len(part), part)
		return true
	})
	g := startGateway(t, streamConfig, map[string]string{"UP": up.url})
	client := g.client("")
	_, err := client.Chat.Completions.New(context.Background(), userParams("gpt", "hi"))
	if e := sdkError(t, err); e.StatusCode != 502 {
		t.Errorf("status %d, want 502", e.StatusCode)
	}
	time.Sleep(50 * time.Millisecond) // a second send, if any, would have arrived
	if n := up.requests.Load(); n != 1 {
		t.Errorf("the upstream was sent the request %d times, want 1", n)
	}
}
