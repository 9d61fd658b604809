package proxy_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/proxy"
)

// The fault matrix of issue #47: the sixteen provider faults the issue names (its table
// and its "Done means"), each done by a fake OpenAI-compatible (chat completions and
// Responses), Anthropic and Gemini upstream in that provider's own wire, under each client
// API through its official SDK (openai-go for chat completions and Responses,
// anthropic-sdk-go for Messages), streamed. The passthroughs (chat on openai, Responses on
// responses, Messages on anthropic) are continued like the translated streams, so a
// mid-stream fault ends in the whole answer on every row.
// For every case the client gets the whole answer, or a clean error (an error status, or
// an in-band error event after a prefix of the answer): never a truncated answer that
// ends as a success; and it gets it within a bound (the timeouts are a second, so a
// request over matrixHang is a hang). The cells run at once (forEachCellAtOnce).
//
// The streams are choppy's (continuation_e2e_test.go). The error bodies are in each
// provider's shape as recorded or quoted in public threads:
//   - context window: testdata/fixtures/*/errors/400-*.observed.json (SOURCES.md);
//   - Gemini 429: testdata/fixtures/gemini/vercel-chunks/google-429-retry-info.json
//     (vercel/ai, Apache-2.0);
//   - OpenAI 429: type "requests", code rate_limit_exceeded, as quoted in
//     mmz-001/knowledge_gpt#5 and di-sukharev/opencommit#7;
//   - Anthropic 429 rate_limit_error and 400 "Output blocked by content filtering policy":
//     as quoted in anthropics/claude-code#55789 and #58367 (the envelope of the recorded
//     testdata/fixtures/anthropic/errors/401-auth.mirascope.json);
//   - Anthropic 529 overloaded_error: testdata/fixtures/anthropic/errors/
//     observed-stream-error-events.md;
//   - OpenAI 500 server_error and Gemini 503 UNAVAILABLE: choppy's error events' payloads;
//   - OpenAI content_filter 400: the Azure recording in
//     translate/openai/testdata/azure-error-400-content-filter.mirascope.txtar (Mirascope,
//     MIT). Gemini refuses a prompt with a 200 whose promptFeedback has a blockReason, of
//     which no public recording was found: it has no content-filter case here.

// step is what the matrix's primary does to one request: a fault before the answer (pre:
// silence, head (200 and an event stream's head, then nothing), reset, or an HTTP status
// with the provider's error body named body (errorBodies), retryAfter its Retry-After),
// else the stream fault of choppy.
type step struct {
	pre              string
	status           int
	body, retryAfter string
	stream           fault
}

// matrixUpstream is a fake upstream of kind that meets its i-th request with plan[i] (and
// answers well after the plan), counting the requests.
type matrixUpstream struct {
	kind  string
	plan  []step
	body  func(name string) string
	srv   *httptest.Server
	next  http.Handler // answers the requests the plan does not fail: choppy, or a JSON fake
	done  chan struct{}
	mu    sync.Mutex
	count int
}

func newMatrixUpstream(t *testing.T, kind string, body func(string) string, plan ...step) *matrixUpstream {
	m := &matrixUpstream{kind: kind, plan: plan, body: body, done: make(chan struct{})}
	var streamPlan []fault
	for _, s := range plan {
		if s.pre == "" && s.status == 0 {
			streamPlan = append(streamPlan, s.stream)
		}
	}
	m.next = &choppy{kind: kind, plan: streamPlan, done: m.done}
	m.srv = httptest.NewServer(m)
	t.Cleanup(func() { close(m.done); m.srv.Close() })
	return m
}

func (m *matrixUpstream) baseURL() string {
	if m.kind == "openai" || m.kind == "responses" {
		return m.srv.URL + "/v1"
	}
	return m.srv.URL
}

func (m *matrixUpstream) requests() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.count
}

