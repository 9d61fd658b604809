package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/limits/redistest"
	"github.com/agate-gateway/agate/proxy"
)

// fakeClock is the gateways' circuit-breaker time in these tests: it moves only when the
// test says, so a 30 s cooldown takes no wall time.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *fakeClock) Now() time.Time             { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) Advance(d time.Duration)    { c.ns.Add(int64(d)) }
func (c *fakeClock) Since(t0 time.Time) float64 { return c.Now().Sub(t0).Seconds() }

// flaky is an OpenAI-compatible upstream that answers 503 (OpenAI's own error body) while
// down, and else a real answer in the chat completions wire (gatewaytest's rendering,
// streamed or whole as asked); it counts the requests it got.
type flaky struct {
	srv  *httptest.Server
	down atomic.Bool
	hits atomic.Int64
	text string
}

func newFlaky(t *testing.T, text string) *flaky {
	f := &flaky{text: text}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		n := f.hits.Add(1)
		if f.down.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error":{"message":"The server is overloaded or not ready yet.","type":"server_error","param":null,"code":null}}`)
			return
		}
		writeAnswer(w, string(body), "openai", f.text, int(n))
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// writeAnswer writes turn text as the n-th answer of an upstream of kind, streamed when the
// request asked for a stream.
func writeAnswer(w http.ResponseWriter, body, kind, text string, n int) {
	if strings.Contains(body, `"stream":true`) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, gatewaytest.RenderStream(kind, gatewaytest.Turn{Text: text}, n))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, gatewaytest.RenderJSON(kind, gatewaytest.Turn{Text: text}, n))
}

const breakerYAML = `
backends:
  main:
    type: openai
    base_url: %s/v1
    retries: {max: 2, base_delay: 1ms, max_delay: 5ms, circuit_breaker: {failures: 5, cooldown: 30s}}
  spare:
    type: openai
    base_url: %s/v1
    retries: {max: 2, base_delay: 1ms, max_delay: 5ms}
models:
  primary: {backend: main, upstream_model: gpt-main, fallbacks: [backup]}
  solo: {backend: main, upstream_model: gpt-solo}
  backup: {backend: spare, upstream_model: gpt-spare}
%s
`

// chatOnce asks model once with openai-go (no SDK retries), streamed or not, and returns
// the answer's text and response headers, or the error.
func chatOnce(t *testing.T, g *gatewaytest.Gateway, model string, stream bool) (string, http.Header, error) {
	t.Helper()
	var resp *http.Response
	c := gatewaytest.OpenAI(g.V1(), "sk-test", option.WithResponseInto(&resp))
	p := openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
	if !stream {
		out, err := c.Chat.Completions.New(context.Background(), p)
		if err != nil {
			return "", nil, err
		}
		return out.Choices[0].Message.Content, resp.Header, nil
	}
	s := c.Chat.Completions.NewStreaming(context.Background(), p)
	var text strings.Builder
	for s.Next() {
		if ch := s.Current(); len(ch.Choices) > 0 {
			text.WriteString(ch.Choices[0].Delta.Content)
		}
	}
	if err := s.Err(); err != nil {
		return "", nil, err
	}
	return text.String(), resp.Header, nil
}

