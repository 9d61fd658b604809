package upstream

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/anthropic"
	"github.com/agate-gateway/agate/translate/gemini"
	"github.com/agate-gateway/agate/translate/openai"
)

// provider returns the provider of a backend type the tests use.
func provider(typ string) translate.Provider {
	switch typ {
	case "anthropic":
		return anthropic.New()
	case "gemini":
		return gemini.New()
	}
	return openai.New()
}

// TestClient_NewRequest: the upstream request is the POST of the body to the base URL's
// path followed by the provider's, the queries of both kept, with the provider's headers,
// then the request's own, then backends.<name>.headers, each later one overriding an
// earlier one of the same name whatever its case. The connections go to the base URL's
// host, at its port or the scheme's (wantAddr), over TLS for https.
func TestClient_NewRequest(t *testing.T) {
	tests := []struct {
		name, typ, baseURL, path string
		cfgHeaders               map[string]string
		headers                  []translate.Header
		wantURI, wantAddr        string
		wantHeaders              map[string]string
	}{
		{name: "openai with a version path", typ: "openai", baseURL: "http://127.0.0.1:9/v1/", path: "/chat/completions",
			wantURI: "http://127.0.0.1:9/v1/chat/completions", wantAddr: "127.0.0.1:9",
			wantHeaders: map[string]string{"Authorization": "Bearer sk-up", "Accept-Encoding": "identity", "Content-Type": "application/json"}},
		{name: "anthropic at the root, a request header overriding the provider's", typ: "anthropic", baseURL: "https://api.anthropic.com", path: "/v1/messages",
			headers: []translate.Header{{Name: "anthropic-version", Value: "2099-01-01"}, {Name: "anthropic-beta", Value: "x"}},
			wantURI: "https://api.anthropic.com/v1/messages", wantAddr: "api.anthropic.com:443",
			wantHeaders: map[string]string{"X-Api-Key": "sk-up", "Anthropic-Version": "2099-01-01", "Anthropic-Beta": "x"}},
		{name: "gemini: an escaped model and the path's query", typ: "gemini", baseURL: "https://generativelanguage.googleapis.com", path: "/v1beta/models/a%2Fb:streamGenerateContent?alt=sse",
			wantURI: "https://generativelanguage.googleapis.com/v1beta/models/a%2Fb:streamGenerateContent?alt=sse", wantAddr: "generativelanguage.googleapis.com:443"},
		{name: "a base URL with a query keeps it", typ: "openai", baseURL: "https://x.example/openai?api-version=2024-10-21", path: "/chat/completions",
			wantURI: "https://x.example/openai/chat/completions?api-version=2024-10-21", wantAddr: "x.example:443"},
		{name: "both queries", typ: "gemini", baseURL: "https://x.example?tenant=a", path: "/v1beta/models/m:streamGenerateContent?alt=sse",
			wantURI: "https://x.example/v1beta/models/m:streamGenerateContent?tenant=a&alt=sse", wantAddr: "x.example:443"},
		{name: "configured headers come last and override, in any case", typ: "openai", baseURL: "http://h:1/v1", path: "/chat/completions",
			cfgHeaders: map[string]string{"authorization": "Bearer from-config", "x-team": "blue", "accept-encoding": "gzip"},
			headers:    []translate.Header{{Name: "X-Team", Value: "red"}},
			wantURI:    "http://h:1/v1/chat/completions", wantAddr: "h:1",
			wantHeaders: map[string]string{"Authorization": "Bearer from-config", "X-Team": "blue", "Accept-Encoding": "gzip"}},
		{name: "http without a port, IPv6", typ: "openai", baseURL: "http://[::1]/v1", path: "/chat/completions",
			wantURI: "http://[::1]/v1/chat/completions", wantAddr: "[::1]:80"},
		{name: "IPv6 with a port, upper-case scheme", typ: "openai", baseURL: "HTTPS://[::1]:8443/v1", path: "/chat/completions",
			wantURI: "https://[::1]:8443/v1/chat/completions", wantAddr: "[::1]:8443"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := New(Backend{Name: "up", BaseURL: tt.baseURL, APIKey: "sk-up", Headers: tt.cfgHeaders}, provider(tt.typ))
			if err != nil {
				t.Fatal(err)
			}
			if b.hc.Addr != tt.wantAddr || b.hc.IsTLS != strings.HasPrefix(tt.wantURI, "https:") {
				t.Errorf("client for %s, TLS %v; want %s for %s", b.hc.Addr, b.hc.IsTLS, tt.wantAddr, tt.wantURI)
			}
			req := fasthttp.AcquireRequest()
			defer fasthttp.ReleaseRequest(req)
			for range 2 { // a recycled request comes out the same
				req.Reset()
				b.newRequest(req, tt.path, tt.headers, []byte(`{"a":1}`))
			}
			if got := string(req.URI().FullURI()); got != tt.wantURI {
				t.Errorf("URI = %s, want %s", got, tt.wantURI)
			}
			if m := string(req.Header.Method()); m != "POST" {
				t.Errorf("method %s", m)
			}
			if got := string(req.Body()); got != `{"a":1}` {
				t.Errorf("body %s", got)
			}
			for k, want := range tt.wantHeaders {
				if got := req.Header.Peek(k); string(got) != want {
					t.Errorf("header %s = %q, want %q", k, got, want)
				}
			}
			counts := map[string]int{}
			req.Header.VisitAll(func(k, _ []byte) { counts[string(k)]++ })
			for k, n := range counts {
				if n > 1 {
					t.Errorf("header %s sent %d times", k, n)
				}
			}
		})
	}
}