func (m *matrixUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	n := m.count
	m.count++
	m.mu.Unlock()
	var s step
	if n < len(m.plan) {
		s = m.plan[n]
	}
	wait := func() {
		select {
		case <-r.Context().Done():
		case <-m.done:
		}
	}
	switch {
	case s.pre == "silence":
		wait()
	case s.pre == "head":
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		wait()
	case s.pre == "reset":
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
	case s.status != 0:
		if s.retryAfter != "" {
			w.Header().Set("Retry-After", s.retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(s.status)
		fmt.Fprint(w, m.body(s.body))
	default:
		m.next.ServeHTTP(w, r)
	}
}

// errorBodies returns the error bodies of kind by name (see the file's comment).
func errorBodies(t *testing.T, kind string) func(string) string {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "fixtures", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	var bodies map[string]string
	switch kind {
	case "openai", "responses": // the Responses API answers errors in the same envelope
		bodies = map[string]string{
			"429":     `{"error":{"message":"Rate limit reached for default-global in organization org-x on requests per min. Limit: 60 / min. Current: 70 / min.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			"500":     `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`,
			"503":     `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`,
			"context": read("openai-chat/errors/400-context-length-exceeded.observed.json"),
			"filter":  `{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry.","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"self_harm":{"filtered":true,"severity":"medium"}}}}}`,
		}
	case "anthropic":
		bodies = map[string]string{
			"429":     `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your account's rate limit. Please try again later."},"request_id":"req_011Caf5eVm3UVAbQSEhefrRC"}`,
			"500":     `{"type":"error","error":{"details":null,"type":"overloaded_error","message":"Overloaded"} }`,
			"503":     `{"type":"error","error":{"details":null,"type":"overloaded_error","message":"Overloaded"} }`,
			"context": read("anthropic/errors/400-prompt-too-long.observed.json"),
			"filter":  `{"type":"error","error":{"type":"invalid_request_error","message":"Output blocked by content filtering policy"},"request_id":"req_011CaxpBxEpLvE6AvvuDD5BW"}`,
		}
	case "gemini":
		bodies = map[string]string{
			"429":     read("gemini/vercel-chunks/google-429-retry-info.json"),
			"500":     `{"error":{"code":500,"message":"An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting","status":"INTERNAL"}}`,
			"503":     `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`,
			"context": read("gemini/errors/400-input-token-count.observed.json"),
		}
	}
	return func(name string) string {
		if b, ok := bodies[name]; ok {
			return b
		}
		t.Fatalf("no %s body for %s", name, kind)
		return ""
	}
}

// matrixCase is one fault of the matrix: the primary's plan, what the client is to get
// (whole: the whole answer; else a clean error) and how many requests the primary, the
// fallback (s) and the context fallback (long) are to get (-1: any).
type matrixCase struct {
	name                 string
	plan                 []step
	whole                bool
	primary, spare, long int
	kinds                []string // "" all
	streamOnly           bool     // a fault in a stream: not asked without one
}

func TestFaultMatrix(t *testing.T) {
	t.Parallel() // its cells have gateways and fakes of their own, and budgets that hold under load (#54)
	forEachCellAtOnce(t, matrixCases(), func(t *testing.T, tc matrixCase, kind, client string) {
		runMatrix(t, tc, kind, client, askers[client], true)
	})
}

// The matrix's time budgets. A fault that is a silence (01, 02, 04) takes one of them to
// be seen; a healthy answer must beat them all, fallbacks and continuations included,
// while the matrix's cells run at once on a loaded machine: at 60 ms (first_token, header)
// and 100 ms (stream_idle) up to one cell in ten missed one under load (a fallback where a
// retry was wanted), at 500 ms one cell in 300 at load 12 to 16 with the whole module's
// tests running, so they are a second each. matrixHang is the bound on one request
// past which it is a hang: one budget spent, then the answer from elsewhere, on a machine
// whose load can make a healthy streamed Responses answer (the SDK's decoding under -race)
// take 3 s when eight cells run at once.
const (
	matrixHeader     = time.Second // backends.up.timeouts.header
	matrixStreamIdle = time.Second // backends.*.timeouts.stream_idle
	matrixFirstToken = time.Second // models.m.timeouts.first_token
	matrixHang       = 6 * time.Second
)