// TestCircuitBreaker_PrimaryDownFor60s is the scenario: the primary is down for
// 60 s and a client asks every 4 s. Without the breaker each request tried the primary
// three times (45 attempts for 15 requests); with it the primary gets five attempts (the
// first request's three, the second's two: the fifth failure opens the circuit), then none
// for the 30 s cooldown, one probe (which fails and re-opens it), none again, and the probe
// after the primary recovered closes it. Every request is answered, by the fallback while
// the circuit is open. The clock is the gateway's injected one.
func TestCircuitBreaker_PrimaryDownFor60s(t *testing.T) {
	main, spare := newFlaky(t, "from main"), newFlaky(t, "from spare")
	clock := newFakeClock()
	log := &gatewaytest.Buffer{}
	g := gatewaytest.StartYAML(t, fmt.Sprintf(breakerYAML, main.srv.URL, spare.srv.URL, ""), gatewaytest.Options{Runtime: proxy.TestRuntime, Clock: clock.Now, Logger: slog.New(slog.NewTextHandler(log, nil))})
	state := func() float64 {
		return testutil.ToFloat64(g.Metrics.Circuits.State.WithLabelValues("main", "gpt-main"))
	}
	t0 := clock.Now()

	main.down.Store(true)
	var timeline []string
	for i := 0; i < 20; i++ { // t = 0, 4, ..., 76 s
		if clock.Since(t0) >= 60 {
			main.down.Store(false)
		}
		before := main.hits.Load()
		text, h, err := chatOnce(t, g, "primary", i%2 == 1)
		if err != nil {
			t.Fatalf("request at %vs: %v", clock.Since(t0), err)
		}
		// A stream's client may read its last byte before the gateway recorded the outcome.
		waitRequests(t, g, float64(i+1))
		timeline = append(timeline, fmt.Sprintf("%v:%d:%s:%v", clock.Since(t0), main.hits.Load()-before, strings.TrimPrefix(text, "from "), state()))
		if text == "from spare" && h.Get("x-agate-fallback") != "1" {
			t.Errorf("request at %vs: the fallback answered without x-agate-fallback: 1", clock.Since(t0))
		}
		clock.Advance(4 * time.Second)
	}
	// second:primary attempts:who answered:circuit state after
	want := []string{"0:3:spare:0", "4:2:spare:1", "8:0:spare:1", "12:0:spare:1", "16:0:spare:1", "20:0:spare:1",
		"24:0:spare:1", "28:0:spare:1", "32:0:spare:1", "36:1:spare:1", "40:0:spare:1", "44:0:spare:1",
		"48:0:spare:1", "52:0:spare:1", "56:0:spare:1", "60:0:spare:1", "64:0:spare:1", "68:1:main:0", "72:1:main:0", "76:1:main:0"}
	if got := strings.Join(timeline, " "); got != strings.Join(want, " ") {
		t.Fatalf("timeline (second:primary attempts:answered by:circuit state)\n got %s\nwant %s", got, strings.Join(want, " "))
	}
	if n := main.hits.Load(); n != 9 {
		t.Errorf("the primary got %d requests, want 9 (5 + probe + probe + 2)", n)
	}
	for to, want := range map[string]float64{"open": 2, "half_open": 2, "closed": 1} {
		if got := testutil.ToFloat64(g.Metrics.Circuits.Transitions.WithLabelValues("main", "gpt-main", to)); got != want {
			t.Errorf("gateway_circuit_transitions_total{to=%q} = %v, want %v", to, got, want)
		}
	}
	if got := testutil.ToFloat64(g.Metrics.FallbacksSkipped.WithLabelValues("primary", "primary", "anonymous", "circuit_open")); got != 14 {
		t.Errorf("gateway_fallbacks_skipped_total{reason=circuit_open} = %v, want 14", got)
	}
	logs := log.String()
	for _, line := range []string{"circuit opened", "circuit half-open", "circuit closed", "route skipped: its circuit is open", "reason=circuit_open"} {
		if !strings.Contains(logs, line) {
			t.Errorf("no log line with %q", line)
		}
	}
}

