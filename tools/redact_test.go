package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestRedactURLs(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{name: "no URL", in: "dial tcp 127.0.0.1:80: connect: connection refused", want: "dial tcp 127.0.0.1:80: connect: connection refused"},
		{name: "host only stays", in: "https://mcp.example.com", want: "https://mcp.example.com"},
		{name: "query", in: `Post "http://h:1/mcp?token=secret": EOF`, want: `Post "http://h:1/[redacted]": EOF`},
		{name: "user information", in: "GET https://u:p%40ss@h/x failed", want: "GET https://h/[redacted] failed"},
		{name: "password with slash and question mark", in: "https://u:a/b?c@h/x", want: "https://h/[redacted]"},
		{name: "secret in the path", in: "https://actions.example.com/mcp/sk-123/sse", want: "https://actions.example.com/[redacted]"},
		{name: "fragment", in: "http://h#frag", want: "http://h/[redacted]"},
		{name: "two URLs", in: "a http://h/1?k=1 then 'wss://g/2' end", want: "a http://h/[redacted] then 'wss://g/[redacted]' end"},
		{name: "JSON-escaped quote ends the URL", in: `{"error":"Post \"http://h/p?t=s\": EOF"}`, want: `{"error":"Post \"http://h/[redacted]\": EOF"}`},
		{name: "URL inside the query is part of it", in: "http://h/?next=http://evil/?t=s", want: "http://h/[redacted]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, redactURLs(tt.in)); diff != "" {
				t.Errorf("redactURLs(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

// FuzzRedactURLs checks that a secret placed in any part of a URL never survives, whatever
// surrounds it, and that redacting is idempotent.
func FuzzRedactURLs(f *testing.F) {
	f.Add("Post \"", "h:1", "\": EOF")
	f.Add("", "example.com", "")
	f.Add("a://b ", "x@y", " c")
	f.Fuzz(func(t *testing.T, prefix, host, suffix string) {
		const secret = "SECRETzq"
		if strings.Contains(prefix+host+suffix, "zq") {
			return
		}
		for _, u := range []string{
			"http://" + host + "/" + secret,
			"http://" + host + "?t=" + secret,
			"http://" + host + "#" + secret,
			"https://" + secret + "@" + host,
			"https://u:" + secret + "@" + host + "/p",
		} {
			in := prefix + u + suffix
			// The URL ends where the scrubber says it ends; make sure that is after the secret.
			if strings.ContainsAny(host, " \t\r\n\"'`<>\\") {
				return
			}
			got := redactURLs(in)
			if strings.Contains(got, secret) {
				t.Fatalf("redactURLs(%q) = %q keeps the secret", in, got)
			}
			if again := redactURLs(got); again != got {
				t.Fatalf("not idempotent: %q then %q", got, again)
			}
		}
	})
}

func TestRedactingHandler(t *testing.T) {
	var buf bytes.Buffer
	l := newRedactingLogger(slog.New(slog.NewTextHandler(&buf, nil))).With("src", "http://h/p?t=s-with")
	l.Info("failed: http://h/?t=s-msg", "error", fmt.Errorf("post: %w", errors.New(`"http://u:s-err@h"`)),
		"url", "http://h/attr?t=s-attr", slog.Group("g", "u", "http://h/?t=s-group"), "n", 3)
	for _, secret := range []string{"s-with", "s-msg", "s-err", "s-attr", "s-group"} {
		if strings.Contains(buf.String(), secret) {
			t.Errorf("log line keeps %q: %s", secret, buf.String())
		}
	}
	if !strings.Contains(buf.String(), "n=3") {
		t.Errorf("log line lost a plain attribute: %s", buf.String())
	}
}

// lockedBuffer is an io.Writer for log handlers written from several goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestMCP_URLSecretsRedacted: a streamable-HTTP MCP server whose URL carries secrets in its
// user information, path and query fails, at start or on a call; neither the tool result
// the model sees, nor the start error, nor Ready's error, nor any log line contains them.
func TestMCP_URLSecretsRedacted(t *testing.T) {
	tests := []struct {
		name        string
		brokenStart bool
		required    bool
	}{
		{name: "call fails after start"},
		{name: "required source fails at start", brokenStart: true, required: true},
		{name: "source fails at start and is retried", brokenStart: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := newTestMCPServer()
			h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms.server }, nil)
			var broken atomic.Bool
			broken.Store(tt.brokenStart)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if broken.Load() {
					// Drop the connection without an answer: the client's error quotes the URL.
					conn, _, err := http.NewResponseController(w).Hijack()
					if err == nil {
						conn.Close()
					}
					return
				}
				h.ServeHTTP(w, r)
			}))
			defer srv.Close()
			url := "http://user:pw-secret@" + srv.Listener.Addr().(*net.TCPAddr).String() + "/mcp/path-secret?token=secret"
			var logs lockedBuffer
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

			r, err := New(context.Background(), map[string]SourceOptions{"srv": {Type: "mcp", URL: url, Required: tt.required}}, CacheOptions{}, nil, logger)
			var seen []string // texts that reach a model, a client or an operator
			switch {
			case tt.brokenStart && !tt.required:
				if err != nil {
					t.Fatalf("New = %v, want the source retried in the background", err)
				}
				ready := r.anyDown()
				if ready == nil {
					t.Error("Ready = nil while the server is broken")
				} else {
					seen = append(seen, ready.Error())
				}
				r.Close()
			case tt.brokenStart:
				if err == nil {
					r.Close()
					t.Fatal("New succeeded against a broken server")
				}
				seen = append(seen, err.Error())
			default:
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				broken.Store(true)
				res := r.Call(context.Background(), "srv__fail", nil)
				if !res.IsError || !strings.HasPrefix(res.Content, "tool srv__fail failed: ") {
					t.Errorf("Call = %+v, want a tool failure", res)
				}
				seen = append(seen, res.Content)
				if err := r.anyDown(); err != nil {
					seen = append(seen, err.Error())
				}
			}
			seen = append(seen, logs.String())
			t.Logf("seen: %q", seen)
			for _, s := range seen {
				if strings.Contains(s, "secret") {
					t.Errorf("a secret of the MCP URL leaks: %s", s)
				}
			}
			if !strings.Contains(strings.Join(seen, "\n"), srv.Listener.Addr().String()) {
				t.Errorf("the failure no longer names the server's host: %q", seen)
			}
		})
	}
}