// matrixAtOnce is how many of the matrix's cells run at once: a cell spends much of its
// time waiting (for a budget to pass, for the gateway's shutdown), so more cells than CPUs.
const matrixAtOnce = 4

// matrixCell is one cell of the matrix: a case on upstreams of a kind for a client API.
type matrixCell struct {
	tc           matrixCase
	kind, client string
}

// matrixCells lists the cells forEachCase runs, in its order: each case for each upstream
// wire it applies to and each client API.
func matrixCells(cases []matrixCase) []matrixCell {
	var cells []matrixCell
	for _, tc := range cases {
		for _, kind := range []string{"openai", "anthropic", "gemini", "responses"} {
			if tc.kinds != nil && !strings.Contains(strings.Join(tc.kinds, ","), kind) {
				continue
			}
			for _, client := range []string{"chat", "responses", "messages"} {
				cells = append(cells, matrixCell{tc, kind, client})
			}
		}
	}
	return cells
}

// forEachCellAtOnce is forEachCase with up to matrixAtOnce cells running at the same time
// (subtests started from several goroutines, which testing allows, so that the cells are
// not held to -parallel, the number of CPUs).
func forEachCellAtOnce(t *testing.T, cases []matrixCase, run func(t *testing.T, tc matrixCase, kind, client string)) {
	slots := make(chan struct{}, matrixAtOnce)
	var wg sync.WaitGroup
	for _, c := range matrixCells(cases) {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			t.Run(c.tc.name+"/"+c.client+" on "+c.kind, func(t *testing.T) { run(t, c.tc, c.kind, c.client) })
		})
	}
	wg.Wait()
}

// matrixCases are the sixteen faults; streamOnly marks those that happen in a stream.
func matrixCases() []matrixCase {
	s503 := step{status: 503, body: "503"}
	down := []step{s503, s503, s503, s503, s503, s503}
	return []matrixCase{
		{name: "01 silence: accepts and never answers", plan: []step{{pre: "silence"}}, whole: true, primary: 1, spare: 1},
		{name: "02 first token late: head, then nothing", plan: []step{{pre: "head"}}, whole: true, primary: 1, spare: 1, streamOnly: true},
		{name: "03 stream cut midway", plan: []step{{stream: fault{4, "cut"}}}, whole: true, primary: 2, spare: 0, streamOnly: true},
		{name: "04 stream stalls midway", plan: []step{{stream: fault{4, "stall"}}}, whole: true, primary: 2, spare: 0, streamOnly: true},
		{name: "05 one malformed event", plan: []step{{stream: fault{3, "malformed"}}}, whole: true, primary: 1, spare: 0, streamOnly: true},
		{name: "06 error event midway", plan: []step{{stream: fault{3, "error"}}}, whole: true, primary: 2, spare: 0, streamOnly: true},
		{name: "07 429 with a long Retry-After", plan: []step{{status: 429, body: "429", retryAfter: "30"}}, whole: true, primary: 1, spare: 1},
		{name: "08 429 without Retry-After", plan: []step{{status: 429, body: "429"}}, whole: true, primary: 2, spare: 0},
		{name: "09 500 once", plan: []step{{status: 500, body: "500"}}, whole: true, primary: 2, spare: 0},
		{name: "10 503 on every retry: the fallback answers", plan: []step{s503, s503}, whole: true, primary: 2, spare: 1},
		{name: "11 connection reset", plan: []step{{pre: "reset"}}, whole: true, primary: 2, spare: 0},
		{name: "12 400 context window exceeded", plan: []step{{status: 400, body: "context"}}, whole: true, primary: 1, spare: 0, long: 1},
		{name: "13 400 content filter", plan: []step{{status: 400, body: "filter"}}, whole: false, primary: 1, spare: 0, kinds: []string{"openai", "anthropic"}},
		{name: "14 stream cut, then the restart diverges", plan: []step{{stream: fault{4, "cut"}}, {stream: fault{0, "diverge"}}}, whole: false, primary: 2, spare: 0,
			kinds: []string{"openai", "responses"}, streamOnly: true}, // restart: the prefill backends continue what they are given
		{name: "15 stream cut, then the prefill is refused", plan: []step{{stream: fault{4, "cut"}}, {stream: fault{0, "refuse"}}}, whole: true, primary: -1, spare: 0, streamOnly: true},
		{name: "16 primary down for a while", plan: down, whole: true, primary: 2, spare: 4},
	}
}

