package proxy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// This file holds the regression tests of the security hardening (issue 10): bounded label
// sets and log lines, requests rejected from their headers, connection caps, and the
// transport-level defences.

// TestLabelsAndLogsBounded sends many distinct, long model names (direct routes a key may
// use, direct routes it may not, unknown backends) and checks that they add no metric
// series and no long log line: labels come only from the configuration.
func TestLabelsAndLogsBounded(t *testing.T) {
	up := newUpstream(t, okUpstream("ok"))
	g := startGateway(t, `
backends:
  up: {type: openai, base_url: "{{UP}}", retries: {max: 0}}
models:
  cheap: {backend: up}
keys:
  wide: {key: sk-wide, models: ["up/*", "cheap"]}
  narrow: {key: sk-narrow, models: ["cheap"]}
`, map[string]string{"UP": up.v1()})
	long := strings.Repeat("x", 20<<10)
	statuses := map[string]int{}
	for i := range 30 {
		for _, c := range []struct{ key, model string }{
			{"sk-wide", fmt.Sprintf("up/%d%s", i, long)},   // allowed direct route: 200
			{"sk-narrow", fmt.Sprintf("up/%d%s", i, long)}, // forbidden direct route: 404
			{"sk-wide", fmt.Sprintf("nope/%d%s", i, long)}, // unknown backend: 404
			{"sk-narrow", fmt.Sprintf("%d%s", i, long)},    // unknown model: 404
		} {
			r := g.chat(c.key, `{"model":"`+c.model+`","messages":[{"role":"user","content":"hi"}]}`)
			statuses[fmt.Sprint(r.status)]++
			if r.status != 200 && len(r.body) > 2048 {
				t.Fatalf("%d-byte answer quotes the model whole: %.200s", len(r.body), r.body)
			}
		}
	}
	if diff := cmp.Diff(map[string]int{"200": 30, "404": 90}, statuses); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	m := g.scrape()
	var labels []string
	for _, mm := range m["gateway_requests_total"].GetMetric() {
		l := map[string]string{}
		for _, p := range mm.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		labels = append(labels, l["model"]+" "+l["backend"]+" "+l["key"]+" "+l["code"])
	}
	want := []string{"up/* up wide 200", "unknown  narrow 404", "unknown  wide 404"}
	if diff := cmp.Diff(want, labels, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("gateway_requests_total series (-want +got):\n%s", diff)
	}
	if r := g.do("GET", "/metrics", "", nil); len(r.body) > 256<<10 {
		t.Errorf("/metrics is %d bytes", len(r.body))
	}
	for _, line := range strings.Split(g.logText(), "\n") {
		if len(line) > 2048 {
			t.Errorf("%d-byte log line: %.300s", len(line), line)
		}
	}
	// One allowed request still reaches the upstream with its whole model name.
	client := g.client("sk-wide")
	if _, err := client.Chat.Completions.New(context.Background(), userParams("up/m"+long, "hi")); err != nil {
		t.Fatal(err)
	}
}

