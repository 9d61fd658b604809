package mcpserve

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agate-gateway/agate/tools"
)

// fakeRegistry is a Registry of two tools and no MCP sources.
type fakeRegistry struct{}

var fakeDefs = []tools.Definition{
	{Name: "zeta", Source: "zeta", Tool: "zeta", Description: "Last.", Parameters: json.RawMessage(`{"type":"object"}`)},
	{Name: "alpha", Source: "alpha", Tool: "alpha", Description: "First.", Parameters: json.RawMessage(`{"type":"object"}`), ReadOnly: true},
}

func (fakeRegistry) Resolve(names []string) ([]tools.Definition, error) {
	var out []tools.Definition
	for _, d := range fakeDefs {
		for _, n := range names {
			if n == d.Name {
				out = append(out, d)
			}
		}
	}
	return out, nil
}

func (fakeRegistry) Call(_ context.Context, name string, _ []byte) tools.Result {
	return tools.Result{Content: "ran " + name}
}
func (fakeRegistry) Hints(string) (tools.Hints, bool)                           { return tools.Hints{}, true }
func (fakeRegistry) MCPSources([]string) []string                               { return nil }
func (fakeRegistry) Resources(context.Context, string) ([]*mcp.Resource, error) { return nil, nil }
func (fakeRegistry) ResourceTemplates(context.Context, string) ([]*mcp.ResourceTemplate, error) {
	return nil, nil
}
func (fakeRegistry) ReadResource(context.Context, string, string) (*mcp.ReadResourceResult, error) {
	return nil, tools.ErrNoSuchSource
}
func (fakeRegistry) Prompts(context.Context, string) ([]*mcp.Prompt, error) { return nil, nil }
func (fakeRegistry) GetPrompt(context.Context, string, string, map[string]string) (*mcp.GetPromptResult, error) {
	return nil, tools.ErrNoSuchSource
}

