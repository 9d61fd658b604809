package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// headerCasings are the ways a client may write a header name: as given (the canonical
// form, as Go's net/http and the Python SDKs' clients send it), lower case (Node's fetch,
// so the OpenAI and Anthropic TypeScript SDKs and Claude Code), upper case, and mixed.
var headerCasings = []struct {
	name string
	of   func(string) string
}{
	{"canonical", func(s string) string { return s }},
	{"lower", strings.ToLower},
	{"upper", strings.ToUpper},
	{"mixed", func(s string) string {
		b := []byte(strings.ToLower(s))
		for i := 0; i < len(b); i += 2 {
			b[i] = bytes.ToUpper(b[i : i+1])[0]
		}
		return string(b)
	}},
}

// rawExchange is one request written on a raw connection and what came back.
type rawExchange struct {
	resp httpResult
	head string // the response's head as sent: status line and header lines
}

// sendCased writes a request whose header names are cased by casing (values as given) and
// reads one response, keeping its head's bytes.
func sendCased(t *testing.T, c io.Writer, br *bufio.Reader, raw *bytes.Buffer, casing func(string) string, start string, headers [][2]string, body string) rawExchange {
	t.Helper()
	var b strings.Builder
	b.WriteString(start + "\r\n")
	for _, h := range headers {
		fmt.Fprintf(&b, "%s: %s\r\n", casing(h[0]), h[1])
	}
	b.WriteString("\r\n" + body)
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
	return readRaw(t, br, raw)
}

// readRaw reads one response from br, whose bytes raw records as they are read.
func readRaw(t *testing.T, br *bufio.Reader, raw *bytes.Buffer) rawExchange {
	t.Helper()
	raw.Reset()
	r := readResponse(t, br)
	head, _, _ := strings.Cut(raw.String(), "\r\n\r\n")
	return rawExchange{resp: r, head: head}
}

// headerNames returns the names of a response head's header lines.
func headerNames(head string) []string {
	var names []string
	for _, line := range strings.Split(head, "\r\n")[1:] {
		if name, _, ok := strings.Cut(line, ":"); ok {
			names = append(names, name)
		}
	}
	return names
}