// TestClip pins the truncation of client-supplied strings in messages and logs.
func TestClip(t *testing.T) {
	tests := []struct {
		name string
		in   string
		n    int
		want string
	}{
		{name: "short", in: "gpt-4o", n: 8, want: "gpt-4o"},
		{name: "exact", in: "abcd", n: 4, want: "abcd"},
		{name: "cut", in: "abcdef", n: 4, want: "abcd…[6 bytes]"},
		{name: "rune not split", in: "ab€€", n: 4, want: "ab…[8 bytes]"},
		{name: "invalid utf-8", in: "a\xffb", n: 8, want: "a\uFFFDb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, clip(tt.in, tt.n)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// dialGateway opens a raw TCP connection to the gateway, closed at the end of the test.
func dialGateway(t *testing.T, g *gateway) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(g.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// A guard against a hung test, not a timing assertion.
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return c
}

// readResponse reads one HTTP response from br and its whole body.
func readResponse(t *testing.T, br *bufio.Reader) httpResult {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the response body: %v", err)
	}
	if resp.Close { // net/http takes "Connection: close" out of the header
		resp.Header.Set("Connection", "close")
	}
	return httpResult{status: resp.StatusCode, header: resp.Header, body: body}
}

const bodyLimitConfig = `
server: {max_body_bytes: 1048576}
backends: {offline: {type: mock}}
models: {demo: {backend: offline}}
keys: {alice: {key: sk-alice, models: ["*"]}}
`

// TestRejectedFromHeaders sends requests that declare a 50 MB body and sends only its first
// 16 KiB: the answer must come from the headers alone (the body is never buffered), as
// an OpenAI error, and the connection is closed after it.
func TestRejectedFromHeaders(t *testing.T) {
	g := startGateway(t, bodyLimitConfig, nil)
	tests := []struct {
		name    string
		headers string
		want    errorView
	}{
		{name: "no key", want: errorView{Status: 401, Type: "invalid_request_error", Code: "invalid_api_key"}},
		{name: "wrong key", headers: "Authorization: Bearer sk-mallory\r\n",
			want: errorView{Status: 401, Type: "invalid_request_error", Code: "invalid_api_key"}},
		{name: "wrong x-api-key", headers: "X-Api-Key: sk-mallory\r\n",
			want: errorView{Status: 401, Type: "invalid_request_error", Code: "invalid_api_key"}},
		{name: "declared length over the limit", headers: "Authorization: Bearer sk-alice\r\n",
			want: errorView{Status: 413, Type: "invalid_request_error", Code: "request_too_large"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialGateway(t, g)
			fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n", tt.headers, 50<<20)
			c.Write(bytes.Repeat([]byte("x"), 16<<10))
			r := readResponse(t, bufio.NewReader(c))
			if diff := cmp.Diff(tt.want, decodeError(t, r), cmpopts.IgnoreFields(errorView{}, "Message")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if r.header.Get("Connection") != "close" {
				t.Errorf("Connection: %q, want close", r.header.Get("Connection"))
			}
		})
	}
}

// TestRejectedBeforeContinue: a client that asks "Expect: 100-continue" and would be
// rejected gets the final answer instead of 100 Continue, and never sends its body.
func TestRejectedBeforeContinue(t *testing.T) {
	g := startGateway(t, bodyLimitConfig, nil)
	tests := []struct {
		name    string
		headers string
		length  int
		want    int
	}{
		{name: "no key", length: 100, want: 401},
		{name: "too large", headers: "Authorization: Bearer sk-alice\r\n", length: 50 << 20, want: 413},
		{name: "accepted", headers: "Authorization: Bearer sk-alice\r\n", length: len(helloDemo), want: 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialGateway(t, g)
			fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n%sContent-Length: %d\r\n\r\n", tt.headers, tt.length)
			br := bufio.NewReader(c)
			r := readResponse(t, br)
			if r.status != tt.want {
				t.Fatalf("status %d, want %d: %s", r.status, tt.want, r.body)
			}
			if tt.want == 100 {
				c.Write([]byte(helloDemo))
				if r := readResponse(t, br); r.status != 200 {
					t.Errorf("after 100 Continue: status %d: %s", r.status, r.body)
				}
				return
			}
			decodeError(t, r)
		})
	}
}

// TestTooLargeWithoutExpect: a body over server.max_body_bytes sent whole, without
// "Expect: 100-continue" (as Go net/http, Python and Node clients do), gets the 413 JSON
// error, not a connection reset while the client is still writing.
func TestTooLargeWithoutExpect(t *testing.T) {
	g := startGateway(t, bodyLimitConfig, nil)
	big := strings.Repeat("x", 3<<20)
	t.Run("openai-go", func(t *testing.T) {
		client := g.client("sk-alice")
		_, err := client.Chat.Completions.New(context.Background(), userParams("demo", big))
		e := sdkError(t, err)
		if diff := cmp.Diff(errorView{Status: 413, Code: "request_too_large"}, errorView{Status: e.StatusCode, Code: e.Code}); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	for _, tt := range []struct {
		name    string
		key     string
		chunked bool
		want    int
	}{
		{name: "net/http, too large", key: "sk-alice", want: 413},
		{name: "net/http, too large, chunked", key: "sk-alice", chunked: true, want: 413},
		{name: "net/http, no key", want: 401},
		{name: "net/http, no key, chunked", chunked: true, want: 401},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(`{"model":"demo","messages":[{"role":"user","content":"` + big + `"}]}`)
			var r io.Reader = bytes.NewReader(body)
			if tt.chunked {
				r = io.MultiReader(r) // unknown length: net/http sends it chunked
			}
			req, _ := http.NewRequest("POST", g.base+"/v1/chat/completions", r)
			if tt.key != "" {
				req.Header.Set("Authorization", "Bearer "+tt.key)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("the client saw no answer: %v", err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if v := decodeError(t, httpResult{status: resp.StatusCode, header: resp.Header, body: b}); v.Status != tt.want {
				t.Errorf("status %d, want %d: %s", v.Status, tt.want, b)
			}
		})
	}
	// The gateway still serves.
	if r := g.chat("sk-alice", helloDemo); r.status != 200 {
		t.Errorf("afterwards: status %d: %s", r.status, r.body)
	}
}

// TestConnectionCaps: connections beyond server.max_connections (503) or
// server.max_connections_per_ip (429) are answered with an OpenAI error and closed; a
// freed place is taken again.
func TestConnectionCaps(t *testing.T) {
	tests := []struct {
		name, caps, cap string
		want            errorView
	}{
		{name: "total", caps: "max_connections: 2", cap: "max_connections", want: errorView{Status: 503, Type: "api_error", Code: "too_many_connections"}},
		{name: "per ip", caps: "max_connections_per_ip: 2", cap: "max_connections_per_ip", want: errorView{Status: 429, Type: "rate_limit_error", Code: "too_many_connections_per_ip"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := startGateway(t, "server: {"+tt.caps+"}\nbackends: {offline: {type: mock}}\nmodels: {demo: {backend: offline}}\n", nil)
			request := "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
			var held []net.Conn
			for range 2 { // served: each answers, so each is counted
				c := dialGateway(t, g)
				io.WriteString(c, request)
				if r := readResponse(t, bufio.NewReader(c)); r.status != 200 {
					t.Fatalf("status %d", r.status)
				}
				held = append(held, c)
			}
			c := dialGateway(t, g)
			io.WriteString(c, request)
			r := readResponse(t, bufio.NewReader(c))
			if diff := cmp.Diff(tt.want, decodeError(t, r), cmpopts.IgnoreFields(errorView{}, "Message")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if r.header.Get("Retry-After") == "" {
				t.Error("no Retry-After")
			}
			if got := g.metricValue("gateway_connections_refused_total", map[string]string{"cap": tt.cap}); got != 1 {
				t.Errorf("gateway_connections_refused_total{cap=%q} = %v, want 1", tt.cap, got)
			}
			held[0].Close()
			eventually(t, "a freed place", func() bool {
				c, err := net.Dial("tcp", strings.TrimPrefix(g.base, "http://"))
				if err != nil {
					return false
				}
				defer c.Close()
				io.WriteString(c, request)
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				return err == nil && resp.StatusCode == 200
			})
		})
	}
}

// TestTooLargeWriteThenRead is a client that writes its whole request before it reads
// (Python http.client does): with the body over the limit but within the drained bound,
// it must still read the 413 JSON error, not hit a reset while writing or reading.
func TestTooLargeWriteThenRead(t *testing.T) {
	g := startGateway(t, bodyLimitConfig, nil)
	tests := []struct {
		name, headers string
		want          int
	}{
		{name: "too large", headers: "Authorization: Bearer sk-alice\r\n", want: 413},
		{name: "no key", want: 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialGateway(t, g)
			c.(*net.TCPConn).SetWriteBuffer(64 << 10)
			body := bytes.Repeat([]byte("x"), 3<<20)
			if _, err := fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n%sContent-Length: %d\r\n\r\n", tt.headers, len(body)); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Write(body); err != nil {
				t.Fatalf("writing the body: %v", err)
			}
			r := readResponse(t, bufio.NewReader(c))
			if v := decodeError(t, r); v.Status != tt.want {
				t.Errorf("status %d, want %d", v.Status, tt.want)
			}
		})
	}
}

// TestTransportErrorLogsRedacted: a request fasthttp cannot parse (a control byte in a
// header value) is logged without its credentials or body.
func TestTransportErrorLogsRedacted(t *testing.T) {
	tests := []struct {
		name    string
		request string
	}{
		{name: "bad byte in the authorization value", request: "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n" +
			"Authorization: Bearer sk-very-secret\x01\r\nContent-Length: 26\r\n\r\n{\"prompt\":\"private words\"}"},
		{name: "bad byte in another header", request: "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n" +
			"Authorization: Bearer sk-very-secret\r\nX-Bad: a\x01b\r\nContent-Length: 26\r\n\r\n{\"prompt\":\"private words\"}"},
		{name: "bad request line", request: "POST /v1/chat/completions\x01 HTTP/1.1\r\nHost: x\r\n" +
			"Authorization: Bearer sk-very-secret\r\nContent-Length: 26\r\n\r\n{\"prompt\":\"private words\"}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := startGateway(t, bodyLimitConfig, nil)
			c := dialGateway(t, g)
			io.WriteString(c, tt.request)
			if r := readResponse(t, bufio.NewReader(c)); r.status != 400 {
				t.Errorf("status %d, want 400", r.status)
			}
			eventually(t, "the transport error in the log", func() bool { return strings.Contains(g.logText(), "fasthttp") })
			logs := g.logText()
			for _, secret := range []string{"sk-very-secret", "private words"} {
				if strings.Contains(logs, secret) {
					t.Errorf("log holds %q:\n%s", secret, logs)
				}
			}
			if !strings.Contains(logs, "error when reading request headers") {
				t.Errorf("the log lost the error itself:\n%s", logs)
			}
		})
	}
	// The documented debug option logs them verbatim.
	g := startGateway(t, "log: {unsafe_transport_errors: true}\n"+bodyLimitConfig, nil)
	c := dialGateway(t, g)
	io.WriteString(c, tests[0].request)
	readResponse(t, bufio.NewReader(c))
	eventually(t, "the verbatim transport error", func() bool { return strings.Contains(g.logText(), "sk-very-secret") })
}

// TestRequestHeadBound: a request head up to 16 KiB (the server's read buffer) is served,
// with a body read after it; a longer one is a 431 in the OpenAI error shape, naming the
// bound.
func TestRequestHeadBound(t *testing.T) {
	g := startGateway(t, bodyLimitConfig, nil)
	// The head without the padding header: request line, Host, Authorization,
	// Content-Length, and the blank line.
	head := func(pad int) string {
		return "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-alice\r\n" +
			"X-Pad: " + strings.Repeat("p", pad) + "\r\n" +
			"Content-Length: " + strconv.Itoa(len(helloDemo)) + "\r\n\r\n"
	}
	base := len(head(0))
	tests := []struct {
		name       string
		headBytes  int
		wantStatus int
	}{
		{name: "a short head", headBytes: base + 100, wantStatus: 200},
		{name: "a head just under the bound", headBytes: maxRequestHead - 64, wantStatus: 200},
		{name: "a head over the bound", headBytes: maxRequestHead + 512, wantStatus: 431},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialGateway(t, g)
			io.WriteString(c, head(tt.headBytes-base)+helloDemo)
			r := readResponse(t, bufio.NewReader(c))
			if tt.wantStatus == 200 {
				if r.status != 200 {
					t.Fatalf("status %d, want 200: %s", r.status, r.body)
				}
				return
			}
			got := decodeError(t, r)
			if got.Status != tt.wantStatus || got.Code != "request_header_too_large" || !strings.Contains(got.Message, "16384 bytes") {
				t.Errorf("got %+v, want a %d request_header_too_large naming 16384 bytes", got, tt.wantStatus)
			}
		})
	}
}

