package proxy

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
)

// completionJSON is an OpenAI completion answering text.
func completionJSON(model, text string) []byte {
	return fmt.Appendf(nil, `{"id":"chatcmpl-up","object":"chat.completion","created":1766084435,"model":%q,`+
		`"choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],`+
		`"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`, model, text)
}

// chunkJSON is one OpenAI chunk; delta and finish are raw JSON.
func chunkJSON(delta, finish string) string {
	return `{"id":"chatcmpl-up","object":"chat.completion.chunk","created":1766084435,"model":"up-model",` +
		`"choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}`
}

const usageChunk = `{"id":"chatcmpl-up","object":"chat.completion.chunk","created":1766084435,"model":"up-model","choices":[],` +
	`"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":3}}}`

// streamSSE is an OpenAI stream of the words, with a usage chunk and [DONE].
func streamSSE(words ...string) []byte {
	var b strings.Builder
	b.WriteString("data: " + chunkJSON(`{"role":"assistant","content":""}`, "null") + "\n\n")
	for _, w := range words {
		b.WriteString("data: " + chunkJSON(`{"content":"`+w+`"}`, "null") + "\n\n")
	}
	b.WriteString("data: " + chunkJSON(`{}`, `"stop"`) + "\n\n")
	b.WriteString("data: " + usageChunk + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return []byte(b.String())
}

// okUpstream answers streams with streamSSE and other requests with completionJSON.
func okUpstream(text string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if gjsonBool(r, "stream") {
			replaySSE(streamSSE(strings.Fields(text)...))(w, r)
			return
		}
		replayJSON(200, completionJSON("up-model", text))(w, r)
	}
}

// gjsonBool reads a boolean of the request body, which upstream already read and put in
// the request context.
func gjsonBool(r *http.Request, path string) bool {
	b, _ := r.Context().Value(bodyKey{}).([]byte)
	return gjson.GetBytes(b, path).Bool()
}

func failWith(status int, msg string, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		replayJSON(status, fmt.Appendf(nil, `{"error":{"message":%q,"type":"server_error","param":null,"code":null}}`, msg))(w, r)
	}
}

// journal records which upstream answered, in order, across upstreams.
type journal struct {
	mu    sync.Mutex
	order []string
}

func (j *journal) note(name string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		j.mu.Lock()
		j.order = append(j.order, name)
		j.mu.Unlock()
		h(w, r)
	}
}

func (j *journal) get() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.order...)
}

const routingConfig = `
backends:
  primary: {type: openai, base_url: "{{P}}", retries: {max: 0}}
  second: {type: openai, base_url: "{{S}}", retries: {max: 0}}
  third: {type: openai, base_url: "{{T}}", retries: {max: 0}}
models:
  main: {backend: primary, upstream_model: p-model, fallbacks: [backup1, backup2]}
  backup1: {backend: second, upstream_model: s-model}
  backup2: {backend: third, upstream_model: t-model}
`

