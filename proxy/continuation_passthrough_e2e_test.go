package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/internal/openaitest"
	"github.com/agate-gateway/agate/proxy"
)

// The chat completions passthrough (a chat client on an OpenAI-compatible backend) is
// continued as the translated streams are (continuation_e2e_test.go), by restart: the
// fake OpenAI-compatible upstream (choppy, kind openai) breaks its stream, and openai-go
// must get the whole answer once, one role chunk, one finish and the usage of both
// attempts.

// TestPassthroughContinuation_WholeAnswer: a cut, a stall past stream_idle and an error
// chunk after part of the answer reached the client are continued on the same route.
func TestPassthroughContinuation_WholeAnswer(t *testing.T) {
	for _, f := range []fault{{3, "cut"}, {4, "stall"}, {2, "error"}, {0, "cut"}, {10, "cut"}} {
		t.Run(fmt.Sprintf("%s after %d", f.how, f.after), func(t *testing.T) {
			up := newChoppy(t, "openai", f)
			g := contGateway(t, up, "")
			start := time.Now()
			a := askChat(t, g)
			if a.errorText != "" || a.text != contAnswer {
				t.Fatalf("answer %q, error %q; want the whole answer once", a.text, a.errorText)
			}
			t.Logf("whole answer after %v (stream_idle 100ms)", time.Since(start).Round(time.Millisecond))
			if a.starts != 1 || a.finishes != 1 {
				t.Errorf("%d role chunks and %d finishes; want one each", a.starts, a.finishes)
			}
			if n := len(up.requests()); n != 2 {
				t.Fatalf("%d upstream requests; want 2", n)
			}
			// The passthrough forwards the upstream's [DONE]: the client may have it before
			// the gateway has counted.
			waitFor(t, "the continuation counted", func() bool { return continuations(g, "continued") == 1 })
			waitFor(t, "the usage charged", func() bool { p, o := charged(g); return a.prompt == p && a.output == o })
			if a.prompt < 10 {
				t.Errorf("client's usage %d+%d; want the sum of every attempt (each prompt 10; a cut attempt estimated, or none when it said nothing)", a.prompt, a.output)
			}
		})
	}
}

// TestPassthroughContinuation_NotContinued: a restart whose answer differs ends the stream
// with the in-band continuation_diverged; with continuation: off, or when every retry
// fails, the stream ends with the failure.
func TestPassthroughContinuation_NotContinued(t *testing.T) {
	for _, tt := range []struct {
		name, extra string
		plan        []fault
		requests    int
		wantError   string
		outcomes    map[string]int
	}{
		{name: "restart diverged", plan: []fault{{3, "cut"}, {0, "diverge"}}, requests: 2, wantError: "could not be continued",
			outcomes: map[string]int{"diverged": 1}},
		{name: "continuation off", extra: ", continuation: off", plan: []fault{{3, "error"}}, requests: 1,
			wantError: "The server had an error", outcomes: map[string]int{}},
		{name: "every retry fails", plan: []fault{{3, "cut"}, {0, "cut"}}, requests: 2, wantError: "upstream",
			outcomes: map[string]int{"failed": 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			up := newChoppy(t, "openai", tt.plan...)
			g := contGateway(t, up, tt.extra)
			a := askChat(t, g)
			if !strings.Contains(a.errorText, tt.wantError) || !strings.HasPrefix(contAnswer, a.text) || a.text == "" {
				t.Fatalf("answer %q, error %q; want part of the answer, then an in-band error with %q", a.text, a.errorText, tt.wantError)
			}
			if a.finishes != 0 {
				t.Errorf("%d finishes; want none before the error", a.finishes)
			}
			if n := len(up.requests()); n != tt.requests {
				t.Errorf("%d upstream requests; want %d", n, tt.requests)
			}
			for o, n := range tt.outcomes {
				waitFor(t, "outcome "+o, func() bool { return continuations(g, o) == n })
			}
			for _, o := range []string{"continued", "diverged", "refused", "failed", "not_continuable"} {
				if got := continuations(g, o); got != tt.outcomes[o] {
					t.Errorf("gateway_stream_continuations_total{outcome=%s} = %d; want %d", o, got, tt.outcomes[o])
				}
			}
		})
	}
}