// TestContentLengthWithTransferEncoding: a request with both Content-Length and
// Transfer-Encoding is answered from its chunked body and its connection closed
// (RFC 9112 section 6.3); a plain chunked request keeps its connection.
func TestContentLengthWithTransferEncoding(t *testing.T) {
	g := startGateway(t, bodyLimitConfig, nil)
	chunked := fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(helloDemo), helloDemo)
	tests := []struct {
		name      string
		framing   string
		wantClose bool
	}{
		{name: "content-length first", framing: "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", wantClose: true},
		{name: "transfer-encoding first", framing: "Transfer-Encoding: chunked\r\ncontent-length: 5\r\n", wantClose: true},
		{name: "chunked only", framing: "Transfer-Encoding: chunked\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialGateway(t, g)
			io.WriteString(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-alice\r\n"+tt.framing+"\r\n"+chunked)
			br := bufio.NewReader(c)
			r := readResponse(t, br)
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			gotClose := r.header.Get("Connection") == "close"
			if gotClose != tt.wantClose {
				t.Errorf("Connection: close = %v, want %v", gotClose, tt.wantClose)
			}
			if tt.wantClose {
				if n, err := br.Read(make([]byte, 1)); err != io.EOF {
					t.Errorf("after the answer: read %d bytes, %v; want the connection closed", n, err)
				}
			}
		})
	}
}

