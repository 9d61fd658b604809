package proxy

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"
)

// TestPassthrough_NotAChatCompletion: a 200 whose body is not a JSON chat completion is a
// 502 that names the backend, never a 200 carrying the body.
func TestPassthrough_NotAChatCompletion(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	text := fixture(t, "json/text.mirascope.json")
	tests := []struct {
		name        string
		contentType string
		body        []byte
		want        errorView
	}{
		{name: "html page from a proxy", contentType: "text/html",
			body: []byte("<html><body><h1>502 Bad Gateway</h1></body></html>"),
			want: errorView{Status: 502, Type: "api_error"}},
		{name: "truncated json", contentType: "application/json", body: text[:len(text)/2],
			want: errorView{Status: 502, Type: "api_error"}},
		{name: "json array", contentType: "application/json", body: []byte(`[` + string(text) + `]`),
			want: errorView{Status: 502, Type: "api_error"}},
		{name: "object without choices", contentType: "application/json", body: []byte(`{"id":"x","object":"list","data":[]}`),
			want: errorView{Status: 502, Type: "api_error"}},
		{name: "empty body", contentType: "application/json", body: nil,
			want: errorView{Status: 502, Type: "api_error"}},
		{name: "error object with status 200", contentType: "application/json",
			body: []byte(`{"error":{"message":"the engine is overloaded","type":"server_error","code":"overloaded"}}`),
			want: errorView{Status: 502, Type: "server_error", Code: "overloaded", Message: "the engine is overloaded"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.contentType)
				w.WriteHeader(200)
				w.Write(tt.body)
			})
			g := passthroughGateway(t, up)
			got := decodeError(t, g.chat("sk-alice", rawBody(t, userParams("gpt", "hi"), false)))
			if tt.want.Message == "" {
				if !strings.Contains(got.Message, "backend up") {
					t.Errorf("message %q does not name the backend", got.Message)
				}
				got.Message = ""
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPassthrough_StreamEventNotJSON: a data payload that is not a JSON object, in a
// stream that parses otherwise, is skipped (issue #47 changed this: it used to end the
// stream with an error): the client gets the other chunks and a clean end. Seventeen in
// one stream are one too many (the translated streams' bound): the stream ends with an
// in-band error naming the backend after what was already sent, never with a clean end.
func TestPassthrough_StreamEventNotJSON(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	good := `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}` + "\n\n"
	tail := `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
	tests := []struct {
		name       string
		upstream   string
		wantChunks int  // chunks the client gets, [DONE] included
		wantError  bool // then an in-band error
	}{
		{name: "html after a chunk", upstream: good + "data: <html>upstream proxy error</html>\n\n" + tail, wantChunks: 3},
		{name: "truncated json after a chunk", upstream: good + `data: {"id":"chatcmpl-1","choices":[{"delta":{"content":"x"` + "\n\n" + tail, wantChunks: 3},
		{name: "json array after a chunk", upstream: good + "data: [1,2]\n\n" + tail, wantChunks: 3},
		{name: "not json first", upstream: "data: upstream says hello\n\n" + good + tail, wantChunks: 3},
		{name: "seventeen after a chunk", upstream: good + strings.Repeat("data: <html>upstream proxy error</html>\n\n", 17) + tail,
			wantChunks: 1, wantError: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, replaySSE([]byte(tt.upstream)))
			g := passthroughGateway(t, up)
			r := g.chat("sk-alice", rawBody(t, userParams("gpt", "hi"), true))
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			data := sseData(t, r.body)
			want := tt.wantChunks
			if tt.wantError {
				want++
			}
			if len(data) != want {
				t.Fatalf("got %d events, want %d chunks (and an error: %v):\n%s", len(data), tt.wantChunks, tt.wantError, r.body)
			}
			last := data[len(data)-1]
			if !tt.wantError {
				if last != "[DONE]" {
					t.Errorf("last event %s; want [DONE]", last)
				}
				return
			}
			var e apiErrorBody
			if err := json.Unmarshal([]byte(last), &e); err != nil || !strings.Contains(e.Error.Message, "backend up") {
				t.Errorf("last event is not an error naming backend up: %s", last)
			}
		})
	}
}

// TestPassthrough_AzurePromptFilterChunk replays Azure's stream, whose first chunk (the
// prompt filter results) has an empty id, created 0 and no object: every chunk the client
// gets has the same id, created, model and object.
func TestPassthrough_AzurePromptFilterChunk(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	var sse []byte
	for _, line := range bytes.Split(bytes.TrimSpace(fixture(t, "stream/azure-model-router.vercel.chunks.txt")), []byte("\n")) {
		sse = append(append(append(sse, "data: "...), line...), "\n\n"...)
	}
	sse = append(sse, "data: [DONE]\n\n"...)
	for _, includeUsage := range []bool{false, true} {
		name := "without usage"
		if includeUsage {
			name = "with usage"
		}
		t.Run(name, func(t *testing.T) {
			up := newUpstream(t, replaySSE(sse))
			g := passthroughGateway(t, up)
			body := rawBody(t, userParams("gpt", "What is the capital of France?"), true)
			if includeUsage {
				body = `{"stream_options":{"include_usage":true},` + body[1:]
			}
			r := g.chat("sk-alice", body)
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			checkChunkInvariants(t, r.body, "gpt", includeUsage)
			data := sseData(t, r.body)
			var first struct {
				ID                  string            `json:"id"`
				PromptFilterResults []json.RawMessage `json:"prompt_filter_results"`
			}
			if err := json.Unmarshal([]byte(data[0]), &first); err != nil || len(first.PromptFilterResults) != 1 {
				t.Errorf("first chunk lost its prompt_filter_results: %s", data[0])
			}
			if !strings.HasPrefix(first.ID, "chatcmpl-") {
				t.Errorf("first chunk id %q", first.ID)
			}
		})
	}
}

// TestUpstreamCredentialRejected: every backend's recorded answer to a bad API key (an
// Anthropic 401, a Gemini 400 API_KEY_INVALID, OpenAI and Responses 401s) is a 502 saying
// the gateway's credential was rejected; the client's own key is not in question.
func TestUpstreamCredentialRejected(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	golden := func(path string) (int, []byte) {
		ar, err := txtar.ParseFile(filepath.Join("..", "translate", path))
		if err != nil {
			t.Fatal(err)
		}
		status := 401
		if bytes.Contains(ar.Comment, []byte("status: 400")) {
			status = 400
		}
		for _, f := range ar.Files {
			if f.Name == "upstream.json" {
				return status, f.Data
			}
		}
		t.Fatalf("%s has no upstream.json", path)
		return 0, nil
	}
	openAI401, err := os.ReadFile(filepath.Join("testdata", "openai-chat", "errors", "401-auth.mirascope.json"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, kind, upstreamModel string
		status                    int
		body                      []byte
	}{
		{name: "openai 401", kind: "openai", upstreamModel: "gpt-4o", status: 401, body: openAI401},
	}
	for _, g := range []struct{ name, kind, model, path string }{
		{"anthropic 401", "anthropic", "claude-sonnet-4-0", "anthropic/testdata/error-401-auth.txtar"},
		{"gemini 400 API_KEY_INVALID", "gemini", "gemini-2.5-flash", "gemini/testdata/errors-400-api-key-invalid.mirascope.txtar"},
		{"responses 401", "responses", "gpt-5", "responses/testdata/error-401-auth.txtar"},
	} {
		status, body := golden(g.path)
		tests = append(tests, struct {
			name, kind, upstreamModel string
			status                    int
			body                      []byte
		}{g.name, g.kind, g.model, status, body})
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			name := tt.name
			if stream {
				name += " stream"
			}
			t.Run(name, func(t *testing.T) {
				if tt.kind == "gemini" && tt.status != 400 {
					t.Fatalf("gemini recording has status %d, want 400", tt.status)
				}
				up := newUpstream(t, replayJSON(tt.status, tt.body))
				g := startGateway(t, `
backends:
  up: {type: `+tt.kind+`, base_url: "{{UP}}", api_key: gateway-secret, retries: {max: 0}}
models:
  m: {backend: up, upstream_model: `+tt.upstreamModel+`}
keys:
  alice: {key: sk-alice, models: ["*"]}
`, map[string]string{"UP": up.v1()})
				got := decodeError(t, g.chat("sk-alice", rawBody(t, userParams("m", "hi"), stream)))
				want := errorView{Status: 502, Type: "api_error", Code: "upstream_auth_failed",
					Message: "the upstream of backend up rejected the gateway's credential: the gateway operator must check backends.up.api_key"}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
				if strings.Contains(g.logText(), "gateway-secret") {
					t.Errorf("the log holds the gateway's key:\n%s", g.logText())
				}
			})
		}
	}
}