// initializeBody is the initialize request of the MCP specification's lifecycle page
// (modelcontextprotocol.io/specification/2025-06-18/basic/lifecycle, "Initialization").
const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{"listChanged":true},"sampling":{},"elicitation":{}},"clientInfo":{"name":"ExampleClient","title":"Example Client Display Name","version":"1.0.0"}}}`

func post(h *Handler, key *Key, session, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Authorization", "Bearer the-client-credential")
	if session != "" {
		r.Header.Set("Mcp-Session-Id", session)
		r.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	w := httptest.NewRecorder()
	h.Serve(w, r, key)
	return w
}

// rpcError returns the JSON-RPC error code of an answer (JSON or one SSE event), 0 for none.
func rpcError(t *testing.T, body string) (int, string) {
	t.Helper()
	if i := strings.Index(body, "data: "); i >= 0 {
		body = strings.TrimSpace(strings.SplitN(body[i+len("data: "):], "\n", 2)[0])
	}
	var m struct {
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("answer is not JSON-RPC: %v\n%s", err, body)
	}
	if m.Error == nil {
		return 0, ""
	}
	return m.Error.Code, m.Error.Message
}

func initialize(t *testing.T, h *Handler, key *Key) string {
	t.Helper()
	w := post(h, key, "", initializeBody)
	if code, msg := rpcError(t, w.Body.String()); w.Code != 200 || code != 0 {
		t.Fatalf("initialize: %d %d %s", w.Code, code, msg)
	}
	s := w.Header().Get("Mcp-Session-Id")
	if w := post(h, key, s, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); w.Code != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", w.Code, w.Body)
	}
	return s
}

func TestHandler_Boundary(t *testing.T) {
	h := New(Options{Registry: fakeRegistry{}, MaxMessageBytes: 4096})
	key := &Key{Name: "k", Tools: []string{"zeta", "alpha"}}
	session := initialize(t, h, key)
	tests := []struct {
		name     string
		key      *Key
		body     string
		status   int
		code     int    // JSON-RPC error code; 0: a result
		contains string // in the answer
	}{
		{name: "tools sorted by name", key: key, body: `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, status: 200, contains: `"name":"alpha"`},
		{name: "a call", key: key, body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"zeta","arguments":{}}}`, status: 200, contains: "ran zeta"},
		{name: "a tool of no key", key: key, body: `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"omega","arguments":{}}}`, status: 200, code: -32602, contains: "unknown tool"},
		{name: "unknown method", key: key, body: `{"jsonrpc":"2.0","id":5,"method":"tools/destroy"}`, status: 400, code: -32601, contains: "tools/destroy"},
		{name: "not JSON", key: key, body: `{"id":`, status: 400, code: -32700},
		{name: "empty", key: key, body: ``, status: 400, code: -32600},
		{name: "oversized", key: key, body: `{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{"x":"` + strings.Repeat("x", 5000) + `"}}`, status: 413, code: CodeTooLarge},
		{name: "another key's session", key: &Key{Name: "other", Tools: []string{"zeta"}}, body: `{"jsonrpc":"2.0","id":6,"method":"tools/list"}`, status: 403, code: codeSession},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := post(h, tt.key, session, tt.body)
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.status, w.Body)
			}
			if code, msg := rpcError(t, w.Body.String()); code != tt.code {
				t.Errorf("error %d %q, want %d", code, msg, tt.code)
			}
			if !strings.Contains(w.Body.String(), tt.contains) {
				t.Errorf("answer %s lacks %q", w.Body, tt.contains)
			}
			if strings.Contains(w.Body.String(), "the-client-credential") {
				t.Errorf("the credential is in the answer: %s", w.Body)
			}
		})
	}
	t.Run("sorted", func(t *testing.T) {
		body := post(h, key, session, `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`).Body.String()
		if a, z := strings.Index(body, `"alpha"`), strings.Index(body, `"zeta"`); a < 0 || z < a {
			t.Errorf("tools/list not sorted: %s", body)
		}
	})
	t.Run("a key without tools is refused at initialize", func(t *testing.T) {
		w := post(h, &Key{Name: "empty"}, "", initializeBody)
		if code, msg := rpcError(t, w.Body.String()); code != codeNoTools || !strings.Contains(msg, `API key "empty" has no tools`) {
			t.Errorf("initialize: %d %q", code, msg)
		}
	})
}

// FuzzHandler: whatever a client posts (seeded with the specification's messages and
// broken variants), the handler answers with a JSON-RPC message or nothing (202), never a
// 5xx, never a panic; a body over MaxMessageBytes is refused (413) as it is read.
func FuzzHandler(f *testing.F) {
	for _, s := range []string{
		initializeBody,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"zeta","arguments":{"a":[1,2,{"b":null}]}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`,
		`{"jsonrpc":"2.0","id":"x","method":"resources/read","params":{"uri":"file:///x"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":1,"method":"nope"}`,
		`{"jsonrpc":"1.0","id":1}`,
		`{"id":`,
		``,
		`null`,
		strings.Repeat(`[`, 5000),
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	h := New(Options{Registry: fakeRegistry{}, MaxMessageBytes: 8192})
	key := &Key{Name: "k", Tools: []string{"zeta", "alpha"}}
	var session string
	f.Fuzz(func(t *testing.T, body string, inSession bool) {
		if session == "" {
			session = initialize(t, h, key)
		}
		s := ""
		if inSession {
			s = session
		}
		w := post(h, key, s, body)
		switch {
		case len(body) > 8192 && w.Code != http.StatusRequestEntityTooLarge:
			t.Fatalf("a %d-byte body answered %d", len(body), w.Code)
		case w.Code >= 500:
			t.Fatalf("status %d: %s", w.Code, w.Body)
		case w.Body.Len() > 0 && !strings.Contains(w.Body.String(), `"jsonrpc":"2.0"`):
			t.Fatalf("an answer (%d) that is no JSON-RPC message: %s", w.Code, w.Body)
		}
	})
}
