package proxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/proxy"
)

// The tests of this file measure the deadlines of a request through the gateway, with
// openai-go as the client, a fake OpenAI-compatible or Anthropic upstream that stays
// silent as the primary, and a fake that answers as the fallback. fasthttp's sockets do
// not block durably inside a testing/synctest bubble, so the timeouts are real and a few
// tens of milliseconds, and each measured time is checked against the configured value
// with a tolerance, and against what the same faults cost when timeouts added up and
// silent routes were retried.

// silent is a fake upstream that takes every request and never answers; with head set it
// sends a streamed answer's head (200, text/event-stream) and then nothing. It counts the
// requests.
type silent struct {
	srv  *httptest.Server
	hits atomic.Int32
	at   atomic.Int64 // when the last request arrived, in Unix nanoseconds
}

func newSilent(t *testing.T, head bool) *silent {
	s := &silent{}
	done := make(chan struct{})
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.at.Store(time.Now().UnixNano())
		s.hits.Add(1)
		if head {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
		}
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(func() { close(done); s.srv.Close() })
	return s
}

// ask sends a chat completion for model through client, streamed or not, and returns the
// answer's text, the error, and how long it took.
func ask(client openai.Client, model string, stream bool) (string, error, time.Duration) {
	params := openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
	start := time.Now()
	if !stream {
		c, err := client.Chat.Completions.New(context.Background(), params)
		if err != nil {
			return "", err, time.Since(start)
		}
		return c.Choices[0].Message.Content, nil, time.Since(start)
	}
	s := client.Chat.Completions.NewStreaming(context.Background(), params)
	var text strings.Builder
	for s.Next() {
		for _, ch := range s.Current().Choices {
			text.WriteString(ch.Delta.Content)
		}
	}
	return text.String(), s.Err(), time.Since(start)
}

// TestDeadlines_SilentPrimaryFallsBack: a primary that accepts the request and never
// answers costs timeouts.header once (60ms), then the fallback answers: not connect+header
// per attempt, and not three attempts (retries.max 2). With retries.on_timeout: retry the
// silent primary is tried three times, each for header alone.
func TestDeadlines_SilentPrimaryFallsBack(t *testing.T) {
	const header = 60 * time.Millisecond
	for _, tt := range []struct {
		onTimeout string
		attempts  int32
	}{
		{onTimeout: "fallback", attempts: 1},
		{onTimeout: "retry", attempts: 3},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("on_timeout %s, stream %v", tt.onTimeout, stream), func(t *testing.T) {
				primary := newSilent(t, false)
				spare := gatewaytest.NewFakeJSON(t, "openai")
				spare.SetScript(gatewaytest.Turn{Text: "from the fallback"})
				gw := gatewaytest.StartYAML(t, fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  silent:
    type: openai
    base_url: %q
    timeouts: {connect: 1s, header: %s}
    retries: {max: 2, base_delay: 1ms, max_delay: 2ms, on_timeout: %s}
  spare: {type: openai, base_url: %q}
models:
  main: {backend: silent, upstream_model: m, fallbacks: [backup]}
  backup: {backend: spare, upstream_model: b}
`, primary.srv.URL+"/v1", header, tt.onTimeout, spare.BaseURL()), gatewaytest.Options{Runtime: proxy.TestRuntime})
				text, err, took := ask(gatewaytest.OpenAI(gw.V1(), "k"), "main", stream)
				if err != nil || text != "from the fallback" {
					t.Fatalf("answer %q, %v; want the fallback's", text, err)
				}
				if got := primary.hits.Load(); got != tt.attempts {
					t.Errorf("the silent primary was tried %d times, want %d", got, tt.attempts)
				}
				want := time.Duration(tt.attempts) * header
				if took < want || took > want+150*time.Millisecond {
					t.Errorf("answered after %v; want about %d × header = %v (connect+header per attempt would be %v)", took, tt.attempts, want, time.Duration(tt.attempts)*(time.Second+header))
				}
				t.Logf("on_timeout %s, stream %v: header %v, fallback answered after %v", tt.onTimeout, stream, header, took.Round(time.Millisecond))
			})
		}
	}
}

// TestDeadlines_RequestTimeout: models.<name>.timeouts.request bounds the request's
// attempts, backoffs and fallbacks together: a silent primary with a long header timeout
// and a silent fallback end in a 504 request_timeout after the request timeout, streamed
// or not (nothing reached the client), and nothing is tried after it.
func TestDeadlines_RequestTimeout(t *testing.T) {
	const request = 80 * time.Millisecond
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream %v", stream), func(t *testing.T) {
			primary, second := newSilent(t, false), newSilent(t, false)
			gw := gatewaytest.StartYAML(t, fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  silent:
    type: openai
    base_url: %q
    timeouts: {header: 50ms}
    retries: {max: 5, base_delay: 1ms, max_delay: 2ms, on_timeout: retry}
  silent2: {type: openai, base_url: %q, timeouts: {header: 10s}}
models:
  main: {backend: silent, upstream_model: m, fallbacks: [backup], timeouts: {request: %s}}
  backup: {backend: silent2, upstream_model: b}
`, primary.srv.URL+"/v1", second.srv.URL+"/v1", request), gatewaytest.Options{Runtime: proxy.TestRuntime})
			_, err, took := ask(gatewaytest.OpenAI(gw.V1(), "k"), "main", stream)
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusGatewayTimeout || apiErr.Code != "request_timeout" {
				t.Fatalf("error %v; want a 504 request_timeout", err)
			}
			if took < request || took > request+150*time.Millisecond {
				t.Errorf("failed after %v; want about timeouts.request %v", took, request)
			}
			// 50ms header: the primary's second attempt is cut by the deadline, then the
			// fallback is not tried.
			if p, s := primary.hits.Load(), second.hits.Load(); p != 2 || s != 0 {
				t.Errorf("primary tried %d times, fallback %d; want 2 and 0", p, s)
			}
			t.Logf("stream %v: timeouts.request %v, 504 after %v", stream, request, took.Round(time.Millisecond))
		})
	}
}