// TestServer_HeaderNamesAnyCase: every request header the gateway or fasthttp reads by
// name works whatever case the client writes its name in (the server does not normalize
// names: foldHeaderNames), through the real server on raw connections: the credential in
// Authorization or X-Api-Key, X-Request-Id, Expect: 100-continue (refused from the
// headers, and accepted), Connection: close, an HTTP/1.0 Connection: keep-alive,
// Transfer-Encoding: chunked, Content-Length, Content-Type and Host, a WebSocket
// handshake's Connection, Upgrade and Sec-WebSocket-* names, and the Messages
// passthrough's anthropic-version and anthropic-beta. The response's header names are
// written canonically, as before.
func TestServer_HeaderNamesAnyCase(t *testing.T) {
	t.Parallel() // its own gateways and fakes (#54)
	g := startGateway(t, bodyLimitConfig, nil)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { replayJSON(200, []byte(anthropicMessage))(w, r) })
	gm := startGateway(t, `
backends:
  claude: {type: anthropic, base_url: "{{URL}}", api_key: upstream-secret}
models:
  m-claude: {backend: claude, upstream_model: claude-x}
keys:
  alice: {key: sk-alice, models: ["*"]}
`, map[string]string{"URL": up.Server.URL})
	const post = "POST /v1/chat/completions HTTP/1.1"
	length := fmt.Sprint(len(helloDemo))
	hostJSON := [][2]string{{"Host", "gw"}, {"Content-Type", "application/json"}}
	with := func(extra ...[2]string) [][2]string { return append(append([][2]string{}, hostJSON...), extra...) }
	chunked := fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(helloDemo), helloDemo)
	for _, casing := range headerCasings {
		t.Run(casing.name, func(t *testing.T) {
			t.Parallel() // each casing on its own connections
			dial := func(g *gateway) (io.Writer, *bufio.Reader, *bytes.Buffer) {
				c := dialGateway(t, g)
				raw := &bytes.Buffer{}
				return c, bufio.NewReader(io.TeeReader(c, raw)), raw
			}
			send := func(g *gateway, start string, headers [][2]string, body string) (rawExchange, io.Writer, *bufio.Reader, *bytes.Buffer) {
				c, br, raw := dial(g)
				return sendCased(t, c, br, raw, casing.of, start, headers, body), c, br, raw
			}
			wantStatus := func(what string, x rawExchange, want int) {
				t.Helper()
				if x.resp.status != want {
					t.Errorf("%s: status %d, want %d: %s", what, x.resp.status, want, x.resp.body)
				}
				for _, name := range headerNames(x.head) {
					if got := string(fasthttp.AppendNormalizedHeaderKey(nil, name)); got != name && want != http.StatusSwitchingProtocols {
						t.Errorf("%s: response header %q is not canonical (%q)", what, name, got)
					}
				}
			}

			x, _, _, _ := send(g, post, with([2]string{"Authorization", "Bearer sk-alice"}, [2]string{"Content-Length", length}), helloDemo)
			wantStatus("Authorization", x, 200)
			x, _, _, _ = send(g, post, with([2]string{"X-Api-Key", "sk-alice"}, [2]string{"Content-Length", length}), helloDemo)
			wantStatus("X-Api-Key", x, 200)
			x, _, _, _ = send(g, post, with([2]string{"Authorization", "Bearer sk-wrong"}, [2]string{"Content-Length", length}), helloDemo)
			wantStatus("a wrong key", x, 401)

			x, _, _, _ = send(g, post, with([2]string{"Authorization", "Bearer sk-alice"}, [2]string{"X-Request-Id", "rid-" + casing.name}, [2]string{"Content-Length", length}), helloDemo)
			wantStatus("X-Request-Id", x, 200)
			if got := x.resp.header.Get("X-Request-Id"); got != "rid-"+casing.name {
				t.Errorf("X-Request-Id: the answer's is %q, want the client's %q", got, "rid-"+casing.name)
			}

			// Expect: refused from the headers (no key: the final answer instead of 100
			// Continue), and accepted (100 Continue, then the answer to the body).
			x, _, _, _ = send(g, post, with([2]string{"Expect", "100-continue"}, [2]string{"Content-Length", "100"}), "")
			wantStatus("Expect, no key", x, 401)
			x, c, br, raw := send(g, post, with([2]string{"Authorization", "Bearer sk-alice"}, [2]string{"Expect", "100-continue"}, [2]string{"Content-Length", length}), "")
			wantStatus("Expect, accepted", x, 100)
			if x.resp.status == 100 {
				io.WriteString(c, helloDemo)
				wantStatus("Expect, the body after 100 Continue", readRaw(t, br, raw), 200)
			}

			x, _, br, _ = send(g, post, with([2]string{"Authorization", "Bearer sk-alice"}, [2]string{"Connection", "close"}, [2]string{"Content-Length", length}), helloDemo)
			wantStatus("Connection: close", x, 200)
			if x.resp.header.Get("Connection") != "close" {
				t.Errorf("Connection: close: the answer's Connection is %q", x.resp.header.Get("Connection"))
			}
			if n, err := br.Read(make([]byte, 1)); err != io.EOF {
				t.Errorf("Connection: close: the connection stays open (read %d, %v)", n, err)
			}

			old := with([2]string{"Authorization", "Bearer sk-alice"}, [2]string{"Connection", "keep-alive"}, [2]string{"Content-Length", length})
			x, c, br, raw = send(g, "POST /v1/chat/completions HTTP/1.0", old, helloDemo)
			wantStatus("HTTP/1.0 keep-alive", x, 200)
			if got := x.resp.header.Get("Connection"); got != "keep-alive" {
				t.Errorf("HTTP/1.0 keep-alive: the answer's Connection is %q, want keep-alive", got)
			}
			if x.resp.status == 200 {
				x = sendCased(t, c, br, raw, casing.of, "POST /v1/chat/completions HTTP/1.0", old, helloDemo)
				wantStatus("HTTP/1.0 keep-alive, a second request", x, 200)
			}

			x, _, _, _ = send(g, post, with([2]string{"Authorization", "Bearer sk-alice"}, [2]string{"Transfer-Encoding", "chunked"}), chunked)
			wantStatus("Transfer-Encoding: chunked", x, 200)
			x, _, _, _ = send(g, post, with([2]string{"Authorization", "Bearer sk-alice"}, [2]string{"Content-Length", length}, [2]string{"Content-Length", length}), helloDemo)
			wantStatus("two Content-Lengths", x, 400)

			x, _, _, _ = send(g, "GET /v1/responses HTTP/1.1", [][2]string{{"Host", "gw"}, {"Authorization", "Bearer sk-alice"},
				{"Connection", "Upgrade"}, {"Upgrade", "websocket"}, {"Sec-WebSocket-Version", "13"},
				{"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}}, "")
			wantStatus("a WebSocket handshake", x, http.StatusSwitchingProtocols)
			x, _, _, _ = send(g, "GET /v1/responses HTTP/1.1", [][2]string{{"Host", "gw"}, {"Authorization", "Bearer sk-alice"},
				{"Connection", "Upgrade"}, {"Upgrade", "websocket"}, {"Sec-WebSocket-Version", "12"},
				{"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}}, "")
			wantStatus("a WebSocket handshake of version 12", x, 400)

			body := `{"model":"m-claude","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`
			x, _, _, _ = send(gm, "POST /v1/messages HTTP/1.1", with([2]string{"X-Api-Key", "sk-alice"}, [2]string{"Anthropic-Version", "2023-01-01-" + casing.name},
				[2]string{"Anthropic-Beta", "claude-code-20250219"},
				[2]string{"Content-Length", fmt.Sprint(len(body))}), body)
			wantStatus("Messages passthrough", x, 200)
			for _, call := range up.calls() {
				if call.Header.Get("Anthropic-Version") != "2023-01-01-"+casing.name {
					continue
				}
				if got := call.Header.Get("Anthropic-Beta"); got != "claude-code-20250219" {
					t.Errorf("Messages passthrough: upstream anthropic-beta %q, want the client's", got)
				}
				return
			}
			t.Errorf("Messages passthrough: no upstream call with the client's anthropic-version 2023-01-01-%s", casing.name)
		})
	}
}
