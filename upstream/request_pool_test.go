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