// TestDeadlines_FirstToken: a streamed answer whose head came at once but whose first
// event does not come within models.<name>.timeouts.first_token is failed over while
// nothing reached the client: the fallback answers after first_token, not after
// stream_idle; on a translated stream (an Anthropic primary) and on a passthrough (an
// OpenAI-compatible primary under a chat client) alike.
func TestDeadlines_FirstToken(t *testing.T) {
	const firstToken = 60 * time.Millisecond
	for _, tt := range []struct{ name, primaryType, extra string }{
		{"translated", "anthropic", "api_key: x, "},
		{"passthrough", "openai", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			primary := newSilent(t, true)
			fake := gatewaytest.NewFakeJSON(t, "openai")
			fake.SetScript(gatewaytest.Turn{Text: "from the fallback"})
			var spareAt atomic.Int64 // when the fallback's request arrived, in Unix nanoseconds
			spare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				spareAt.CompareAndSwap(0, time.Now().UnixNano())
				fake.ServeHTTP(w, r)
			}))
			t.Cleanup(spare.Close)
			gw := gatewaytest.StartYAML(t, fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  thinker: {type: %s, base_url: %q, %stimeouts: {stream_idle: 10s}}
  spare: {type: openai, base_url: %q}
models:
  main: {backend: thinker, upstream_model: claude-x, fallbacks: [backup], timeouts: {first_token: %s}}
  backup: {backend: spare, upstream_model: b}
`, tt.primaryType, primary.srv.URL, tt.extra, spare.URL+"/v1", firstToken), gatewaytest.Options{Runtime: proxy.TestRuntime})
			text, err, took := ask(gatewaytest.OpenAI(gw.V1(), "k"), "main", true)
			if err != nil || text != "from the fallback" {
				t.Fatalf("answer %q, %v; want the fallback's", text, err)
			}
			if got := primary.hits.Load(); got != 1 {
				t.Errorf("the primary was tried %d times, want 1 (on_timeout fallback)", got)
			}
			// The client's wait bounds the deadline from below; from above, the interval the
			// deadline governs (the primary's request to the fallback's), which leaves out
			// what a loaded machine adds around it (the SDK, the request's parse, the answer).
			waited := time.Duration(spareAt.Load() - primary.at.Load())
			if took < firstToken || waited > firstToken+150*time.Millisecond {
				t.Errorf("answered after %v, the fallback asked %v after the primary; want about first_token %v (stream_idle is 10s)", took, waited, firstToken)
			}
			t.Logf("first_token %v: fallback asked after %v, answered after %v", firstToken, waited.Round(time.Millisecond), took.Round(time.Millisecond))
		})
	}
}

// TestDeadlines_RetryLogDelay: the retry log line gives its delay as a duration ("15ms"),
// not as nanoseconds.
func TestDeadlines_RetryLogDelay(t *testing.T) {
	var fails atomic.Int32
	spare := gatewaytest.NewFakeJSON(t, "openai")
	spare.SetScript(gatewaytest.Turn{Text: "after a retry"})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fails.Add(1) == 1 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(503)
			fmt.Fprint(w, `{"error":{"message":"overloaded","type":"server_error"}}`)
			return
		}
		spare.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)
	var logs gatewaytest.Buffer
	gw := gatewaytest.StartYAML(t, fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  up: {type: openai, base_url: %q, retries: {max: 1, base_delay: 20ms, max_delay: 20ms}}
models:
  main: {backend: up, upstream_model: m}
`, up.URL+"/v1"), gatewaytest.Options{Runtime: proxy.TestRuntime, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	text, err, _ := ask(gatewaytest.OpenAI(gw.V1(), "k"), "main", false)
	if err != nil || text != "after a retry" {
		t.Fatalf("answer %q, %v", text, err)
	}
	var line struct {
		Msg   string `json:"msg"`
		Delay string `json:"delay"`
	}
	for l := range strings.Lines(logs.String()) {
		if strings.Contains(l, `"retrying upstream"`) {
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatalf("%v: %s", err, l)
			}
		}
	}
	d, err := time.ParseDuration(line.Delay)
	if err != nil || d < 10*time.Millisecond || d > 20*time.Millisecond {
		t.Errorf("retry log delay %q; want a duration between 10ms and 20ms:\n%s", line.Delay, logs.String())
	}
}