// waitRequests waits (at most 2 s) until the gateway has counted n requests in
// gateway_requests_total, which it does once a request's attempts are all recorded.
func waitRequests(t *testing.T, g *gatewaytest.Gateway, n float64) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		mfs, err := g.Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var got float64
		for _, mf := range mfs {
			if mf.GetName() == "gateway_requests_total" {
				for _, m := range mf.GetMetric() {
					got += m.GetCounter().GetValue()
				}
			}
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway counted %v requests, want %v", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCircuitBreaker_OpenWithoutFallback: a model with no fallback whose circuit is open is
// answered at once with a 503 upstream_circuit_open in the client's API, Retry-After the
// rest of the cooldown, and its upstream is not called.
func TestCircuitBreaker_OpenWithoutFallback(t *testing.T) {
	main, spare := newFlaky(t, "from main"), newFlaky(t, "from spare")
	clock := newFakeClock()
	g := gatewaytest.StartYAML(t, fmt.Sprintf(breakerYAML, main.srv.URL, spare.srv.URL, ""), gatewaytest.Options{Runtime: proxy.TestRuntime, Clock: clock.Now})
	main.down.Store(true)
	for range 2 { // 3 + 2 failed attempts open it
		if _, _, err := chatOnce(t, g, "solo", false); err == nil {
			t.Fatal("a request to a down upstream succeeded")
		}
	}
	hits := main.hits.Load()
	clock.Advance(10 * time.Second)
	for _, stream := range []bool{false, true} {
		_, _, err := chatOnce(t, g, "solo", stream)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) {
			t.Fatalf("stream %v: %v, want an API error", stream, err)
		}
		if apiErr.StatusCode != 503 || apiErr.Code != "upstream_circuit_open" || apiErr.Response.Header.Get("Retry-After") != "20" ||
			!strings.Contains(apiErr.Message, "model solo (backend main, upstream model gpt-solo)") {
			t.Errorf("stream %v: %d %q Retry-After %q: %s", stream, apiErr.StatusCode, apiErr.Code, apiErr.Response.Header.Get("Retry-After"), apiErr.Message)
		}
	}
	// The Messages API says it in its own shape.
	a := gatewaytest.Anthropic(g.URL, "sk-test")
	_, err := a.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "solo", MaxTokens: 10,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	var aErr *anthropic.Error
	if !errors.As(err, &aErr) || aErr.StatusCode != 503 || !strings.Contains(aErr.RawJSON(), `"type":"error"`) || !strings.Contains(aErr.RawJSON(), "circuit breaker is open") {
		t.Errorf("messages: %v", err)
	}
	if n := main.hits.Load(); n != hits {
		t.Errorf("the open circuit's upstream got %d more requests", n-hits)
	}
}

// TestCircuitBreaker_ReloadKeepsState: a reload that keeps the deployment keeps its open
// circuit; one that drops it forgets it.
func TestCircuitBreaker_ReloadKeepsState(t *testing.T) {
	main, spare := newFlaky(t, "from main"), newFlaky(t, "from spare")
	clock := newFakeClock()
	yaml := fmt.Sprintf(breakerYAML, main.srv.URL, spare.srv.URL, "")
	g := gatewaytest.StartYAML(t, yaml, gatewaytest.Options{Runtime: proxy.TestRuntime, Clock: clock.Now})
	main.down.Store(true)
	for range 2 {
		chatOnce(t, g, "primary", false)
	}
	main.down.Store(false)
	if err := g.Server.Apply(gatewaytest.Parse(t, yaml+"\nlog: {level: debug}\n")); err != nil {
		t.Fatal(err)
	}
	if text, _, err := chatOnce(t, g, "primary", false); err != nil || text != "from spare" {
		t.Fatalf("after a reload: %q %v, want the fallback's answer (the circuit stays open)", text, err)
	}
	// A reload that turns the breaker off for the model drops its circuit.
	off := strings.Replace(yaml, "upstream_model: gpt-main, fallbacks: [backup]", "upstream_model: gpt-main, fallbacks: [backup], circuit_breaker: {failures: -1}", 1)
	if err := g.Server.Apply(gatewaytest.Parse(t, off)); err != nil {
		t.Fatal(err)
	}
	if text, _, err := chatOnce(t, g, "primary", false); err != nil || text != "from main" {
		t.Fatalf("breaker off: %q %v, want the primary's answer", text, err)
	}
}

