package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/tools"
)

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// keysConfig has a plaintext key with globs, a key_sha256 key, and mock models.
var keysConfig = `
server: {max_body_bytes: 4096}
backends:
  offline: {type: mock}
models:
  demo: {backend: offline}
  secret: {backend: offline}
  claude-x: {backend: offline}
keys:
  alice: {key: sk-alice, models: ["demo", "claude-*", "offline/*"]}
  bob: {key_sha256: "` + sha256Hex("sk-bob") + `", models: ["secret"]}
`

const helloDemo = `{"model":"demo","messages":[{"role":"user","content":"hi"}]}`

func TestErrors(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	g := startGateway(t, keysConfig, nil)
	tests := []struct {
		name    string
		method  string
		path    string
		key     string
		body    string
		want    errorView
		message string // a substring of the message, when it matters
	}{
		{name: "malformed JSON", body: `{"model":"demo","messages":[`,
			want: errorView{Status: 400, Type: "invalid_request_error"}, message: "not valid JSON"},
		{name: "body not an object", body: `[1,2]`,
			want: errorView{Status: 400, Type: "invalid_request_error"}},
		{name: "empty body", body: ``,
			want: errorView{Status: 400, Type: "invalid_request_error"}, message: "empty"},
		{name: "missing messages", body: `{"model":"demo"}`,
			want: errorView{Status: 400, Type: "invalid_request_error", Param: "messages"}},
		{name: "empty messages", body: `{"model":"demo","messages":[]}`,
			want: errorView{Status: 400, Type: "invalid_request_error", Param: "messages"}},
		{name: "missing model", body: `{"messages":[{"role":"user","content":"hi"}]}`,
			want: errorView{Status: 400, Type: "invalid_request_error", Param: "model"}},
		{name: "model not a string", body: `{"model":5,"messages":[{"role":"user","content":"hi"}]}`,
			want: errorView{Status: 400, Type: "invalid_request_error", Param: "model"}},
		{name: "messages not an array", body: `{"model":"demo","messages":"hi"}`,
			want: errorView{Status: 400, Type: "invalid_request_error", Param: "messages"}},
		{name: "stream not a boolean", body: `{"model":"demo","stream":"yes","messages":[{"role":"user","content":"hi"}]}`,
			want: errorView{Status: 400, Type: "invalid_request_error", Param: "stream"}},
		{name: "temperature not a number", body: `{"model":"demo","temperature":"hot","messages":[{"role":"user","content":"hi"}]}`,
			want: errorView{Status: 400, Type: "invalid_request_error", Param: "temperature"}},
		{name: "role not a string", body: `{"model":"demo","messages":[{"role":7,"content":"hi"}]}`,
			want: errorView{Status: 400, Type: "invalid_request_error", Param: "messages[0].role"}},
		{name: "content part type", body: `{"model":"demo","messages":[{"role":"user","content":[{"type":"video"}]}]}`,
			want: errorView{Status: 400, Type: "invalid_request_error", Param: "messages[0].content[0].type"}},
		{name: "oversize body", body: `{"model":"demo","messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`,
			want: errorView{Status: 413, Type: "invalid_request_error", Code: "request_too_large"}, message: "max_body_bytes"},
		{name: "unknown model", body: `{"model":"gpt-9","messages":[{"role":"user","content":"hi"}]}`,
			want: errorView{Status: 404, Type: "invalid_request_error", Param: "model", Code: "model_not_found"}, message: "gpt-9"},
		{name: "unknown backend in direct route", body: `{"model":"nope/x","messages":[{"role":"user","content":"hi"}]}`,
			want: errorView{Status: 404, Type: "invalid_request_error", Param: "model", Code: "model_not_found"}},
		{name: "no key", key: "-", body: helloDemo,
			want: errorView{Status: 401, Type: "invalid_request_error", Code: "invalid_api_key"}},
		{name: "unknown key", key: "sk-mallory", body: helloDemo,
			want: errorView{Status: 401, Type: "invalid_request_error", Code: "invalid_api_key"}},
		{name: "key digest is not a key", key: sha256Hex("sk-bob"), body: helloDemo,
			want: errorView{Status: 401, Type: "invalid_request_error", Code: "invalid_api_key"}},
		{name: "model not allowed is not found", key: "sk-bob", body: helloDemo,
			want: errorView{Status: 404, Type: "invalid_request_error", Param: "model", Code: "model_not_found"}, message: "does not exist or you do not have access to it"},
		{name: "models with no key", key: "-", method: "GET", path: "/v1/models",
			want: errorView{Status: 401, Type: "invalid_request_error", Code: "invalid_api_key"}},
		{name: "wrong method on chat", method: "GET", path: "/v1/chat/completions",
			want: errorView{Status: 405, Type: "invalid_request_error", Code: "method_not_allowed"}},
		{name: "wrong method on models", method: "DELETE", path: "/v1/models",
			want: errorView{Status: 405, Type: "invalid_request_error", Code: "method_not_allowed"}},
		{name: "unknown route", method: "POST", path: "/v1/completions", body: `{}`,
			want: errorView{Status: 404, Type: "invalid_request_error", Code: "not_found"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method, path, key := tt.method, tt.path, tt.key
			if method == "" {
				method = "POST"
			}
			if path == "" {
				path = "/v1/chat/completions"
			}
			switch key {
			case "":
				key = "sk-alice"
			case "-":
				key = ""
			}
			var body []byte
			if method == "POST" {
				body = []byte(tt.body)
			}
			r := g.do(method, path, key, body)
			got := decodeError(t, r)
			if !strings.Contains(got.Message, tt.message) {
				t.Errorf("message %q does not contain %q", got.Message, tt.message)
			}
			got.Message = ""
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("error (-want +got):\n%s\nbody: %s", diff, r.body)
			}
			if tt.want.Status == 405 && r.header.Get("Allow") == "" {
				t.Error("405 without an Allow header")
			}
			if strings.Contains(string(r.body), "sk-") {
				t.Errorf("error body leaks a key: %s", r.body)
			}
		})
	}
	if logs := g.logText(); strings.Contains(logs, "sk-alice") || strings.Contains(logs, "sk-bob") || strings.Contains(logs, "sk-mallory") {
		t.Errorf("logs contain a client key:\n%s", logs)
	}
}

