package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/proxy"
)

// The Messages passthrough (a /v1/messages client on anthropic backends: the Claude Code
// path) is continued (continuation_messages.go): anthropic-sdk-go must get the whole
// answer once, in one message whose content block indexes follow each other (its
// Accumulate checks them), one message_start, one message_delta and the usage of every
// attempt. The fakes are choppy (kind anthropic: a prefill is continued as the API
// continues a final assistant turn) and recorded streams replayed and cut (recordedCut).

// TestMessagesContinuation_WholeAnswer: a cut, a stall past stream_idle and an error
// event after part of the answer reached the client are continued on the same route, by
// prefill (anthropic's default) or restart.
func TestMessagesContinuation_WholeAnswer(t *testing.T) {
	for _, tt := range []struct {
		fault   fault
		extra   string
		prefill string // the trailing assistant turn of the continuation ("" none)
	}{
		{fault{3, "cut"}, "", "The quick brown"},
		{fault{4, "stall"}, "", "The quick brown fox"},
		{fault{2, "error"}, "", "The quick"},
		{fault{0, "cut"}, "", ""}, // nothing of the text yet: restarted
		{fault{10, "cut"}, "", "The quick brown fox jumps over the lazy dog, twice"},
		{fault{3, "cut"}, ", continuation: restart", ""},
		{fault{5, "error"}, ", continuation: restart", ""},
	} {
		t.Run(fmt.Sprintf("%s after %d%s", tt.fault.how, tt.fault.after, tt.extra), func(t *testing.T) {
			up := newChoppy(t, "anthropic", tt.fault)
			g := contGateway(t, up, tt.extra)
			start := time.Now()
			a := askMessages(t, g)
			if a.errorText != "" || a.text != contAnswer {
				t.Fatalf("answer %q, error %q; want the whole answer once", a.text, a.errorText)
			}
			t.Logf("whole answer after %v (stream_idle 100ms)", time.Since(start).Round(time.Millisecond))
			if a.starts != 1 || a.finishes != 1 {
				t.Errorf("%d message_start and %d message_delta; want one each", a.starts, a.finishes)
			}
			bodies := up.requests()
			if len(bodies) != 2 {
				t.Fatalf("%d upstream requests; want 2", len(bodies))
			}
			if got := up.prefill([]byte(bodies[1])); got != tt.prefill {
				t.Errorf("continuation's prefill %q; want %q", got, tt.prefill)
			}
			waitFor(t, "the continuation counted", func() bool { return continuations(g, "continued") == 1 })
			waitFor(t, "the usage charged", func() bool { p, o := charged(g); return a.prompt == p && a.output == o })
			if a.prompt != 20 {
				t.Errorf("client's input tokens %d; want both attempts' 10", a.prompt)
			}
		})
	}
}