// TestCircuitBreaker_SharedThroughRedis: two gateways on one Redis (state.type redis); the
// circuit one opens is open on the other, which then sends the primary nothing, and the
// probe's success on one closes it on both.
func TestCircuitBreaker_SharedThroughRedis(t *testing.T) {
	rs := redistest.Start(t)
	main, spare := newFlaky(t, "from main"), newFlaky(t, "from spare")
	clock := newFakeClock()
	yaml := fmt.Sprintf(breakerYAML, main.srv.URL, spare.srv.URL, fmt.Sprintf("state: {type: redis, url: %q, timeout: 2s}", rs.URL()))
	a := gatewaytest.StartYAML(t, yaml, gatewaytest.Options{Runtime: proxy.TestRuntime, Clock: clock.Now})
	b := gatewaytest.StartYAML(t, yaml, gatewaytest.Options{Runtime: proxy.TestRuntime, Clock: clock.Now})
	stateOf := func(g *gatewaytest.Gateway) float64 {
		return testutil.ToFloat64(g.Metrics.Circuits.State.WithLabelValues("main", "gpt-main"))
	}
	waitState := func(g *gatewaytest.Gateway, want float64) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Second)
		for stateOf(g) != want {
			if time.Now().After(deadline) {
				t.Fatalf("circuit state %v, want %v", stateOf(g), want)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	main.down.Store(true)
	for range 2 {
		chatOnce(t, a, "primary", false)
	}
	waitState(a, 1)
	waitState(b, 1)
	hits := main.hits.Load()
	for range 3 {
		if text, _, err := chatOnce(t, b, "primary", true); err != nil || text != "from spare" {
			t.Fatalf("replica b: %q %v", text, err)
		}
	}
	if n := main.hits.Load() - hits; n != 0 {
		t.Fatalf("replica b sent the primary %d requests while a's circuit was open", n)
	}
	// After the cooldown one replica probes; the primary is back: both close.
	main.down.Store(false)
	clock.Advance(31 * time.Second)
	if text, _, err := chatOnce(t, b, "primary", false); err != nil || text != "from main" {
		t.Fatalf("b's probe: %q %v", text, err)
	}
	waitState(b, 0)
	waitState(a, 0)
	if text, _, err := chatOnce(t, a, "primary", false); err != nil || text != "from main" {
		t.Fatalf("a after the close: %q %v", text, err)
	}
}

// TestContextFallbacks: an upstream that says the request is over its context window, in
// each provider's own words (bodies observed from the real APIs:
// testdata/fixtures/SOURCES.md), is asked once (no retry), and the model's
// context_fallbacks answer, not its ordinary fallbacks; another 400 is the client's answer.
func TestContextFallbacks(t *testing.T) {
	fixtures := map[string]string{
		"openai":    "openai-chat/errors/400-context-length-exceeded.observed.json",
		"anthropic": "anthropic/errors/400-prompt-too-long.observed.json",
		"gemini":    "gemini/errors/400-input-token-count.observed.json",
	}
	for _, kind := range []string{"openai", "anthropic", "gemini"} {
		body, err := os.ReadFile(filepath.Join("..", "testdata", "fixtures", fixtures[kind]))
		if err != nil {
			t.Fatal(err)
		}
		t.Run(kind, func(t *testing.T) {
			var small atomic.Int64
			var mu sync.Mutex
			reply := body
			smallSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				small.Add(1)
				mu.Lock()
				defer mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(400)
				w.Write(reply)
			}))
			t.Cleanup(smallSrv.Close)
			big, other := newFlaky(t, "from big"), newFlaky(t, "from other")
			base := smallSrv.URL
			if kind == "openai" {
				base += "/v1"
			}
			g := gatewaytest.StartYAML(t, fmt.Sprintf(`
backends:
  small: {type: %s, base_url: %s, api_key: k}
  big: {type: openai, base_url: %s/v1}
  other: {type: openai, base_url: %s/v1}
models:
  short: {backend: small, upstream_model: m-short, fallbacks: [other], context_fallbacks: [long]}
  long: {backend: big, upstream_model: m-long}
  other: {backend: other, upstream_model: m-other}
`, kind, base, big.srv.URL, other.srv.URL), gatewaytest.Options{Runtime: proxy.TestRuntime})
			for _, stream := range []bool{false, true} {
				before := small.Load()
				text, h, err := chatOnce(t, g, "short", stream)
				if err != nil || text != "from big" || h.Get("x-agate-model") != "long" || h.Get("x-agate-fallback") != "1" {
					t.Fatalf("stream %v: %q %v (x-agate-model %q), want the context fallback's answer", stream, text, err, h.Get("x-agate-model"))
				}
				if n := small.Load() - before; n != 1 {
					t.Errorf("stream %v: the model over its context was asked %d times, want 1", stream, n)
				}
			}
			if other.hits.Load() != 0 {
				t.Errorf("the ordinary fallback was asked %d times", other.hits.Load())
			}
			if got := testutil.ToFloat64(g.Metrics.FallbackAnswers.WithLabelValues("short", "long")); got != 2 {
				t.Errorf("gateway_fallback_answers_total{answered_by=long} = %v, want 2", got)
			}
			// Another 400 is not a context error: the client gets it, no fallback is asked.
			mu.Lock()
			reply = []byte(map[string]string{
				"openai":    `{"error":{"message":"Invalid value for 'temperature'","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}`,
				"anthropic": `{"type":"error","error":{"type":"invalid_request_error","message":"temperature: range: 0..1"}}`,
				"gemini":    `{"error":{"code":400,"message":"Invalid value at 'generation_config.temperature'","status":"INVALID_ARGUMENT"}}`,
			}[kind])
			mu.Unlock()
			bigHits := big.hits.Load()
			_, _, err = chatOnce(t, g, "short", false)
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || big.hits.Load() != bigHits {
				t.Errorf("another 400: %v (context fallback asked %d times)", err, big.hits.Load()-bigHits)
			}
		})
	}
}