// BenchmarkClient_NewRequest builds an Anthropic upstream request with the headers a
// traced request adds, in a recycled request, as Send does.
func BenchmarkClient_NewRequest(b *testing.B) {
	be, err := New(Backend{Name: "up", BaseURL: "http://127.0.0.1:40123", APIKey: "sk-up", Headers: map[string]string{"x-team": "blue"}}, anthropic.New())
	if err != nil {
		b.Fatal(err)
	}
	headers := []translate.Header{{Name: "traceparent", Value: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}
	body := []byte(`{"model":"claude","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`)
	req := fasthttp.AcquireRequest()
	b.ReportAllocs()
	for b.Loop() {
		req.Reset()
		be.newRequest(req, "/v1/messages", headers, body)
		_ = req.URI().RequestURI() // what the client reads to write the request line
	}
}

// TestClient_Send: a 2xx answer is an open Exchange, read whole or streamed; any other
// status is the provider's error with the answer's Retry-After (529 retryable whatever
// the provider says); an upstream that cannot be reached is a retryable 502. Header names
// are found in any case (the client keeps them as they came).
func TestClient_Send(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/slow-down":
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
			w.Write([]byte(`{"error":{"message":"slow down","type":"rate_limit_error"}}`))
		case "/v1/slow-down-lower":
			// Written as set, not canonicalized: the names some upstreams send.
			w.Header()["retry-after"] = []string{"4"}
			w.Header()["x-amzn-bedrock-input-token-count"] = []string{"12"}
			w.WriteHeader(http.StatusTooManyRequests)
			w.Write([]byte(`{"error":{"message":"slow down","type":"rate_limit_error"}}`))
		case "/v1/lower":
			w.Header()["x-amzn-bedrock-input-token-count"] = []string{"12"}
			w.Write([]byte(`{"ok":true}`))
		case "/v1/overloaded":
			w.WriteHeader(529)
		default:
			w.Write([]byte(`{"ok":true}`))
		}
	}))
	defer srv.Close()
	timeouts := Timeouts{Connect: 5 * time.Second, Header: 5 * time.Second, StreamIdle: 5 * time.Second, PoolWait: 5 * time.Second}
	tests := []struct {
		name, baseURL, path string
		stream              bool
		wantBody            string
		wantStatus          int
		wantRetryAfter      time.Duration
		wantRetryable       bool
		wantHeader          string // the answer's X-Amzn-Bedrock-Input-Token-Count, asked for in its canonical case
	}{
		{name: "whole", baseURL: srv.URL + "/v1", path: "/ok", wantBody: `{"ok":true}`},
		{name: "streamed", baseURL: srv.URL + "/v1", path: "/ok", stream: true, wantBody: `{"ok":true}`},
		{name: "429 with Retry-After", baseURL: srv.URL + "/v1", path: "/slow-down", wantStatus: 429, wantRetryAfter: 3 * time.Second, wantRetryable: true},
		{name: "429 with a lower-case retry-after", baseURL: srv.URL + "/v1", path: "/slow-down-lower", wantStatus: 429, wantRetryAfter: 4 * time.Second, wantRetryable: true},
		{name: "lower-case header names", baseURL: srv.URL + "/v1", path: "/lower", wantBody: `{"ok":true}`, wantHeader: "12"},
		{name: "529", baseURL: srv.URL + "/v1", path: "/overloaded", wantStatus: 529, wantRetryable: true},
		{name: "unreachable", baseURL: "http://127.0.0.1:1/v1", path: "/ok", wantStatus: 502, wantRetryable: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(Backend{Name: "up", BaseURL: tt.baseURL, MaxConns: 2, Timeouts: timeouts}, openai.New())
			if err != nil {
				t.Fatal(err)
			}
			var mem Exchange
			x, err := c.Send(context.Background(), tt.path, nil, []byte(`{}`), tt.stream, &mem)
			if tt.wantStatus != 0 {
				ue := AsError(err)
				if ue == nil || ue.Status != tt.wantStatus || ue.RetryAfter != tt.wantRetryAfter || ue.Retryable != tt.wantRetryable {
					t.Fatalf("Send = %v (%+v); want status %d, Retry-After %v, retryable %v", err, ue, tt.wantStatus, tt.wantRetryAfter, tt.wantRetryable)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			if got := string(x.Header("X-Amzn-Bedrock-Input-Token-Count")); got != tt.wantHeader {
				t.Errorf("Header = %q, want %q", got, tt.wantHeader)
			}
			body, err := ReadBody(context.Background(), x, "up", nil)
			if err != nil || string(body) != tt.wantBody {
				t.Errorf("body %q, %v; want %q", body, err, tt.wantBody)
			}
		})
	}
}