// TestMetricsAccess: metrics.bearer guards /metrics with a token; metrics.listen moves it
// to its own address, off the main one.
func TestMetricsAccess(t *testing.T) {
	t.Run("bearer", func(t *testing.T) {
		g := startGateway(t, "metrics: {bearer: scrape-token}\n"+bodyLimitConfig, nil)
		tests := []struct {
			name, auth string
			want       int
		}{
			{name: "no token", want: 401},
			{name: "wrong token", auth: "Bearer scrape-tokeX", want: 401},
			{name: "a client key", auth: "Bearer sk-alice", want: 401},
			{name: "the token", auth: "Bearer scrape-token", want: 200},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				var h []string
				if tt.auth != "" {
					h = []string{"Authorization", tt.auth}
				}
				r := g.do("GET", "/metrics", "", nil, h...)
				if r.status != tt.want {
					t.Fatalf("status %d, want %d: %.200s", r.status, tt.want, r.body)
				}
				if tt.want == 200 && !bytes.Contains(r.body, []byte("gateway_inflight_requests")) {
					t.Errorf("no gateway metrics: %.200s", r.body)
				}
				if tt.want != 200 {
					decodeError(t, r)
				}
			})
		}
	})
	t.Run("listen", func(t *testing.T) {
		g := startGateway(t, "metrics: {listen: \"127.0.0.1:0\"}\n"+bodyLimitConfig, nil)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go g.srv.ServeMetrics(ln) // ended by the gateway's Shutdown at cleanup
		if r := g.do("GET", "/metrics", "", nil); r.status != 404 {
			t.Errorf("main listener /metrics: status %d, want 404", r.status)
		}
		m := &gateway{t: t, base: "http://" + ln.Addr().String()}
		if r := m.do("GET", "/metrics", "", nil); r.status != 200 || !bytes.Contains(r.body, []byte("gateway_inflight_requests")) {
			t.Errorf("metrics listener /metrics: status %d: %.200s", r.status, r.body)
		}
		if r := m.do("POST", "/v1/chat/completions", "sk-alice", []byte(helloDemo)); r.status != 404 {
			t.Errorf("metrics listener chat: status %d, want 404", r.status)
		}
	})
}