func TestRouting_Direct(t *testing.T) {
	up := newUpstream(t, okUpstream("direct answer"))
	g := startGateway(t, routingConfig, map[string]string{"P": up.v1(), "S": up.v1(), "T": up.v1()})
	client := g.client("")
	c, err := client.Chat.Completions.New(context.Background(), userParams("second/my-custom-model", "hi"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Model != "second/my-custom-model" || c.Choices[0].Message.Content != "direct answer" {
		t.Errorf("got model %q content %q", c.Model, c.Choices[0].Message.Content)
	}
	if m := gjson.GetBytes(up.calls()[0].Body, "model").String(); m != "my-custom-model" {
		t.Errorf("upstream model = %q, want my-custom-model", m)
	}
}

func TestRouting_Fallbacks(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	tests := []struct {
		name                   string
		primary, second, third http.HandlerFunc
		stream                 bool
		wantOrder              []string
		wantStatus             int // 0: success
		wantContent            string
		wantUpstreamModels     []string
	}{
		{name: "primary ok",
			primary: okUpstream("from primary"), second: okUpstream("from second"), third: okUpstream("from third"),
			wantOrder: []string{"primary"}, wantContent: "from primary"},
		{name: "primary 503, second ok",
			primary: failWith(503, "overloaded"), second: okUpstream("from second"), third: okUpstream("from third"),
			wantOrder: []string{"primary", "second"}, wantContent: "from second"},
		{name: "primary and second 503, third ok",
			primary: failWith(503, "overloaded"), second: failWith(503, "overloaded too"), third: okUpstream("from third"),
			wantOrder: []string{"primary", "second", "third"}, wantContent: "from third"},
		{name: "stream: primary and second 503, third ok", stream: true,
			primary: failWith(503, "overloaded"), second: failWith(503, "overloaded too"), third: okUpstream("from third"),
			wantOrder: []string{"primary", "second", "third"}, wantContent: "from third"},
		{name: "all fail: the last error is returned",
			primary: failWith(503, "a"), second: failWith(502, "b"), third: failWith(500, "the last"),
			wantOrder: []string{"primary", "second", "third"}, wantStatus: 500},
		{name: "primary 400 is not a reason to fall back",
			primary: failWith(400, "bad request"), second: okUpstream("from second"), third: okUpstream("from third"),
			wantOrder: []string{"primary"}, wantStatus: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var j journal
			p := newUpstream(t, j.note("primary", tt.primary))
			s := newUpstream(t, j.note("second", tt.second))
			th := newUpstream(t, j.note("third", tt.third))
			g := startGateway(t, routingConfig, map[string]string{"P": p.v1(), "S": s.v1(), "T": th.v1()})
			client := g.client("")
			var content string
			var err error
			if tt.stream {
				st := client.Chat.Completions.NewStreaming(context.Background(), userParams("main", "hi"))
				for st.Next() {
					if ch := st.Current(); len(ch.Choices) > 0 {
						content += ch.Choices[0].Delta.Content
					}
				}
				err = st.Err()
			} else {
				var c, cerr = client.Chat.Completions.New(context.Background(), userParams("main", "hi"))
				err = cerr
				if err == nil {
					content = c.Choices[0].Message.Content
					if want := tt.wantOrder[len(tt.wantOrder)-1]; c.Model != map[string]string{"primary": "main", "second": "backup1", "third": "backup2"}[want] {
						t.Errorf("model = %q, want the configured name of the model that answered (%s's)", c.Model, want)
					}
				}
			}
			if tt.wantStatus != 0 {
				if e := sdkError(t, err); e.StatusCode != tt.wantStatus {
					t.Errorf("status %d, want %d", e.StatusCode, tt.wantStatus)
				}
			} else if err != nil {
				t.Fatalf("error: %v", err)
			} else if strings.ReplaceAll(content, " ", "") != strings.ReplaceAll(tt.wantContent, " ", "") {
				t.Errorf("content %q, want %q", content, tt.wantContent)
			}
			if diff := cmp.Diff(tt.wantOrder, j.get()); diff != "" {
				t.Errorf("upstreams tried (-want +got):\n%s", diff)
			}
			for name, u := range map[string]*fakeUpstream{"p-model": p, "s-model": s, "t-model": th} {
				for _, c := range u.calls() {
					if m := gjson.GetBytes(c.Body, "model").String(); m != name {
						t.Errorf("upstream for %s saw model %q", name, m)
					}
				}
			}
		})
	}
}

const retryConfig = `
backends:
  flaky: {type: openai, base_url: "{{U}}", retries: {max: 2, base_delay: 1ms, max_delay: 20ms}}
models:
  flaky: {backend: flaky, upstream_model: f-model}
`

func TestRetries(t *testing.T) {
	tests := []struct {
		name       string
		handlers   []http.HandlerFunc
		stream     bool
		wantCalls  int
		wantStatus int // 0: success
	}{
		{name: "429 then 500 then ok",
			handlers:  []http.HandlerFunc{failWith(429, "slow down", "Retry-After", "0"), failWith(500, "oops"), okUpstream("finally")},
			wantCalls: 3},
		{name: "stream: 429 then 500 then ok", stream: true,
			handlers:  []http.HandlerFunc{failWith(429, "slow down", "Retry-After", "0"), failWith(500, "oops"), okUpstream("finally")},
			wantCalls: 3},
		{name: "three failures exhaust the retries",
			handlers:  []http.HandlerFunc{failWith(503, "down"), failWith(503, "down"), failWith(503, "still down"), okUpstream("too late")},
			wantCalls: 3, wantStatus: 503},
		{name: "400 is not retried",
			handlers:  []http.HandlerFunc{failWith(400, "bad"), okUpstream("never")},
			wantCalls: 1, wantStatus: 400},
		{name: "Retry-After longer than max_delay is not waited for",
			handlers:  []http.HandlerFunc{failWith(429, "slow down", "Retry-After", "3600"), okUpstream("never")},
			wantCalls: 1, wantStatus: 429},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, tt.handlers...)
			g := startGateway(t, retryConfig, map[string]string{"U": up.v1()})
			client := g.client("")
			var content string
			var err error
			if tt.stream {
				st := client.Chat.Completions.NewStreaming(context.Background(), userParams("flaky", "hi"))
				for st.Next() {
					if ch := st.Current(); len(ch.Choices) > 0 {
						content += ch.Choices[0].Delta.Content
					}
				}
				err = st.Err()
			} else {
				var c, cerr = client.Chat.Completions.New(context.Background(), userParams("flaky", "hi"))
				err = cerr
				if err == nil {
					content = c.Choices[0].Message.Content
				}
			}
			if tt.wantStatus == 0 {
				if err != nil {
					t.Fatalf("error: %v", err)
				}
				if content != "finally" {
					t.Errorf("content %q", content)
				}
			} else {
				e := sdkError(t, err)
				if e.StatusCode != tt.wantStatus {
					t.Errorf("status %d, want %d", e.StatusCode, tt.wantStatus)
				}
				if tt.wantStatus == 429 && e.Response.Header.Get("Retry-After") != "3600" {
					t.Errorf("Retry-After %q not passed on", e.Response.Header.Get("Retry-After"))
				}
			}
			if n := len(up.calls()); n != tt.wantCalls {
				t.Errorf("upstream attempts = %d, want %d", n, tt.wantCalls)
			}
		})
	}
}