// TestClient_MaxResponseBytes: a backend's bound on a non-streamed answer's body, decoded.
// Unset, it is 64 MiB (the bound fasthttp reads a body under, and ReadBody's); set, a body
// of exactly the bound is read whole and one byte more is a 502 naming the backend and the
// bound, never a truncated answer: sent with a length, chunked, or gzipped to fewer bytes
// than the bound that inflate past it.
func TestClient_MaxResponseBytes(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		c, err := New(Backend{Name: "up", BaseURL: "http://127.0.0.1:1"}, openai.New())
		if err != nil {
			t.Fatal(err)
		}
		if c.maxBody != 64<<20 || c.hc.MaxResponseBodySize != 64<<20 || DefaultMaxResponseBytes != 64<<20 {
			t.Errorf("unset bound = %d (fasthttp's %d, DefaultMaxResponseBytes %d), want 64 MiB", c.maxBody, c.hc.MaxResponseBodySize, DefaultMaxResponseBytes)
		}
		if got := tooLarge("up", DefaultMaxResponseBytes).Message; !strings.Contains(got, "bound of 64 MiB") {
			t.Errorf("the default bound's error %q does not say 64 MiB", got)
		}
	})
	const bound = 1000
	body := func(n int) []byte { return []byte(`{"p":"` + strings.Repeat("a", n-8) + `"}`) }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		b := body(n)
		switch r.URL.Path {
		case "/v1/length":
			w.Header().Set("Content-Length", strconv.Itoa(len(b)))
			w.Write(b)
		case "/v1/chunked":
			w.Write(b[:n/2])
			w.(http.Flusher).Flush() // the head goes without a length
			w.Write(b[n/2:])
		case "/v1/gzip":
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			zw.Write(b)
			zw.Close()
		}
	}))
	defer srv.Close()
	timeouts := Timeouts{Connect: 5 * time.Second, Header: 5 * time.Second, StreamIdle: 5 * time.Second, PoolWait: 5 * time.Second}
	c, err := New(Backend{Name: "up", BaseURL: srv.URL + "/v1", MaxConns: 2, Timeouts: timeouts, MaxResponseBytes: bound}, openai.New())
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/length", "/chunked", "/gzip"} {
		for _, stream := range []bool{false, true} { // read whole by fasthttp, or by ReadBody
			for _, n := range []int{bound, bound + 1} {
				t.Run(fmt.Sprintf("%s/stream=%v/%d", path[1:], stream, n), func(t *testing.T) {
					var mem Exchange
					x, err := c.Send(context.Background(), path+"?n="+strconv.Itoa(n), nil, []byte(`{}`), stream, &mem)
					var got []byte
					if err == nil {
						got, err = ReadBody(context.Background(), x, "up", nil)
						x.Close()
					}
					if n <= bound {
						if err != nil || !bytes.Equal(got, body(n)) {
							t.Fatalf("a body of the bound: %d bytes, %v; want it whole", len(got), err)
						}
						return
					}
					ue := AsError(err)
					if ue == nil || ue.Status != 502 || !strings.Contains(ue.Message, "backend up") || !strings.Contains(ue.Message, "bound of 1000 bytes") {
						t.Fatalf("a body over the bound: %d bytes, %v; want a 502 naming backend up and the bound of 1000 bytes", len(got), err)
					}
				})
			}
		}
	}
}