// TestXAPIKey: Anthropic-style clients send the key as x-api-key instead of Authorization.
func TestXAPIKey(t *testing.T) {
	g := startGateway(t, bodyLimitConfig, nil)
	tests := []struct {
		name, method, path string
		headers            []string
		want               int
	}{
		{name: "chat", method: "POST", path: "/v1/chat/completions", headers: []string{"X-Api-Key", "sk-alice"}, want: 200},
		{name: "models", method: "GET", path: "/v1/models", headers: []string{"x-api-key", "sk-alice"}, want: 200},
		{name: "wrong key", method: "POST", path: "/v1/chat/completions", headers: []string{"X-Api-Key", "sk-mallory"}, want: 401},
		{name: "authorization wins", method: "POST", path: "/v1/chat/completions",
			headers: []string{"X-Api-Key", "sk-alice", "Authorization", "Bearer sk-mallory"}, want: 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body []byte
			if tt.method == "POST" {
				body = []byte(helloDemo)
			}
			if r := g.do(tt.method, tt.path, "", body, tt.headers...); r.status != tt.want {
				t.Errorf("status %d, want %d: %s", r.status, tt.want, r.body)
			}
		})
	}
}

// TestFallbacksFollowTheKeyAllowlist: a fallback the key may not use is skipped (and
// counted), so a client cannot reach a forbidden model by making the allowed one fail.
func TestFallbacksFollowTheKeyAllowlist(t *testing.T) {
	tests := []struct {
		name        string
		key         string
		wantOrder   []string
		wantStatus  int // 0: success
		wantSkipped float64
	}{
		{name: "key allowed everything", key: "sk-wide", wantOrder: []string{"primary", "second"}},
		{name: "forbidden fallback skipped", key: "sk-narrow", wantOrder: []string{"primary", "third"}, wantSkipped: 1},
		{name: "only fallback forbidden", key: "sk-cheap", wantOrder: []string{"primary"}, wantStatus: 503, wantSkipped: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var j journal
			p := newUpstream(t, j.note("primary", failWith(503, "overloaded")))
			s := newUpstream(t, j.note("second", okUpstream("expensive answer")))
			th := newUpstream(t, j.note("third", okUpstream("cheap answer")))
			g := startGateway(t, `
backends:
  primary: {type: openai, base_url: "{{P}}", retries: {max: 0}}
  second: {type: openai, base_url: "{{S}}", retries: {max: 0}}
  third: {type: openai, base_url: "{{T}}", retries: {max: 0}}
models:
  cheap: {backend: primary, fallbacks: [expensive, cheap-b]}
  expensive: {backend: second}
  cheap-b: {backend: third}
keys:
  wide: {key: sk-wide, models: ["*"]}
  narrow: {key: sk-narrow, models: ["cheap*"]}
  cheap: {key: sk-cheap, models: ["cheap"]}
`, map[string]string{"P": p.v1(), "S": s.v1(), "T": th.v1()})
			client := g.client(tt.key)
			_, err := client.Chat.Completions.New(context.Background(), userParams("cheap", "hi"))
			if tt.wantStatus != 0 {
				if e := sdkError(t, err); e.StatusCode != tt.wantStatus {
					t.Errorf("status %d, want %d", e.StatusCode, tt.wantStatus)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantOrder, j.get()); diff != "" {
				t.Errorf("upstreams tried (-want +got):\n%s", diff)
			}
			if got := g.metricValue("gateway_fallbacks_skipped_total", map[string]string{"model": "cheap"}); got != tt.wantSkipped {
				t.Errorf("gateway_fallbacks_skipped_total = %v, want %v", got, tt.wantSkipped)
			}
		})
	}
}