// TestMessagesContinuation_NotContinued: a prefill the backend refuses is restarted and
// the client never sees the 400; a restart whose answer differs ends the stream with the
// in-band continuation_diverged; with continuation: off, or when every retry fails, the
// stream ends with the failure.
func TestMessagesContinuation_NotContinued(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	for _, tt := range []struct {
		name, extra string
		plan        []fault
		requests    int
		wantError   string // "" wants the whole answer
		outcomes    map[string]int
	}{
		{name: "prefill refused, restarted", plan: []fault{{3, "cut"}, {0, "refuse"}}, requests: 3,
			outcomes: map[string]int{"refused": 1, "continued": 1}},
		{name: "restart diverged", extra: ", continuation: restart", plan: []fault{{3, "cut"}, {0, "diverge"}}, requests: 2,
			wantError: "could not be continued", outcomes: map[string]int{"diverged": 1}},
		{name: "continuation off", extra: ", continuation: off", plan: []fault{{3, "error"}}, requests: 1,
			wantError: "Overloaded", outcomes: map[string]int{}},
		{name: "every retry fails", plan: []fault{{3, "cut"}, {0, "cut"}}, requests: 2,
			wantError: "stream ended before message_stop", outcomes: map[string]int{"failed": 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			up := newChoppy(t, "anthropic", tt.plan...)
			g := contGateway(t, up, tt.extra)
			a := askMessages(t, g)
			switch {
			case tt.wantError == "" && (a.errorText != "" || a.text != contAnswer):
				t.Fatalf("answer %q, error %q; want the whole answer", a.text, a.errorText)
			case tt.wantError != "" && (!strings.Contains(a.errorText, tt.wantError) || !strings.HasPrefix(contAnswer, a.text) || a.text == ""):
				t.Fatalf("answer %q, error %q; want part of the answer, then an in-band error with %q", a.text, a.errorText, tt.wantError)
			}
			if strings.Contains(a.errorText, "prefill") || status400.MatchString(a.errorText) {
				t.Errorf("the client saw the prefill's refusal: %q", a.errorText)
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

// recordedCut is a fake upstream that replays a recorded stream (an SSE file of
// testdata/fixtures, SOURCES.md: file is its path there), its first answer cut (the connection
// dropped) after its first cut events, every later one whole.
type recordedCut struct {
	events [][]byte
	cut    int
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newRecordedCut(t *testing.T, file string, cut int) *recordedCut {
	b, err := os.ReadFile("../testdata/fixtures/" + file)
	if err != nil {
		t.Fatal(err)
	}
	r := &recordedCut{cut: cut}
	for _, ev := range bytes.SplitAfter(b, []byte("\n\n")) {
		if len(bytes.TrimSpace(ev)) > 0 {
			r.events = append(r.events, ev)
		}
	}
	r.srv = httptest.NewServer(r)
	t.Cleanup(r.srv.Close)
	return r
}

// index returns the index of the n-th event (from 1) that contains s.
func (r *recordedCut) index(t *testing.T, s string, n int) int {
	for i, ev := range r.events {
		if bytes.Contains(ev, []byte(s)) {
			if n--; n == 0 {
				return i
			}
		}
	}
	t.Fatalf("no event %d with %q", n, s)
	return 0
}

func (r *recordedCut) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	n := len(r.bodies)
	r.bodies = append(r.bodies, string(body))
	r.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	for i, ev := range r.events {
		if n == 0 && i == r.cut {
			w.(http.Flusher).Flush()
			if conn, buf, err := w.(http.Hijacker).Hijack(); err == nil {
				buf.Flush()
				conn.Close()
			}
			return
		}
		w.Write(ev)
	}
}

// streamContinued streams a Messages request for model m through anthropic-sdk-go and
// returns the message it accumulated, its event types, and the stream's error.
func streamContinued(t *testing.T, g *gatewaytest.Gateway) (anthropic.Message, []string, error) {
	t.Helper()
	client := gatewaytest.Anthropic(g.URL, "k")
	s := client.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{
		Model: "m", MaxTokens: 2000, Messages: []anthropic.MessageParam{userText("say it")}})
	var msg anthropic.Message
	var types []string
	for s.Next() {
		ev := s.Current()
		types = append(types, ev.Type)
		if err := msg.Accumulate(ev); err != nil {
			t.Fatalf("accumulate %s: %v", ev.Type, err)
		}
	}
	return msg, types, s.Err()
}

// TestMessagesContinuation_Blocks: thinking and tool_use blocks, from recorded streams cut
// at chosen events. Continued, the client's message is the one an unbroken stream gives
// (its content compared as JSON): thinking that showed nothing yet goes on in the block
// the client has open; text after thinking is restarted (no prefill), the new thinking
// swallowed; text before a tool_use is restarted and the tool_use follows whole. Not
// continued, ending with the in-band error: thinking the client has part of as its only
// content, and a tool_use whose input the client has part of.
func TestMessagesContinuation_Blocks(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	for _, tt := range []struct {
		name, file, extra string
		at                string // the event to cut before: the n-th containing at
		n                 int
		whole             bool
	}{
		{name: "thinking started, nothing of it shown", file: "anthropic/stream/thinking-exact-bytes.llm-anthropic.sse", at: `"thinking_delta"`, n: 1, whole: true},
		{name: "text after thinking", file: "anthropic/stream/thinking-exact-bytes.llm-anthropic.sse", at: `"text_delta"`, n: 2, whole: true},
		{name: "text before a tool_use", file: "anthropic/stream/parallel-tool-use.mirascope.sse", extra: ", continuation: restart", at: `"text_delta"`, n: 3, whole: true},
		{name: "thinking partly shown", file: "anthropic/stream/thinking-exact-bytes.llm-anthropic.sse", at: `"thinking_delta"`, n: 3},
		{name: "tool_use input partly shown", file: "anthropic/stream/parallel-tool-use.mirascope.sse", at: `"input_json_delta"`, n: 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			whole := newRecordedCut(t, tt.file, -1)
			ref := contGatewayAt(t, whole.srv.URL, "")
			want, wantTypes, err := streamContinued(t, ref)
			if err != nil {
				t.Fatal(err)
			}
			up := newRecordedCut(t, tt.file, 0)
			up.cut = up.index(t, tt.at, tt.n)
			g := contGatewayAt(t, up.srv.URL, tt.extra)
			got, types, err := streamContinued(t, g)
			if !tt.whole {
				if err == nil || !strings.Contains(err.Error(), "stream ended before message_stop") {
					t.Fatalf("error %v; want the in-band error of the cut", err)
				}
				if len(up.bodies) != 1 {
					t.Errorf("%d upstream requests; want 1", len(up.bodies))
				}
				waitFor(t, "not_continuable counted", func() bool { return continuations(g, "not_continuable") == 1 })
				return
			}
			if err != nil {
				t.Fatalf("error %v after %d events; want the whole answer", err, len(types))
			}
			checkEventOrder(t, types)
			if len(types) > len(wantTypes) || countOf(types, "message_start") != 1 || countOf(types, "message_delta") != 1 {
				t.Errorf("events %q; want at most the unbroken stream's %q, one message_start and one message_delta", types, wantTypes)
			}
			gj, _ := json.Marshal(got.Content)
			wj, _ := json.Marshal(want.Content)
			if !bytes.Equal(gj, wj) {
				t.Errorf("content\n%s\nwant the unbroken stream's\n%s", gj, wj)
			}
			if len(up.bodies) != 2 || strings.Contains(up.bodies[1], `"role":"assistant"`) {
				t.Errorf("%d upstream requests, the second %.200q; want a restart, without a prefill", len(up.bodies), up.bodies)
			}
			waitFor(t, "the continuation counted", func() bool { return continuations(g, "continued") == 1 })
		})
	}
}

func countOf(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// contGatewayAt starts a gateway whose model m is on an anthropic backend at url, with
// one retry and model settings extra.
func contGatewayAt(t *testing.T, url, extra string) *gatewaytest.Gateway {
	return gatewaytest.StartYAML(t, fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  up: {type: anthropic, base_url: %q, api_key: upstream-secret, retries: {max: 1, base_delay: 1ms, max_delay: 2ms}, timeouts: {stream_idle: 100ms}}
models:
  m: {backend: up, upstream_model: fake-model%s}
`, url, extra), gatewaytest.Options{Runtime: proxy.TestRuntime})
}

// TestMessagesContinuation_OnTheFallback: a primary without retries whose stream is cut
// is continued on the model's fallback with the prefill; the message keeps the model it
// began with, and the access line names the fallback that finished the answer and the
// model whose stream broke.
func TestMessagesContinuation_OnTheFallback(t *testing.T) {
	primary := newChoppy(t, "anthropic", fault{3, "cut"})
	spare := newChoppy(t, "anthropic")
	var logs gatewaytest.Buffer
	g := gatewaytest.StartYAML(t, fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  up: {type: anthropic, base_url: %q, api_key: upstream-secret, retries: {max: 0}}
  spare: {type: anthropic, base_url: %q, api_key: upstream-secret, retries: {max: 0}}
models:
  m: {backend: up, upstream_model: fake-model, fallbacks: [s]}
  s: {backend: spare, upstream_model: spare-model}
`, primary.baseURL(), spare.baseURL()), gatewaytest.Options{Runtime: proxy.TestRuntime, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	a := askMessages(t, g)
	if a.errorText != "" || a.text != contAnswer || a.finishes != 1 || a.starts != 1 {
		t.Fatalf("answer %q (%d starts, %d finishes), error %q; want the whole answer once", a.text, a.starts, a.finishes, a.errorText)
	}
	if p, s := len(primary.requests()), spare.requests(); p != 1 || len(s) != 1 || spare.prefill([]byte(s[0])) != "The quick brown" {
		t.Fatalf("primary asked %d times, fallback %d (%v); want once each, the fallback with the prefill", p, len(s), s)
	}
	waitFor(t, "the access line", func() bool { return strings.Contains(logs.String(), `"continued_from"`) })
	var line struct {
		Model         string `json:"model"`
		AnsweredModel string `json:"answered_model"`
		ContinuedFrom string `json:"continued_from"`
	}
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `"continued_from"`) {
			json.Unmarshal([]byte(l), &line)
		}
	}
	if line.Model != "m" || line.AnsweredModel != "s" || line.ContinuedFrom != "m" {
		t.Errorf("access line %+v; want model m, answered_model s, continued_from m", line)
	}
	if !strings.Contains(logs.String(), `"mode":"prefill"`) {
		t.Errorf("no prefill continuation logged:\n%s", logs.String())
	}
}