// TestClient_SendBufferResend: a request whose connection the upstream closes after
// reading it, before any answer, is sent again at once: a small body by the client
// itself; a body over MaxSpareBody, given back to its Buffer once written, by the caller,
// which Resend tells to (and a second failure of that send is the transport error).
func TestClient_SendBufferResend(t *testing.T) {
	tests := []struct {
		name       string
		size       int
		again      bool
		wantResend bool
		wantErr    bool
	}{
		{name: "small", size: 100},
		{name: "large", size: MaxSpareBody + 1, wantResend: true},
		{name: "large, sent again", size: MaxSpareBody + 1, again: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			var got []int // the bodies' sizes the upstream read, in order
			var mu sync.Mutex
			go func() {
				for n := 0; ; n++ {
					conn, err := ln.Accept()
					if err != nil {
						return
					}
					req, err := http.ReadRequest(bufio.NewReader(conn))
					if err == nil {
						b, _ := io.ReadAll(req.Body)
						mu.Lock()
						got = append(got, len(b))
						mu.Unlock()
						if n > 0 { // the first is closed unanswered
							io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
						}
					}
					conn.Close()
				}
			}()
			timeouts := Timeouts{Connect: 5 * time.Second, Header: 5 * time.Second, StreamIdle: 5 * time.Second, PoolWait: 5 * time.Second}
			c, err := New(Backend{Name: "up", BaseURL: "http://" + ln.Addr().String(), MaxConns: 2, Timeouts: timeouts}, openai.New())
			if err != nil {
				t.Fatal(err)
			}
			pool := &sync.Pool{}
			buf := Buffer{Pool: pool}
			buf.Hold(append(buf.Take(), bytes.Repeat([]byte{'a'}, tt.size)...))
			x, err := c.SendBuffer(context.Background(), time.Time{}, "/ok", nil, &buf, tt.again, false, new(Exchange))
			if Resend(err) != tt.wantResend {
				t.Fatalf("SendBuffer: %v, want Resend %v", err, tt.wantResend)
			}
			if tt.wantResend {
				if buf.Bytes() != nil {
					t.Fatal("a body over MaxSpareBody was not given back once written")
				}
				buf.Hold(append(buf.Take(), bytes.Repeat([]byte{'b'}, tt.size)...))
				x, err = c.SendBuffer(context.Background(), time.Time{}, "/ok", nil, &buf, true, false, new(Exchange))
			}
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want one: %v", err, tt.wantErr)
			}
			if err == nil {
				x.Close()
			}
			mu.Lock()
			defer mu.Unlock()
			want := []int{tt.size, tt.size}
			if tt.wantErr {
				want = want[:1]
			}
			if !slices.Equal(got, want) {
				t.Errorf("the upstream read bodies of %v bytes, want %v", got, want)
			}
		})
	}
}

// TestBeforeAnswer: which failed exchanges are sent again at once (a connection that ended
// before the upstream answered) and which are not (any other error, or an answer's head
// that announced a body).
func TestBeforeAnswer(t *testing.T) {
	written := func(errno syscall.Errno) error {
		return &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", errno)}
	}
	withBody := func() *fasthttp.Response {
		r := &fasthttp.Response{}
		r.Header.SetContentLength(10)
		return r
	}
	for _, tc := range []struct {
		name string
		err  error
		resp *fasthttp.Response
		want bool
	}{
		{"closed at the first byte", fasthttp.ErrConnectionClosed, &fasthttp.Response{}, true},
		{"end of file", io.EOF, &fasthttp.Response{}, true},
		{"end of file, wrapped", fmt.Errorf("reading: %w", io.EOF), &fasthttp.Response{}, true},
		{"a large body's write reset", written(syscall.ECONNRESET), &fasthttp.Response{}, true},
		{"a large body's write into a broken pipe", written(syscall.EPIPE), &fasthttp.Response{}, true},
		{"end of file after a head with a body", io.EOF, withBody(), false},
		{"reset after a head with a body", written(syscall.ECONNRESET), withBody(), false},
		{"timeout", fasthttp.ErrTimeout, &fasthttp.Response{}, false},
		{"connection refused", written(syscall.ECONNREFUSED), &fasthttp.Response{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := beforeAnswer(tc.err, tc.resp); got != tc.want {
				t.Errorf("beforeAnswer(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