// endlessStream answers with an OpenAI stream that never ends, as fast as the gateway
// takes it, and closes released once the gateway let go of the exchange.
func endlessStream(released chan<- struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		defer close(released)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		chunk := []byte("data: " + chunkJSON(`{"content":"`+strings.Repeat("y", 8<<10)+`"}`, "null") + "\n\n")
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			if r.Context().Err() != nil {
				return
			}
		}
	}
}

// TestNonReadingClientReleasesUpstream: a stream whose client stops reading is ended after
// server.write_timeout and its upstream connection released, so the backend's pool
// (max_conns: 1) serves the next client.
func TestNonReadingClientReleasesUpstream(t *testing.T) {
	released := make(chan struct{})
	first := true
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if first {
			first = false
			endlessStream(released)(w, r)
			return
		}
		okUpstream("next client")(w, r)
	})
	g := startGateway(t, `
server: {write_timeout: 200ms}
backends:
  up: {type: openai, base_url: "{{UP}}", max_conns: 1, retries: {max: 0}, timeouts: {pool_wait: 30s}}
models: {m: {backend: up}}
`, map[string]string{"UP": up.v1()})
	c := dialGateway(t, g)
	c.(*net.TCPConn).SetReadBuffer(4 << 10)
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	// The client never reads. Waiting on the upstream handler, not on a clock:
	select {
	case <-released:
	case <-time.After(20 * time.Second): // a guard against a hung test only
		t.Fatal("the upstream stream was never released")
	}
	// The upstream sees the connection close before the pool counts it free: fasthttp
	// closes a streamed body's connection first, to end a read in flight, and then frees
	// its slot. A request that asks for a connection in between can miss the freed slot
	// (fasthttp v1.74's acquireConn checks the count and queues for a connection under
	// two separate locks) and wait all of pool_wait. So wait until the gateway has ended
	// the first request, which it does after the release.
	for deadline := time.Now().Add(20 * time.Second); g.metricValue("gateway_inflight_requests", nil) != 0; {
		if time.Now().After(deadline) { // a guard against a hung test only
			t.Fatal("the first request never ended")
		}
		time.Sleep(time.Millisecond)
	}
	client := g.client("")
	got, err := client.Chat.Completions.New(context.Background(), userParams("m", "hi"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Choices[0].Message.Content != "next client" {
		t.Errorf("content %q", got.Choices[0].Message.Content)
	}
}

// TestUpstreamPoolBusy: when every pooled upstream connection stays busy for
// timeouts.pool_wait, the request fails with 503 and Retry-After instead of waiting on.
func TestUpstreamPoolBusy(t *testing.T) {
	hold := make(chan struct{})
	holding := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.Write([]byte("data: " + chunkJSON(`{"role":"assistant","content":"wait"}`, "null") + "\n\n"))
		w.(http.Flusher).Flush()
		close(holding)
		<-hold
		w.Write([]byte("data: " + chunkJSON(`{}`, `"stop"`) + "\n\ndata: [DONE]\n\n"))
	})
	g := startGateway(t, `
backends:
  up: {type: openai, base_url: "{{UP}}", max_conns: 1, retries: {max: 0}, timeouts: {pool_wait: 50ms}}
models: {m: {backend: up}}
`, map[string]string{"UP": up.v1()})
	client := g.client("")
	s := client.Chat.Completions.NewStreaming(context.Background(), userParams("m", "hi"))
	if !s.Next() {
		t.Fatalf("first stream: %v", s.Err())
	}
	<-holding
	r := g.chat("", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	want := errorView{Status: 503, Type: "api_error", Code: "upstream_busy"}
	if diff := cmp.Diff(want, decodeError(t, r), cmpopts.IgnoreFields(errorView{}, "Message")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := r.header.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After %q, want 1", got)
	}
	close(hold)
	for s.Next() {
	}
	if err := s.Err(); err != nil {
		t.Errorf("first stream: %v", err)
	}
}