// TestPassthroughContinuation_OnTheFallback: a primary without retries whose stream is cut
// is continued on the model's fallback, another OpenAI-compatible server; the chunks keep
// the id, created and model the stream began with, and the access line names the fallback
// that finished the answer.
func TestPassthroughContinuation_OnTheFallback(t *testing.T) {
	primary := newChoppy(t, "openai", fault{3, "cut"})
	spare := newChoppy(t, "openai")
	var logs gatewaytest.Buffer
	g := gatewaytest.StartYAML(t, fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  up: {type: openai, base_url: %q, api_key: upstream-secret, retries: {max: 0}}
  spare: {type: openai, base_url: %q, api_key: upstream-secret, retries: {max: 0}}
models:
  m: {backend: up, upstream_model: fake-model, fallbacks: [s]}
  s: {backend: spare, upstream_model: spare-model}
`, primary.baseURL(), spare.baseURL()), gatewaytest.Options{Runtime: proxy.TestRuntime, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	a := askChat(t, g)
	if a.errorText != "" || a.text != contAnswer || a.finishes != 1 || a.starts != 1 {
		t.Fatalf("answer %q (%d starts, %d finishes), error %q; want the whole answer once", a.text, a.starts, a.finishes, a.errorText)
	}
	if len(primary.requests()) != 1 || len(spare.requests()) != 1 {
		t.Errorf("%d primary and %d fallback requests; want one each", len(primary.requests()), len(spare.requests()))
	}
	waitFor(t, "the continuation counted", func() bool { return continuations(g, "continued") == 1 })
	if !strings.Contains(logs.String(), `"mode":"restart"`) {
		t.Errorf("no continuation logged:\n%s", logs.String())
	}
	waitFor(t, "the access line", func() bool { return strings.Contains(logs.String(), `"msg":"chat completion"`) })
	var line struct {
		Model         string `json:"model"`
		AnsweredModel string `json:"answered_model"`
		ContinuedFrom string `json:"continued_from"`
		Fallback      bool   `json:"fallback"`
	}
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `"msg":"chat completion"`) {
			json.Unmarshal([]byte(l), &line)
		}
	}
	if line.Model != "m" || line.AnsweredModel != "s" || !line.Fallback || line.ContinuedFrom != "m" {
		t.Errorf("access line %+v; want model m, answered_model s, fallback, continued_from m", line)
	}
	if n := testutil.ToFloat64(g.Metrics.FallbackAnswers.WithLabelValues("m", "s")); n != 1 {
		t.Errorf("gateway_fallback_answers_total{model=m,answered=s} = %v; want 1", n)
	}
}

// TestPassthrough_MalformedEventSkipped: one chunk whose JSON is cut short, in a stream
// that parses otherwise, is skipped, counted and logged without its content; the client
// gets the whole answer from one attempt. The 17th in one stream ends it (the test of
// that is TestPassthrough_MalformedEventsEndTheStream).
func TestPassthrough_MalformedEventSkipped(t *testing.T) {
	up := newChoppy(t, "openai", fault{2, "malformed"})
	var logs gatewaytest.Buffer
	g := gatewaytest.StartYAML(t, fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  up: {type: openai, base_url: %q, api_key: upstream-secret}
models:
  m: {backend: up, upstream_model: fake-model}
`, up.baseURL()), gatewaytest.Options{Runtime: proxy.TestRuntime, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	a := askChat(t, g)
	if a.errorText != "" || a.text != contAnswer || a.finishes != 1 {
		t.Fatalf("answer %q (%d finishes), error %q; want the whole answer", a.text, a.finishes, a.errorText)
	}
	if n := len(up.requests()); n != 1 {
		t.Errorf("%d upstream requests; want 1", n)
	}
	if n := testutil.ToFloat64(g.Metrics.MalformedEvents.WithLabelValues("up")); n != 1 {
		t.Errorf("gateway_upstream_malformed_events_total = %v; want 1", n)
	}
	if !strings.Contains(logs.String(), "skipped a malformed upstream event") || strings.Contains(logs.String(), "unseen-wor") {
		t.Errorf("want one log line without the event's content:\n%s", logs.String())
	}
}

// TestPassthrough_MalformedEventSkippedEveryAPI: the Responses and Messages passthroughs
// skip an unreadable event too, counted, with the whole answer from one attempt.
func TestPassthrough_MalformedEventSkippedEveryAPI(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	for _, tt := range []struct{ client, kind string }{{"responses", "responses"}, {"messages", "anthropic"}} {
		t.Run(tt.client+" on "+tt.kind, func(t *testing.T) {
			up := newChoppy(t, tt.kind, fault{2, "malformed"})
			g := contGateway(t, up, "")
			a := askers[tt.client](t, g)
			if a.errorText != "" || a.text != contAnswer || a.finishes != 1 {
				t.Fatalf("answer %q (%d finishes), error %q; want the whole answer", a.text, a.finishes, a.errorText)
			}
			if n := len(up.requests()); n != 1 {
				t.Errorf("%d upstream requests; want 1", n)
			}
			if n := testutil.ToFloat64(g.Metrics.MalformedEvents.WithLabelValues("up")); n != 1 {
				t.Errorf("gateway_upstream_malformed_events_total = %v; want 1", n)
			}
		})
	}
}

// TestPassthroughContinuation_Splice: the restart's chunks need not fall where the first
// answer's did, nor write its text with the same escapes: the chunk that straddles the end
// of what the client has is spliced (the client gets the rest of its text), escapes are
// compared by their values, and a new answer of the same length but other text diverges.
func TestPassthroughContinuation_Splice(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	chunk := func(n int, content string) string {
		return fmt.Sprintf(`data: {"id":"chatcmpl-%d","object":"chat.completion.chunk","created":1761175225,"model":"gpt-fake","choices":[{"index":0,"delta":{"content":%s},"logprobs":null,"finish_reason":null}]}`+"\n\n", n, content)
	}
	role := func(n int) string {
		return fmt.Sprintf(`data: {"id":"chatcmpl-%d","object":"chat.completion.chunk","created":1761175225,"model":"gpt-fake","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`+"\n\n", n)
	}
	tail := func(n int) string {
		return fmt.Sprintf(`data: {"id":"chatcmpl-%d","object":"chat.completion.chunk","created":1761175225,"model":"gpt-fake","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}`+"\n\n", n) +
			fmt.Sprintf(`data: {"id":"chatcmpl-%d","object":"chat.completion.chunk","created":1761175225,"model":"gpt-fake","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":7,"total_tokens":17}}`+"\n\ndata: [DONE]\n\n", n)
	}
	for _, tt := range []struct {
		name        string
		first, next string
		want        string // "" wants continuation_diverged
	}{
		{name: "the restart's chunk straddles the end, escaped otherwise",
			first: role(0) + chunk(0, `"Caf\u00e9"`) + chunk(0, `" \"au"`),
			next:  role(1) + chunk(1, `"Café \""`) + chunk(1, `"au lait\"\nplease"`) + tail(1),
			want:  "Café \"au lait\"\nplease"},
		{name: "the restart ends where the client's text did",
			first: role(0) + chunk(0, `"Hello"`),
			next:  role(1) + chunk(1, `"Hel"`) + chunk(1, `"lo"`) + tail(1),
			want:  "Hello"},
		{name: "same length, other text",
			first: role(0) + chunk(0, `"Hello"`) + chunk(0, `" wor"`),
			next:  role(1) + chunk(1, `"Hello, war"`) + tail(1)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			n := 0
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				mu.Lock()
				i := n
				n++
				mu.Unlock()
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(200)
				if i > 0 {
					io.WriteString(w, tt.next)
					return
				}
				io.WriteString(w, tt.first)
				w.(http.Flusher).Flush()
				if conn, buf, err := w.(http.Hijacker).Hijack(); err == nil {
					buf.Flush()
					conn.Close() // cut
				}
			}))
			t.Cleanup(up.Close)
			g := gatewaytest.StartYAML(t, fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  up: {type: openai, base_url: %q, api_key: upstream-secret, retries: {max: 1, base_delay: 1ms, max_delay: 2ms}}
models:
  m: {backend: up, upstream_model: fake-model}
`, up.URL+"/v1"), gatewaytest.Options{Runtime: proxy.TestRuntime})
			var chunks []string
			client := gatewaytest.OpenAI(g.V1(), "k")
			s := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
				Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("say it")}})
			var text string
			for s.Next() {
				chunks = append(chunks, s.Current().RawJSON())
				for _, c := range s.Current().Choices {
					text += c.Delta.Content
				}
			}
			if tt.want == "" {
				if s.Err() == nil || !strings.Contains(s.Err().Error(), "continuation_diverged") {
					t.Fatalf("text %q, error %v; want continuation_diverged", text, s.Err())
				}
				return
			}
			if s.Err() != nil || text != tt.want {
				t.Fatalf("text %q, error %v; want %q", text, s.Err(), tt.want)
			}
			var body []byte
			for _, c := range chunks {
				body = append(append(append(body, "data: "...), c...), "\n\n"...)
			}
			openaitest.CheckChunks(t, append(body, "data: [DONE]\n\n"...), openaitest.Want{Model: "m", Usage: openaitest.UsageNone})
		})
	}
}