// forEachCase runs each case for each upstream wire it applies to and each client API.
func forEachCase(t *testing.T, cases []matrixCase, run func(t *testing.T, tc matrixCase, kind, client string)) {
	for _, c := range matrixCells(cases) {
		t.Run(c.tc.name+"/"+c.client+" on "+c.kind, func(t *testing.T) { run(t, c.tc, c.kind, c.client) })
	}
}

// answerer is a healthy upstream of the matrix: the fallbacks' choppy, or a JSON fake.
type answerer interface {
	baseURL() string
	requests() []string
}

// jsonFake is a gatewaytest fake answering contAnswer, streamed or whole (its wire's JSON).
type jsonFake struct{ *gatewaytest.Fake }

func newJSONFake(t *testing.T, kind string) jsonFake {
	f := gatewaytest.NewFakeJSON(t, kind)
	turns := make([]gatewaytest.Turn, 20)
	for i := range turns {
		turns[i] = gatewaytest.Turn{Text: contAnswer}
	}
	f.SetScript(turns...)
	return jsonFake{f}
}

func (f jsonFake) baseURL() string    { return f.BaseURL() }
func (f jsonFake) requests() []string { return f.Bodies() }

// runMatrix runs case tc for a client of API client on upstreams of kind, asking with ask
// (streamed or not).
func runMatrix(t *testing.T, tc matrixCase, kind, client string, ask func(*testing.T, *gatewaytest.Gateway) answer, stream bool) {
	primary := newMatrixUpstream(t, kind, errorBodies(t, kind), tc.plan...)
	var spare, long answerer = newChoppy(t, kind), newChoppy(t, kind)
	if !stream {
		primary.next = newJSONFake(t, kind)
		spare, long = newJSONFake(t, kind), newJSONFake(t, kind)
	}
	g := gatewaytest.StartYAML(t, fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  up: {type: %[1]s, base_url: %[2]q, api_key: k, retries: {max: 1, base_delay: 1ms, max_delay: 2ms, circuit_breaker: {failures: 2, cooldown: 1m}}, timeouts: {header: %[5]s, stream_idle: %[6]s}}
  spare: {type: %[1]s, base_url: %[3]q, api_key: k, retries: {max: 1, base_delay: 1ms, max_delay: 2ms}, timeouts: {header: 1s, stream_idle: %[6]s}}
  big: {type: %[1]s, base_url: %[4]q, api_key: k, timeouts: {header: 1s, stream_idle: %[6]s}}
models:
  m: {backend: up, upstream_model: fake-model, fallbacks: [s], context_fallbacks: [long], timeouts: {first_token: %[7]s}}
  s: {backend: spare, upstream_model: spare-model}
  long: {backend: big, upstream_model: long-model}
`, kind, primary.baseURL(), spare.baseURL(), long.baseURL(), matrixHeader, matrixStreamIdle, matrixFirstToken), gatewaytest.Options{Runtime: proxy.TestRuntime})
	if strings.HasPrefix(tc.name, "08") && kind == "gemini" {
		// The recorded 429 carries a RetryInfo of 34.4s, which the gateway honours as a
		// Retry-After: longer than max_delay, so the fallback answers at once.
		tc.primary, tc.spare = 1, 1
	}
	wantWhole := tc.whole
	asks := 1
	if strings.HasPrefix(tc.name, "16") {
		asks = 4 // one request after another while the primary is down
	}
	for i := 0; i < asks; i++ {
		start := time.Now()
		a := ask(t, g)
		took := time.Since(start)
		if took > matrixHang {
			t.Errorf("request %d took %v: a hang", i, took)
		}
		// Never a truncated success, whatever the case.
		if a.errorText == "" && a.text != contAnswer {
			t.Fatalf("request %d: a success with %q; want the whole answer %q", i, a.text, contAnswer)
		}
		if a.errorText == "" && a.finishes != 1 {
			t.Errorf("request %d: %d finishes; want 1", i, a.finishes)
		}
		switch {
		case wantWhole && a.errorText != "":
			t.Fatalf("request %d: error %q after %q; want the whole answer", i, a.errorText, a.text)
		case !wantWhole && a.errorText == "":
			t.Fatalf("request %d: the whole answer; want an error", i)
		case !wantWhole && !strings.HasPrefix(contAnswer, a.text):
			t.Fatalf("request %d: %q before the error is not a prefix of the answer", i, a.text)
		}
		t.Logf("request %d: %s after %v (text %d bytes, error %.80q)", i, map[bool]string{true: "whole answer", false: "error"}[a.errorText == ""], took.Round(time.Millisecond), len(a.text), a.errorText)
	}
	for _, c := range []struct {
		name      string
		got, want int
	}{{"primary", primary.requests(), tc.primary}, {"fallback", len(spare.requests()), tc.spare}, {"context fallback", len(long.requests()), tc.long}} {
		if c.want >= 0 && c.got != c.want {
			t.Errorf("%s asked %d times; want %d", c.name, c.got, c.want)
		}
	}
}

// TestFaultMatrix_NotStreamed: the faults that come before an answer, for requests that
// do not stream: the whole answer or a clean error status, within the bound.
func TestFaultMatrix_NotStreamed(t *testing.T) {
	t.Parallel() // as TestFaultMatrix
	var cases []matrixCase
	for _, tc := range matrixCases() {
		if !tc.streamOnly {
			cases = append(cases, tc)
		}
	}
	cases = append(cases, matrixCase{name: "02 head, then nothing", plan: []step{{pre: "head"}}, whole: true, primary: 1, spare: 1})
	asks := map[string]func(*testing.T, *gatewaytest.Gateway) answer{"chat": askChatWhole, "responses": askResponsesWhole, "messages": askMessagesWhole}
	forEachCellAtOnce(t, cases, func(t *testing.T, tc matrixCase, kind, client string) {
		runMatrix(t, tc, kind, client, asks[client], false)
	})
}

func askChatWhole(t *testing.T, g *gatewaytest.Gateway) answer {
	client := gatewaytest.OpenAI(g.V1(), "k")
	c, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("say it")}})
	if err != nil {
		return answer{errorText: err.Error()}
	}
	a := answer{text: c.Choices[0].Message.Content}
	if c.Choices[0].FinishReason != "" {
		a.finishes = 1
	}
	return a
}

func askResponsesWhole(t *testing.T, g *gatewaytest.Gateway) answer {
	client := gatewaytest.OpenAI(g.V1(), "k")
	r, err := client.Responses.New(context.Background(), responses.ResponseNewParams{Model: "m", Input: textInput("say it")})
	if err != nil {
		return answer{errorText: err.Error()}
	}
	a := answer{text: r.OutputText()}
	if r.Status == "completed" {
		a.finishes = 1
	}
	return a
}

func askMessagesWhole(t *testing.T, g *gatewaytest.Gateway) answer {
	client := gatewaytest.Anthropic(g.URL, "k")
	m, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model: "m", MaxTokens: 100, Messages: []anthropic.MessageParam{userText("say it")}})
	if err != nil {
		return answer{errorText: err.Error()}
	}
	var a answer
	for _, b := range m.Content {
		a.text += b.Text
	}
	if m.StopReason != "" {
		a.finishes = 1
	}
	return a
}