// TestDroppedParamLabelsBounded: parameters dropped by drop_unsupported_params are counted
// under bounded labels, whatever field names and message indices the client sends.
func TestDroppedParamLabelsBounded(t *testing.T) {
	up := newUpstream(t, failWith(400, "stop here"))
	g := startGateway(t, `
backends:
  g: {type: gemini, base_url: "{{UP}}", api_key: k, retries: {max: 0}, drop_unsupported_params: true}
models: {m: {backend: g}}
`, map[string]string{"UP": up.URL})
	for i := range 20 {
		g.chat("", fmt.Sprintf(`{"model":"m","x_field_%d":1,"user":"u","messages":[{"role":"user","content":"hi"}]}`, i))
	}
	var got []string
	for _, mm := range g.scrape()["gateway_dropped_params_total"].GetMetric() {
		for _, l := range mm.GetLabel() {
			if l.GetName() == "param" {
				got = append(got, l.GetValue())
			}
		}
	}
	if diff := cmp.Diff([]string{"other", "user"}, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("param labels (-want +got):\n%s", diff)
	}
}

func TestParamLabel(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{name: "top-level", in: "user", want: "user"},
		{name: "indices folded", in: "messages[12].content[3].file.file_id", want: "messages[].content[].file.file_id"},
		{name: "unknown field", in: "x_anything", want: "other"},
		{name: "unknown path", in: "zz[1].a", want: "other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := paramLabel(tt.in); got != tt.want {
				t.Errorf("paramLabel(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// FuzzClip checks clip's contract: valid UTF-8, at most n bytes of the input plus a marker.
func FuzzClip(f *testing.F) {
	for _, s := range []string{"", "gpt-4o", "ab€€", "a\xffb", strings.Repeat("é", 100)} {
		f.Add(s, 4)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 0 || n > 1<<10 {
			return
		}
		got := clip(s, n)
		if !utf8.ValidString(got) {
			t.Fatalf("clip(%q, %d) = %q: invalid UTF-8", s, n, got)
		}
		body, _, cut := strings.Cut(got, "…[")
		if !cut && len(s) <= n && utf8.ValidString(s) && got != s {
			t.Fatalf("clip(%q, %d) = %q changed a string that fits", s, n, got)
		}
		if cut && len(body) > n+2*n { // U+FFFD may replace single bytes: 3 bytes for 1
			t.Fatalf("clip(%q, %d) = %q: too long", s, n, got)
		}
	})
}

// FuzzHasContentLength compares hasContentLength with a plain line-by-line reading.
func FuzzHasContentLength(f *testing.F) {
	f.Add([]byte("Host: x\r\nContent-Length: 5\r\n"))
	f.Add([]byte("Transfer-Encoding: chunked\r\ncontent-length: 5\r\n"))
	f.Add([]byte("X-Content-Length: 5\r\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		want := false
		for _, line := range strings.Split(string(raw), "\n") {
			if strings.HasPrefix(strings.ToLower(line), "content-length:") {
				want = true
			}
		}
		if got := hasContentLength(raw); got != want {
			t.Fatalf("hasContentLength(%q) = %v, want %v", raw, got, want)
		}
	})
}