// TestCircuitBreaker_429RetryAfter: a 429 with Retry-After counts no failure; the request
// that got it still waits and retries as before, and the next requests of a model that has
// a fallback skip the deployment until then, while one without a fallback still calls it.
func TestCircuitBreaker_429RetryAfter(t *testing.T) {
	var limited atomic.Int64 // how many of the next requests get a 429
	var hits atomic.Int64
	main := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		n := hits.Add(1)
		if limited.Add(-1) >= 0 {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}`)
			return
		}
		writeAnswer(w, string(body), "openai", "from main", int(n))
	}))
	t.Cleanup(main.Close)
	spare := newFlaky(t, "from spare")
	clock := newFakeClock()
	g := gatewaytest.StartYAML(t, fmt.Sprintf(`
backends:
  main: {type: openai, base_url: %s/v1, retries: {max: 0, circuit_breaker: {failures: 1}}}
  patient: {type: openai, base_url: %s/v1, retries: {max: 1, base_delay: 1ms, max_delay: 2s, circuit_breaker: {failures: 1}}}
  spare: {type: openai, base_url: %s/v1}
models:
  primary: {backend: main, upstream_model: gpt-main, fallbacks: [backup]}
  solo: {backend: patient, upstream_model: gpt-main}
  backup: {backend: spare, upstream_model: gpt-spare}
`, main.URL, main.URL, spare.srv.URL), gatewaytest.Options{Runtime: proxy.TestRuntime, Clock: clock.Now})

	// Without a fallback: waited and retried (1 s of wall time), as without the breaker.
	limited.Store(1)
	if text, _, err := chatOnce(t, g, "solo", false); err != nil || text != "from main" {
		t.Fatalf("solo: %q %v, want the retry's answer", text, err)
	}
	// With a fallback: the 429 sends this request to it, and the next one too, without a
	// call, until Retry-After passed; it opened nothing.
	limited.Store(1)
	for i, want := range []string{"from spare", "from spare"} {
		before := hits.Load()
		text, _, err := chatOnce(t, g, "primary", false)
		if err != nil || text != want {
			t.Fatalf("request %d: %q %v, want %q", i, text, err, want)
		}
		if calls := hits.Load() - before; calls != int64(1-i) {
			t.Errorf("request %d: %d calls to the held deployment, want %d", i, calls, 1-i)
		}
	}
	clock.Advance(time.Second)
	if text, _, err := chatOnce(t, g, "primary", false); err != nil || text != "from main" {
		t.Fatalf("after Retry-After: %q %v", text, err)
	}
	if got := testutil.ToFloat64(g.Metrics.Circuits.Transitions.WithLabelValues("main", "gpt-main", "open")); got != 0 {
		t.Errorf("a 429 opened the circuit %v times", got)
	}
}
