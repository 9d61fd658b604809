package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// deadlineConn records the read deadlines set on it (set) and the write deadlines
// (writes); reads return at once.
type deadlineConn struct {
	net.Conn
	set, writes []time.Time
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error { c.set = append(c.set, t); return nil }
func (c *deadlineConn) SetWriteDeadline(t time.Time) error {
	c.writes = append(c.writes, t)
	return nil
}
func (c *deadlineConn) SetDeadline(t time.Time) error { c.set = append(c.set, t); return nil }
func (c *deadlineConn) Read(p []byte) (int, error)    { return len(p), nil }

func TestIdleConn_Deadlines(t *testing.T) {
	read := func(c *idleConn) { _, _ = c.Read(make([]byte, 1)) }
	t.Run("the client's deadline holds for the read after it", func(t *testing.T) {
		d := &deadlineConn{}
		c := &idleConn{Conn: d, idle: time.Hour}
		header := time.Now().Add(time.Minute)
		_ = c.SetReadDeadline(header)
		read(c)
		if len(d.set) != 1 || !d.set[0].Equal(header) {
			t.Fatalf("deadlines = %v, want only the client's %v", d.set, header)
		}
	})
	t.Run("the first body read sets the idle deadline, later reads within idle/16 leave it", func(t *testing.T) {
		d := &deadlineConn{}
		c := &idleConn{Conn: d, idle: 16 * time.Hour}
		_ = c.SetReadDeadline(time.Now().Add(time.Minute))
		read(c) // header phase
		before := time.Now()
		for range 100 {
			read(c)
		}
		if len(d.set) != 2 {
			t.Fatalf("%d deadlines set, want 2 (the client's, then one idle deadline for 100 quick reads)", len(d.set))
		}
		if got := d.set[1]; got.Before(before.Add(16*time.Hour)) || got.After(time.Now().Add(16*time.Hour)) {
			t.Errorf("idle deadline %v is not idle after the read", got)
		}
	})
	t.Run("a read more than idle/16 after the last move moves it", func(t *testing.T) {
		d := &deadlineConn{}
		c := &idleConn{Conn: d, idle: 16 * time.Millisecond}
		read(c)
		time.Sleep(5 * time.Millisecond) // well past idle/16 = 1ms
		read(c)
		if len(d.set) != 2 {
			t.Fatalf("%d deadlines set, want 2", len(d.set))
		}
	})
	t.Run("a new client deadline puts the idle deadline out of force", func(t *testing.T) {
		d := &deadlineConn{}
		c := &idleConn{Conn: d, idle: 16 * time.Hour}
		read(c) // idle deadline set
		_ = c.SetReadDeadline(time.Now().Add(time.Minute))
		read(c) // the next request's header read
		read(c) // its body: the idle deadline must be set again, not left to the client's
		if len(d.set) != 3 || !d.set[2].After(time.Now().Add(15*time.Hour)) {
			t.Fatalf("deadlines = %v, want idle, client's, idle", d.set)
		}
	})
}

// TestIdleConn_RequestDeadlines: the deadlines fasthttp sets before each request leave
// the one in force when it is at most slack earlier than asked, and are set when it is
// later, further off, or none.
func TestIdleConn_RequestDeadlines(t *testing.T) {
	at := time.Now()
	tests := []struct {
		name    string
		asked   []time.Duration // each request's deadline, from at
		wantSet []time.Duration // the deadlines that reach the connection
	}{
		{name: "the first is set", asked: []time.Duration{time.Minute}, wantSet: []time.Duration{time.Minute}},
		{name: "later ones within slack are not", asked: []time.Duration{time.Minute, time.Minute + time.Second, time.Minute + 4*time.Second},
			wantSet: []time.Duration{time.Minute}},
		{name: "one past slack is", asked: []time.Duration{time.Minute, time.Minute + 6*time.Second, time.Minute + 7*time.Second},
			wantSet: []time.Duration{time.Minute, time.Minute + 6*time.Second}},
		{name: "an earlier one is, however close", asked: []time.Duration{time.Minute, time.Minute - time.Millisecond},
			wantSet: []time.Duration{time.Minute, time.Minute - time.Millisecond}},
	}
	for _, tt := range tests {
		for _, kind := range []string{"read", "write"} {
			t.Run(kind+": "+tt.name, func(t *testing.T) {
				d := &deadlineConn{}
				c := &idleConn{Conn: d, idle: time.Hour, slack: 5 * time.Second}
				for _, a := range tt.asked {
					if kind == "read" {
						_ = c.SetReadDeadline(at.Add(a))
					} else {
						_ = c.SetWriteDeadline(at.Add(a))
					}
				}
				got := d.set
				if kind == "write" {
					got = d.writes
				}
				var want []time.Time
				for _, w := range tt.wantSet {
					want = append(want, at.Add(w))
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("deadlines set %v, want %v", got, want)
				}
			})
		}
	}
	t.Run("an idle deadline in force is later than the next request's: it is set", func(t *testing.T) {
		d := &deadlineConn{}
		c := &idleConn{Conn: d, idle: time.Hour, slack: 5 * time.Second}
		_ = c.SetReadDeadline(time.Now().Add(time.Minute))
		_, _ = c.Read(make([]byte, 1)) // the header read
		_, _ = c.Read(make([]byte, 1)) // a body read: the idle deadline, an hour off
		_ = c.SetReadDeadline(time.Now().Add(time.Minute))
		if len(d.set) != 3 || d.set[2].After(time.Now().Add(time.Minute)) {
			t.Fatalf("deadlines = %v, want the client's, idle, the client's", d.set)
		}
	})
	t.Run("zero clears, whatever is in force", func(t *testing.T) {
		d := &deadlineConn{}
		c := &idleConn{Conn: d, idle: time.Hour, slack: 5 * time.Second}
		_ = c.SetWriteDeadline(time.Now().Add(time.Minute))
		_ = c.SetWriteDeadline(time.Time{})
		_ = c.SetWriteDeadline(time.Time{})
		if len(d.writes) != 3 || !d.writes[2].IsZero() {
			t.Fatalf("write deadlines = %v, want one, then zero twice", d.writes)
		}
	})
}

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
// on a fresh connection at once, with the backend's own retries off.
func TestUpstream_IdleConnectionClosedIsRetried(t *testing.T) {
	body := completionJSON("up-model", "hello")
	up := newRawUpstream(t, func(_ int, w io.Writer) bool {
		fmt.Fprintf(w, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		return true // closed without saying so: the gateway keeps it in its pool
	})
	g := startGateway(t, streamConfig, map[string]string{"UP": up.url})
	client := g.client("")
	for i := range 3 {
		r, err := client.Chat.Completions.New(context.Background(), userParams("gpt", "hi"))
		if err != nil || r.Choices[0].Message.Content != "hello" {
			t.Fatalf("request %d: %v", i+1, err)
		}
		time.Sleep(20 * time.Millisecond) // the upstream's close reaches the pooled connection
	}
	if n := up.requests.Load(); n != 3 {
		t.Errorf("the upstream answered %d requests, want 3", n)
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

// BenchmarkIdleConnRead is the overhead idleConn adds to each read of a streamed body:
// a clock reading, and now and then a deadline moved.
func BenchmarkIdleConnRead(b *testing.B) {
	c := &idleConn{Conn: &deadlineConn{}, idle: 16 * time.Hour}
	p := make([]byte, 64)
	b.ReportAllocs()
	for b.Loop() {
		_, _ = c.Read(p)
	}
}