// TestErrors_SDK checks that the SDK surfaces gateway errors as *openai.Error.
func TestErrors_SDK(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	g := startGateway(t, keysConfig, nil)
	tests := []struct {
		name   string
		key    string
		model  string
		status int
		code   string
		param  string
	}{
		{name: "unknown key", key: "sk-mallory", model: "demo", status: 401, code: "invalid_api_key"},
		{name: "forbidden is not found", key: "sk-alice", model: "secret", status: 404, code: "model_not_found", param: "model"},
		{name: "unknown model", key: "sk-alice", model: "gpt-9", status: 404, code: "model_not_found", param: "model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := g.client(tt.key)
			_, err := client.Chat.Completions.New(context.Background(), userParams(tt.model, "hi"))
			e := sdkError(t, err)
			got := errorView{Status: e.StatusCode, Code: e.Code, Param: e.Param}
			if diff := cmp.Diff(errorView{Status: tt.status, Code: tt.code, Param: tt.param}, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestKeys(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	g := startGateway(t, keysConfig, nil)
	tests := []struct {
		name   string
		key    string
		model  string
		status int
	}{
		{name: "plaintext key, exact model", key: "sk-alice", model: "demo", status: 200},
		{name: "plaintext key, glob", key: "sk-alice", model: "claude-x", status: 200},
		{name: "plaintext key, direct route glob", key: "sk-alice", model: "offline/anything", status: 200},
		{name: "plaintext key, not allowed", key: "sk-alice", model: "secret", status: 404},
		{name: "sha256 key", key: "sk-bob", model: "secret", status: 200},
		{name: "sha256 key, not allowed", key: "sk-bob", model: "claude-x", status: 404},
		{name: "bearer is case-insensitive", key: "sk-alice", model: "demo", status: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := g.chat(tt.key, `{"model":"`+tt.model+`","messages":[{"role":"user","content":"hi"}]}`)
			if r.status != tt.status {
				t.Errorf("status %d, want %d: %s", r.status, tt.status, r.body)
			}
		})
	}
	// "bearer" in lower case, as some clients send it.
	r := g.do("POST", "/v1/chat/completions", "", []byte(helloDemo), "Authorization", "bearer sk-alice")
	if r.status != 200 {
		t.Errorf("lower-case bearer: status %d: %s", r.status, r.body)
	}
}

func TestKeys_OpenMode(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	g := startGateway(t, `
backends: {offline: {type: mock}}
models: {demo: {backend: offline}}
`, nil)
	for _, key := range []string{"", "anything"} {
		if r := g.chat(key, helloDemo); r.status != 200 {
			t.Errorf("key %q: status %d: %s", key, r.status, r.body)
		}
	}
	if !strings.Contains(g.logText(), "open") {
		t.Errorf("no open-mode warning in the logs:\n%s", g.logText())
	}
	client := g.client("")
	page, err := client.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || page.Data[0].ID != "demo" {
		t.Errorf("models in open mode: %s", page.RawJSON())
	}
}

func TestModels(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	g := startGateway(t, keysConfig, nil)
	tests := []struct {
		key  string
		want []string
	}{
		{key: "sk-alice", want: []string{"claude-x", "demo"}},
		{key: "sk-bob", want: []string{"secret"}},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			client := g.client(tt.key)
			page, err := client.Models.List(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range page.Data {
				got = append(got, m.ID)
				if m.Object != "model" || m.OwnedBy != "offline" {
					t.Errorf("model %s: object %q owned_by %q", m.ID, m.Object, m.OwnedBy)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("models (-want +got):\n%s", diff)
			}
			r := g.do("GET", "/v1/models", tt.key, nil)
			var list struct {
				Object string            `json:"object"`
				Data   []json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal(r.body, &list); err != nil || list.Object != "list" {
				t.Errorf("not an OpenAI list: %s", r.body)
			}
		})
	}
}

func TestRequestID(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	g := startGateway(t, keysConfig, nil)
	r := g.chat("sk-alice", helloDemo, "X-Request-Id", "req-from-client-42")
	if got := r.header.Get("X-Request-Id"); got != "req-from-client-42" {
		t.Errorf("X-Request-Id = %q, want the client's", got)
	}
	if !strings.Contains(g.logText(), `"request_id":"req-from-client-42"`) {
		t.Errorf("the request id is not in the logs:\n%s", g.logText())
	}
	r = g.chat("sk-alice", helloDemo)
	if got := r.header.Get("X-Request-Id"); len(got) < 16 {
		t.Errorf("generated X-Request-Id = %q", got)
	}
	// An unusable client id (control characters, too long) is replaced.
	r = g.chat("sk-alice", helloDemo, "X-Request-Id", strings.Repeat("a", 200))
	if got := r.header.Get("X-Request-Id"); got == strings.Repeat("a", 200) || got == "" {
		t.Errorf("overlong X-Request-Id kept: %q", got)
	}
	// Errors carry it too.
	r = g.chat("sk-mallory", helloDemo, "X-Request-Id", "req-err-1")
	if got := r.header.Get("X-Request-Id"); got != "req-err-1" {
		t.Errorf("error response X-Request-Id = %q", got)
	}
}

// panickyTools is a ToolSet whose readiness check panics, to reach a handler panic.
type panickyTools struct{}

func (panickyTools) Call(context.Context, string, []byte) tools.Result { return tools.Result{} }
func (panickyTools) Resolve([]string) ([]tools.Definition, error)      { return nil, nil }
func (panickyTools) Ready() error                                      { panic("boom") }
func (panickyTools) Degraded() error                                   { return nil }

func TestPanicBecomes500(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	g := startGatewayWith(t, keysConfig, nil, gatewayOptions{tools: panickyTools{}})
	r := g.do("GET", "/readyz", "", nil, "X-Request-Id", "req-panic-1")
	got := decodeError(t, r)
	if got.Status != 500 || got.Type != "api_error" || got.Code != "internal_error" || !strings.Contains(got.Message, "req-panic-1") {
		t.Errorf("panic rendered as %+v, want a 500 api_error naming the request id", got)
	}
	if strings.Contains(got.Message, "boom") {
		t.Errorf("panic detail leaked to the client: %q", got.Message)
	}
	if !strings.Contains(g.logText(), "boom") {
		t.Error("the panic is not logged")
	}
	// The server lives on.
	if r := g.chat("sk-alice", helloDemo); r.status != 200 {
		t.Errorf("after the panic: status %d", r.status)
	}
}

func TestHealth(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	g := startGateway(t, keysConfig, nil)
	for _, path := range []string{"/healthz", "/readyz"} {
		if r := g.do("GET", path, "", nil); r.status != 200 {
			t.Errorf("%s: %d %s", path, r.status, r.body)
		}
	}
}
