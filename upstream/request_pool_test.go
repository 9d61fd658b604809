package upstream

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/agate-gateway/agate/translate"
)

// rawUpstream accepts keep-alive connections on loopback and answers every request 200
// with an empty JSON object, keeping each request's bytes as they came (head and body).
func rawUpstream(t *testing.T) (addr string, got <-chan []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	reqs := make(chan []byte, 16)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				br := bufio.NewReader(conn)
				for {
					var raw []byte
					n := 0
					for {
						line, err := br.ReadBytes('\n')
						if err != nil {
							return
						}
						raw = append(raw, line...)
						if k, v, ok := strings.Cut(strings.TrimSpace(string(line)), ":"); ok && strings.EqualFold(k, "Content-Length") {
							n, _ = strconv.Atoi(strings.TrimSpace(v))
						}
						if string(line) == "\r\n" {
							break
						}
					}
					body := make([]byte, n)
					if _, err := io.ReadFull(br, body); err != nil {
						return
					}
					reqs <- append(raw, body...)
					if _, err := conn.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), reqs
}

// TestClient_PlainRequestsAsBuilt: a request that adds nothing to the backend's head and
// base URL is sent from a kept request with the bytes newRequest gives the first one (the
// same head, its own path and body), and one that adds headers or a query before it leaves
// nothing of them in the next.
func TestClient_PlainRequestsAsBuilt(t *testing.T) {
	addr, reqs := rawUpstream(t)
	c, err := New(Backend{Name: "up", BaseURL: "http://" + addr + "/v1", APIKey: "sk-up",
		Timeouts: Timeouts{Connect: time.Second, Header: time.Second, StreamIdle: time.Second}, MaxConns: 1}, provider("openai"))
	if err != nil {
		t.Fatal(err)
	}
	send := func(path string, headers []translate.Header, body string) string {
		t.Helper()
		var x Exchange
		ex, err := c.Send(context.Background(), path, headers, []byte(body), false, &x)
		if err != nil {
			t.Fatal(err)
		}
		ex.Close()
		select {
		case raw := <-reqs:
			return string(raw)
		case <-time.After(time.Second):
			t.Fatal("the upstream got no request")
		}
		return ""
	}
	first := send("/chat/completions", nil, `{"a":1}`)
	if !strings.HasPrefix(first, "POST /v1/chat/completions HTTP/1.1\r\n") || !strings.HasSuffix(first, "\r\n\r\n"+`{"a":1}`) ||
		!strings.Contains(first, "\r\nAuthorization: Bearer sk-up\r\n") {
		t.Fatalf("first request:\n%s", first)
	}
	same := func(name, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s:\n%q\nwant\n%q", name, got, want)
		}
	}
	same("the same request again", send("/chat/completions", nil, `{"a":1}`), first)
	same("another body", send("/chat/completions", nil, `{"b":2}`), strings.Replace(first, `{"a":1}`, `{"b":2}`, 1))
	withHeader := send("/chat/completions", []translate.Header{{Name: "x-team", Value: "red"}}, `{"a":1}`)
	if !strings.Contains(withHeader, "\r\nX-Team: red\r\n") {
		t.Errorf("a request's own header was not sent:\n%s", withHeader)
	}
	withQuery := send("/chat/completions?alt=sse", nil, `{"a":1}`)
	if !strings.HasPrefix(withQuery, "POST /v1/chat/completions?alt=sse HTTP/1.1\r\n") {
		t.Errorf("the query was not sent:\n%s", withQuery)
	}
	same("after a request with a header and one with a query", send("/chat/completions", nil, `{"a":1}`), first)
	other := send("/other", nil, `{"a":1}`)
	same("another path", other, strings.Replace(first, "/v1/chat/completions", "/v1/other", 1))
	longer := send("/chat/completions", nil, `{"a":12}`)
	same("a longer body", longer, strings.Replace(strings.Replace(first, `{"a":1}`, `{"a":12}`, 1), "Content-Length: 7", "Content-Length: 8", 1))
	if bytes.Contains([]byte(longer), []byte("X-Team")) {
		t.Errorf("a kept request carried an earlier request's header:\n%s", longer)
	}
}

// TestClient_RedundantHeadersPlain: a request whose own headers the head already holds
// with the same values (names in any case) is sent from a kept request with the bytes
// newRequest writes with those headers, and any other header makes it a request of its
// own, whatever the backend's headers override.
func TestClient_RedundantHeadersPlain(t *testing.T) {
	c, err := New(Backend{Name: "claude", BaseURL: "http://127.0.0.1:1/v1", APIKey: "sk-ant",
		Headers:  map[string]string{"X-Team": "red", "anthropic-beta": "b1"},
		Timeouts: Timeouts{Connect: time.Second, Header: time.Second, StreamIdle: time.Second}, MaxConns: 1}, provider("anthropic"))
	if err != nil {
		t.Fatal(err)
	}
	written := func(req *fasthttp.Request) string {
		var b bytes.Buffer
		w := bufio.NewWriter(&b)
		if err := req.Write(w); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		return b.String()
	}
	for _, tt := range []struct {
		name    string
		headers []translate.Header
		plain   bool
	}{
		{"none", nil, true},
		{"the provider's version", []translate.Header{{Name: "anthropic-version", Value: "2023-06-01"}}, true},
		{"the version in another case", []translate.Header{{Name: "ANTHROPIC-Version", Value: "2023-06-01"}}, true},
		{"the key, as the head holds it", []translate.Header{{Name: "x-api-key", Value: "sk-ant"}}, true},
		{"the backend's header", []translate.Header{{Name: "x-team", Value: "red"}}, true},
		{"the backend's value of a header, which it overrides", []translate.Header{{Name: "anthropic-beta", Value: "b1"}}, true},
		{"another value of a header the backend overrides", []translate.Header{{Name: "anthropic-beta", Value: "b2"}}, false},
		{"another version", []translate.Header{{Name: "anthropic-version", Value: "2024-01-01"}}, false},
		{"a value differing in case", []translate.Header{{Name: "x-team", Value: "Red"}}, false},
		{"the last letter upper-case", []translate.Header{{Name: "anthropic-versioN", Value: "2023-06-01"}}, true},
		{"a name of another length", []translate.Header{{Name: "anthropic-versions", Value: "2023-06-01"}}, false},
		{"a name differing in a non-letter", []translate.Header{{Name: "anthropic_version", Value: "2023-06-01"}}, false},
		{"one redundant, one not", []translate.Header{{Name: "anthropic-version", Value: "2023-06-01"}, {Name: "traceparent", Value: "00-1-2-01"}}, false},
		{"Accept-Encoding as the head holds it", []translate.Header{{Name: "accept-encoding", Value: "identity"}}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want := new(fasthttp.Request)
			c.newRequest(want, "/messages", tt.headers, []byte(`{"a":1}`))
			for i := range 2 { // the second from the kept requests, when plain
				req, plain := c.plainRequest("/messages", tt.headers, []byte(`{"a":1}`))
				if plain != tt.plain {
					t.Fatalf("plain %v, want %v", plain, tt.plain)
				}
				if got, w := written(req), written(want); got != w {
					t.Errorf("request %d:\n%q\nwant\n%q", i, got, w)
				}
				c.releaseRequest(req, plain, true)
			}
		})
	}
}

// BenchmarkPlainRequest is the upstream request's making and release for a Messages
// passthrough (#55): no header of its own, the client's anthropic-version equal to the
// provider's (redundant: plain), and another version (a request of its own).
func BenchmarkPlainRequest(b *testing.B) {
	c, err := New(Backend{Name: "claude", BaseURL: "http://127.0.0.1:1/v1", APIKey: "sk-ant",
		Timeouts: Timeouts{Connect: time.Second, Header: time.Second, StreamIdle: time.Second}, MaxConns: 1}, provider("anthropic"))
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"model":"claude","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`)
	for _, bc := range []struct {
		name    string
		headers []translate.Header
	}{
		{"none", nil},
		{"redundant-version", []translate.Header{{Name: "anthropic-version", Value: "2023-06-01"}}},
		{"other-version", []translate.Header{{Name: "anthropic-version", Value: "2024-01-01"}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req, plain := c.plainRequest("/messages", bc.headers, body)
				c.releaseRequest(req, plain, true)
			}
		})
	}
}
