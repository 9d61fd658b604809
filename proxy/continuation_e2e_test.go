package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/prometheus/client_golang/prometheus/testutil"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/internal/openaitest"
	"github.com/agate-gateway/agate/proxy"
	"github.com/agate-gateway/agate/telemetry"
)

// The tests of this file break upstream streams midway and check what the clients (the
// official SDKs) receive: the whole answer exactly once, one finish, the usage of every
// attempt summed, and the metrics; or, when the answer cannot be continued, an in-band
// error. The fake upstream speaks each provider's streaming wire in the shapes of
// gatewaytest's fakes (themselves the shapes of the recordings in testdata/fixtures, whose
// provenance testdata/fixtures/SOURCES.md gives); its faults are the ones the providers
// document: Anthropic's mid-stream `event: error` with an overloaded_error ("Error
// events", Anthropic's streaming documentation), an OpenAI chunk or Gemini chunk holding
// an error object, a Responses `error` event, a connection dropped mid-body, silence, one
// event whose JSON is cut short, and a 400 invalid_request_error to a prefill (Anthropic:
// "final assistant content cannot end with trailing whitespace"; newer Claude models
// refuse prefill outright).

// contAnswer is the fake model's answer; its tokens are its words with their spacing.
const contAnswer = "The quick brown fox jumps over the lazy dog, twice over."

var tokenRE = regexp.MustCompile(`\s*\S+\s*`)

// status400 finds 400 as a number of its own in an error's text.
var status400 = regexp.MustCompile(`(^|[^0-9])400($|[^0-9])`)

// fault is what the fake does to one request: after sending after tokens, how
// (cut: drop the connection; stall: send nothing more; error: an error event; malformed:
// one unreadable event, then the rest; refuse: a 400 to a prefill, before any event;
// diverge: answer another text; slow: 30ms before each of the first after tokens, then
// the rest at once). The zero fault answers well.
type fault struct {
	after int
	how   string
}

// choppy is a fake upstream of kind (anthropic, gemini, openai, responses) that streams
// contAnswer, or what follows a prefill of it (anthropic and gemini continue a trailing
// assistant or model turn, as those APIs do; the OpenAI wires answer from the start), one
// token an event, and misbehaves on its i-th request as plan[i] says.
type choppy struct {
	kind string
	plan []fault
	srv  *httptest.Server

	mu     sync.Mutex
	bodies []string
	done   chan struct{}
}

func newChoppy(t *testing.T, kind string, plan ...fault) *choppy {
	c := &choppy{kind: kind, plan: plan, done: make(chan struct{})}
	c.srv = httptest.NewServer(c)
	t.Cleanup(func() { close(c.done); c.srv.Close() })
	return c
}

func (c *choppy) baseURL() string {
	if c.kind == "openai" || c.kind == "vllm" || c.kind == "responses" {
		return c.srv.URL + "/v1"
	}
	return c.srv.URL
}

func (c *choppy) requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.bodies...)
}

// prefill returns the text of the request's trailing assistant (model) turn, for the
// wires that continue one.
func (c *choppy) prefill(body []byte) string {
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"contents"`
		ContinueFinalMessage bool  `json:"continue_final_message"`
		AddGenerationPrompt  *bool `json:"add_generation_prompt"`
	}
	json.Unmarshal(body, &req)
	switch c.kind {
	case "anthropic":
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "assistant" {
			var s string
			if json.Unmarshal(req.Messages[n-1].Content, &s) == nil {
				return s
			}
			var blocks []struct{ Text string }
			json.Unmarshal(req.Messages[n-1].Content, &blocks)
			for _, b := range blocks {
				s += b.Text
			}
			return s
		}
	case "vllm": // vLLM continues a final assistant message when told to, else answers anew
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "assistant" && req.ContinueFinalMessage &&
			req.AddGenerationPrompt != nil && !*req.AddGenerationPrompt {
			var s string
			json.Unmarshal(req.Messages[n-1].Content, &s)
			return s
		}
	case "gemini":
		if n := len(req.Contents); n > 0 && req.Contents[n-1].Role == "model" {
			var s string
			for _, p := range req.Contents[n-1].Parts {
				s += p.Text
			}
			return s
		}
	}
	return ""
}

func (c *choppy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	n := len(c.bodies)
	c.bodies = append(c.bodies, string(body))
	c.mu.Unlock()
	var f fault
	if n < len(c.plan) {
		f = c.plan[n]
	}
	prefill := c.prefill(body)
	switch {
	case c.kind == "anthropic" && strings.TrimRight(prefill, " \t\n") != prefill:
		c.refuse(w, "messages: final assistant content cannot end with trailing whitespace")
		return
	case c.kind == "openai" && strings.Contains(string(body), `"continue_final_message"`): // OpenAI's answer to a member it does not know
		c.refuse(w, "Unrecognized request argument supplied: continue_final_message")
		return
	case f.how == "refuse" && prefill != "":
		c.refuse(w, "This model does not support assistant message prefill. The conversation must end with a user message.")
		return
	case !strings.HasPrefix(contAnswer, prefill):
		c.refuse(w, "the test's prefill is not a prefix of the answer")
		return
	}
	text := contAnswer[len(prefill):]
	if f.how == "diverge" {
		text = "A different answer altogether."
	}
	tokens := tokenRE.FindAllString(text, -1)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	fl := w.(http.Flusher)
	s := &sseWriter{w: w, kind: strings.Replace(c.kind, "vllm", "openai", 1), n: n}
	s.head()
	for i, tok := range tokens {
		if f.how == "slow" && i < f.after {
			time.Sleep(30 * time.Millisecond)
		}
		if f.how != "" && i == f.after {
			switch f.how {
			case "cut":
				fl.Flush()
				conn, buf, err := w.(http.Hijacker).Hijack()
				if err == nil {
					buf.Flush()
					conn.Close() // no end of the chunked body: a dropped connection
				}
				return
			case "stall":
				fl.Flush()
				select {
				case <-r.Context().Done():
				case <-c.done:
				}
				return
			case "error":
				s.errorEvent()
				fl.Flush()
				return
			case "malformed":
				s.malformed()
			}
		}
		s.delta(tok, i+1)
		fl.Flush()
	}
	s.tail(len(tokens))
}

func (c *choppy) refuse(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(400)
	switch c.kind {
	case "anthropic":
		fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":%q}}`, msg)
	case "gemini":
		fmt.Fprintf(w, `{"error":{"code":400,"message":%q,"status":"INVALID_ARGUMENT"}}`, msg)
	default:
		fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error","param":"messages","code":null}}`, msg)
	}
}

// sseWriter writes one streamed answer of kind, numbered n.
type sseWriter struct {
	w    io.Writer
	kind string
	n    int
	seq  int // Responses sequence_number
}

func (s *sseWriter) event(typ, data string) {
	if typ != "" {
		fmt.Fprintf(s.w, "event: %s\n", typ)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", data)
}

// resp writes a Responses event: its type, sequence number and members.
func (s *sseWriter) resp(typ, members string) {
	s.event(typ, fmt.Sprintf(`{"type":%q,"sequence_number":%d,%s}`, typ, s.seq, members))
	s.seq++
}

func (s *sseWriter) respHead(status, usage string) string {
	return fmt.Sprintf(`"response":{"id":"resp_%d","object":"response","created_at":1761175225,"model":"gpt-fake","status":%q,"error":null,"incomplete_details":null,"output":[],"usage":%s}`, s.n, status, usage)
}

func (s *sseWriter) head() {
	switch s.kind {
	case "anthropic":
		s.event("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_%d","type":"message","role":"assistant","model":"claude-fake","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`, s.n))
		s.event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	case "openai":
		s.chunk(`{"role":"assistant","content":""}`, "null")
	case "responses":
		s.resp("response.created", s.respHead("in_progress", "null"))
		s.resp("response.output_item.added", fmt.Sprintf(`"output_index":0,"item":{"id":"msg_%d","type":"message","status":"in_progress","role":"assistant","content":[]}`, s.n))
		s.resp("response.content_part.added", fmt.Sprintf(`"item_id":"msg_%d","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":""}`, s.n))
	}
}

func (s *sseWriter) chunk(delta, finish string) {
	s.event("", fmt.Sprintf(`{"id":"chatcmpl-%d","object":"chat.completion.chunk","created":1761175225,"model":"gpt-fake","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`, s.n, delta, finish))
}

func (s *sseWriter) geminiChunk(parts, finish string, tokens int) {
	s.event("", fmt.Sprintf(`{"candidates":[{"content":{"parts":[%s],"role":"model"}%s,"index":0}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":%d,"totalTokenCount":%d},"modelVersion":"gemini-fake","responseId":"resp%d"}`, parts, finish, tokens, 10+tokens, s.n))
}

func (s *sseWriter) delta(tok string, sent int) {
	q, _ := json.Marshal(tok)
	switch s.kind {
	case "anthropic":
		s.event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+string(q)+`}}`)
	case "gemini":
		s.geminiChunk(`{"text":`+string(q)+`}`, "", sent)
	case "openai":
		s.chunk(`{"content":`+string(q)+`}`, "null")
	case "responses":
		s.resp("response.output_text.delta", fmt.Sprintf(`"item_id":"msg_%d","output_index":0,"content_index":0,"delta":%s`, s.n, q))
	}
}

func (s *sseWriter) tail(tokens int) {
	switch s.kind {
	case "anthropic":
		s.event("content_block_stop", `{"type":"content_block_stop","index":0}`)
		s.event("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":%d}}`, tokens))
		s.event("message_stop", `{"type":"message_stop"}`)
	case "gemini":
		s.geminiChunk(`{"text":""}`, `,"finishReason":"STOP"`, tokens)
	case "openai":
		s.chunk(`{}`, `"stop"`)
		s.event("", fmt.Sprintf(`{"id":"chatcmpl-%d","object":"chat.completion.chunk","created":1761175225,"model":"gpt-fake","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":%d,"total_tokens":%d}}`, s.n, tokens, 10+tokens))
		s.event("", "[DONE]")
	case "responses":
		s.resp("response.output_text.done", fmt.Sprintf(`"item_id":"msg_%d","output_index":0,"content_index":0,"text":""`, s.n))
		s.resp("response.output_item.done", fmt.Sprintf(`"output_index":0,"item":{"id":"msg_%d","type":"message","status":"completed","role":"assistant","content":[]}`, s.n))
		s.resp("response.completed", s.respHead("completed", fmt.Sprintf(`{"input_tokens":10,"input_tokens_details":{"cached_tokens":0},"output_tokens":%d,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":%d}`, tokens, 10+tokens)))
	}
}

func (s *sseWriter) errorEvent() {
	switch s.kind {
	case "anthropic":
		s.event("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	case "gemini":
		s.event("", `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`)
	case "openai":
		s.event("", `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`)
	case "responses":
		s.resp("error", `"code":"server_error","message":"The server had an error while processing your request.","param":null`)
	}
}

// malformed writes one event whose JSON is cut short.
func (s *sseWriter) malformed() {
	typ := ""
	if s.kind == "anthropic" {
		typ = "content_block_delta"
	}
	s.event(typ, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"unseen-wor`)
}

// contGateway starts a gateway whose model m is on a backend of kind at up, with one
// retry, a 100ms stream_idle and model settings extra (YAML members, may be empty).
func contGateway(t *testing.T, up *choppy, extra string) *gatewaytest.Gateway {
	return gatewaytest.StartYAML(t, fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  up: {type: %s, base_url: %q, api_key: upstream-secret, retries: {max: 1, base_delay: 1ms, max_delay: 2ms}, timeouts: {stream_idle: 100ms}}
models:
  m: {backend: up, upstream_model: fake-model%s}
`, up.kind, up.baseURL(), extra), gatewaytest.Options{Runtime: proxy.TestRuntime})
}

// answer is what a client made of a stream.
type answer struct {
	text      string
	finishes  int // finish reasons (chat), terminal events (Responses), message_delta (Messages)
	starts    int // role chunks (chat), response.created (Responses), message_start (Messages)
	prompt    int
	output    int
	errorText string // an in-band error's message
}

func askChat(t *testing.T, g *gatewaytest.Gateway) answer {
	t.Helper()
	client := gatewaytest.OpenAI(g.V1(), "k")
	s := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("say it")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
	var a answer
	for s.Next() {
		ch := s.Current()
		for _, c := range ch.Choices {
			a.text += c.Delta.Content
			if c.Delta.Role != "" {
				a.starts++
			}
			if c.FinishReason != "" {
				a.finishes++
			}
		}
		if ch.Usage.TotalTokens > 0 {
			a.prompt, a.output = int(ch.Usage.PromptTokens), int(ch.Usage.CompletionTokens)
		}
	}
	if err := s.Err(); err != nil {
		a.errorText = err.Error()
	}
	return a
}

func askResponses(t *testing.T, g *gatewaytest.Gateway) answer {
	t.Helper()
	s := streamResponse(t, gatewaytest.OpenAI(g.V1(), "k"), responses.ResponseNewParams{Model: "m", Input: textInput("say it")})
	var a answer
	for _, ev := range s.events {
		switch ev["type"] {
		case "response.output_text.delta":
			a.text += ev["delta"].(string)
		case "response.created":
			a.starts++
		case "response.completed", "response.failed", "response.incomplete":
			a.finishes++
		case "error":
			a.errorText = fmt.Sprint(ev["message"])
		}
	}
	if s.final != nil {
		a.prompt, a.output = int(s.final.Usage.InputTokens), int(s.final.Usage.OutputTokens)
	}
	if s.err != nil {
		a.errorText = s.err.Error()
	}
	return a
}

func askMessages(t *testing.T, g *gatewaytest.Gateway) answer {
	t.Helper()
	client := gatewaytest.Anthropic(g.URL, "k")
	s := client.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{
		Model: "m", MaxTokens: 100, Messages: []anthropic.MessageParam{userText("say it")}})
	var a answer
	var msg anthropic.Message
	var types []string
	for s.Next() {
		ev := s.Current()
		types = append(types, ev.Type)
		if err := msg.Accumulate(ev); err != nil {
			t.Fatalf("accumulate %s: %v", ev.Type, err)
		}
		switch ev.Type {
		case "message_start":
			a.starts++
		case "message_delta":
			a.finishes++
		case "content_block_delta":
			a.text += ev.Delta.Text
		}
	}
	if err := s.Err(); err != nil {
		a.errorText = err.Error()
		return a
	}
	checkEventOrder(t, types)
	if len(msg.Content) != 1 || msg.Content[0].Text != a.text {
		t.Errorf("accumulated content %+v; want one text block %q", msg.Content, a.text)
	}
	a.prompt, a.output = int(msg.Usage.InputTokens), int(msg.Usage.OutputTokens)
	return a
}

var askers = map[string]func(*testing.T, *gatewaytest.Gateway) answer{
	"chat": askChat, "responses": askResponses, "messages": askMessages,
}

// charged is the usage the gateway charged for model m (gateway_tokens_total).
func charged(g *gatewaytest.Gateway) (prompt, output int) {
	p := testutil.ToFloat64(g.Metrics.Tokens.WithLabelValues("m", "up", "anonymous", "prompt"))
	o := testutil.ToFloat64(g.Metrics.Tokens.WithLabelValues("m", "up", "anonymous", "completion"))
	return int(p), int(o)
}

func continuations(g *gatewaytest.Gateway, outcome string) int {
	return int(testutil.ToFloat64(g.Metrics.StreamContinuations.WithLabelValues("m", outcome)))
}

// TestContinuation_WholeAnswer: a stream that the upstream breaks after part of the
// answer reached the client is continued, by prefill (Anthropic, Gemini) or restart
// (OpenAI chat and Responses wires), and the client of each API gets the whole answer
// exactly once, one start and one finish, and the usage of both attempts, as charged.
func TestContinuation_WholeAnswer(t *testing.T) {
	for _, tt := range []struct {
		client, kind string
		fault        fault
		// prefill is the trailing assistant turn the continuation must carry ("" none).
		prefill string
	}{
		{"chat", "anthropic", fault{3, "cut"}, "The quick brown"},
		{"chat", "gemini", fault{3, "stall"}, "The quick brown"},
		{"chat", "anthropic", fault{2, "error"}, "The quick"},
		{"chat", "responses", fault{4, "error"}, ""},
		{"responses", "openai", fault{3, "cut"}, ""},
		{"responses", "anthropic", fault{5, "stall"}, "The quick brown fox jumps"},
		{"messages", "openai", fault{4, "stall"}, ""},
		{"messages", "gemini", fault{2, "error"}, "The quick"},
		{"messages", "responses", fault{1, "cut"}, ""},
	} {
		t.Run(fmt.Sprintf("%s on %s, %s after %d", tt.client, tt.kind, tt.fault.how, tt.fault.after), func(t *testing.T) {
			up := newChoppy(t, tt.kind, tt.fault)
			g := contGateway(t, up, "")
			start := time.Now()
			a := askers[tt.client](t, g)
			if a.errorText != "" || a.text != contAnswer {
				t.Fatalf("answer %q, error %q; want the whole answer once", a.text, a.errorText)
			}
			t.Logf("whole answer after %v (stream_idle 100ms)", time.Since(start).Round(time.Millisecond))
			if a.starts != 1 || a.finishes != 1 {
				t.Errorf("%d starts and %d finishes; want one each", a.starts, a.finishes)
			}
			bodies := up.requests()
			if len(bodies) != 2 {
				t.Fatalf("%d upstream requests; want 2", len(bodies))
			}
			if got := up.prefill([]byte(bodies[1])); got != tt.prefill {
				t.Errorf("continuation's prefill %q; want %q", got, tt.prefill)
			}
			p, o := charged(g)
			if a.prompt != p || a.output != o || p <= 10 {
				t.Errorf("client's usage %d+%d, charged %d+%d; want the same, the sum of both attempts (each prompt 10)", a.prompt, a.output, p, o)
			}
			if n := continuations(g, "continued"); n != 1 {
				t.Errorf("gateway_stream_continuations_total{outcome=continued} = %d; want 1", n)
			}
		})
	}
}

// TestContinuation_NotContinued: what a client gets when the answer cannot be continued
// as it should: a backend that refuses the prefill is restarted and the client never sees
// the 400; a restart whose new answer differs ends the stream with an in-band error
// continuation_diverged; with continuation: off the stream ends with the failure, as
// before continuation existed.
func TestContinuation_NotContinued(t *testing.T) {
	for _, tt := range []struct {
		name, client, kind, extra string
		plan                      []fault
		requests                  int
		wantText                  string // "" wants the in-band error
		wantError                 string
		outcomes                  map[string]int
	}{
		{name: "prefill refused, restarted", client: "chat", kind: "anthropic", plan: []fault{{3, "cut"}, {0, "refuse"}},
			requests: 3, wantText: contAnswer, outcomes: map[string]int{"refused": 1, "continued": 1}},
		{name: "prefill refused, restarted (Messages)", client: "messages", kind: "gemini", plan: []fault{{2, "error"}, {0, "refuse"}},
			requests: 3, wantText: contAnswer, outcomes: map[string]int{"refused": 1, "continued": 1}},
		{name: "restart diverged", client: "responses", kind: "openai", plan: []fault{{3, "cut"}, {0, "diverge"}},
			requests: 2, wantError: "could not be continued", outcomes: map[string]int{"diverged": 1}},
		{name: "restart diverged (chat)", client: "chat", kind: "responses", plan: []fault{{3, "error"}, {0, "diverge"}},
			requests: 2, wantError: "could not be continued", outcomes: map[string]int{"diverged": 1}},
		{name: "continuation off", client: "chat", kind: "anthropic", extra: ", continuation: off", plan: []fault{{3, "error"}},
			requests: 1, wantError: "Overloaded", outcomes: map[string]int{}},
		{name: "every retry fails", client: "messages", kind: "openai", plan: []fault{{3, "cut"}, {0, "cut"}},
			requests: 2, wantError: "upstream", outcomes: map[string]int{"failed": 1}},
		{name: "request deadline passed", client: "chat", kind: "gemini", extra: ", timeouts: {request: 80ms}", plan: []fault{{3, "stall"}},
			requests: 1, wantError: "timed out", outcomes: map[string]int{"failed": 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			up := newChoppy(t, tt.kind, tt.plan...)
			g := contGateway(t, up, tt.extra)
			a := askers[tt.client](t, g)
			if tt.wantText != "" {
				if a.errorText != "" || a.text != tt.wantText {
					t.Fatalf("answer %q, error %q; want the whole answer", a.text, a.errorText)
				}
			} else if !strings.Contains(a.errorText, tt.wantError) || !strings.HasPrefix(contAnswer, a.text) || a.text == "" {
				t.Fatalf("answer %q, error %q; want part of the answer, then an in-band error with %q", a.text, a.errorText, tt.wantError)
			}
			// "400" as a status, not inside a number (a loopback port such as 40089 in a
			// transport error's text).
			if strings.Contains(a.errorText, "prefill") || status400.MatchString(a.errorText) {
				t.Errorf("the client saw the prefill's refusal: %q", a.errorText)
			}
			if n := len(up.requests()); n != tt.requests {
				t.Errorf("%d upstream requests; want %d", n, tt.requests)
			}
			for _, o := range []string{"continued", "diverged", "refused", "failed", "not_continuable"} {
				if got := continuations(g, o); got != tt.outcomes[o] {
					t.Errorf("gateway_stream_continuations_total{outcome=%s} = %d; want %d", o, got, tt.outcomes[o])
				}
			}
		})
	}
}

// TestMalformedEvent_Skipped: one event whose JSON is cut short, in the middle of a
// stream that parses otherwise, is skipped and counted: the client gets the whole answer
// from the one attempt, and nothing is continued. (A passthrough still ends its stream
// with an error there: TestPassthrough_StreamEventNotJSON.)
func TestMalformedEvent_Skipped(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	for _, tt := range []struct{ client, kind string }{
		{"chat", "anthropic"},
		{"chat", "gemini"},
		{"messages", "openai"},
		{"responses", "gemini"},
		{"chat", "responses"},
	} {
		t.Run(tt.client+" on "+tt.kind, func(t *testing.T) {
			up := newChoppy(t, tt.kind, fault{2, "malformed"})
			var logs gatewaytest.Buffer
			g := gatewaytest.StartYAML(t, fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  up: {type: %s, base_url: %q, api_key: upstream-secret}
models:
  m: {backend: up, upstream_model: fake-model}
`, up.kind, up.baseURL()), gatewaytest.Options{Runtime: proxy.TestRuntime, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
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
			if !strings.Contains(logs.String(), "skipped a malformed upstream event") || strings.Contains(logs.String(), "unseen-wor") {
				t.Errorf("want one log line without the event's content:\n%s", logs.String())
			}
		})
	}
}

// TestContinuation_OnTheFallback: a primary without retries whose stream is cut is
// continued on the model's fallback, by the fallback's own mode (a Gemini prefill after
// an Anthropic primary), and the answer names the model the stream began with.
func TestContinuation_OnTheFallback(t *testing.T) {
	primary := newChoppy(t, "anthropic", fault{3, "cut"})
	spare := newChoppy(t, "gemini")
	g := gatewaytest.StartYAML(t, fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  up: {type: anthropic, base_url: %q, api_key: upstream-secret, retries: {max: 0}}
  spare: {type: gemini, base_url: %q, api_key: upstream-secret}
models:
  m: {backend: up, upstream_model: fake-model, fallbacks: [backup]}
  backup: {backend: spare, upstream_model: fake-model}
`, primary.baseURL(), spare.baseURL()), gatewaytest.Options{Runtime: proxy.TestRuntime})
	a := askChat(t, g)
	if a.errorText != "" || a.text != contAnswer || a.finishes != 1 || a.starts != 1 {
		t.Fatalf("answer %q (%d starts, %d finishes), error %q; want the whole answer once", a.text, a.starts, a.finishes, a.errorText)
	}
	if p, s := len(primary.requests()), spare.requests(); p != 1 || len(s) != 1 || spare.prefill([]byte(s[0])) != "The quick brown" {
		t.Fatalf("primary asked %d times, fallback %d (%v); want once each, the fallback with the prefill", p, len(s), s)
	}
	if a.prompt != 20 {
		t.Errorf("prompt tokens %d; want both attempts' 10", a.prompt)
	}
	if n := continuations(g, "continued"); n != 1 {
		t.Errorf("gateway_stream_continuations_total{outcome=continued} = %d; want 1", n)
	}
}

// TestContinuation_Traced: the continuation is an attempt of its own on the trace: two
// client spans under the server span, the first failed, the second its continuation
// (agate.attempt 2 on the same route).
func TestContinuation_Traced(t *testing.T) {
	recv := newOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	up := newChoppy(t, "anthropic", fault{3, "cut"})
	cfg := gatewaytest.Parse(t, fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  up: {type: anthropic, base_url: %q, api_key: upstream-secret, retries: {max: 1, base_delay: 1ms, max_delay: 2ms}}
models:
  m: {backend: up, upstream_model: fake-model}
telemetry: {traces: true}
`, up.baseURL()))
	tracer, err := telemetry.New(context.Background(), proxy.TelemetryOptions(cfg.Telemetry))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tracer.Shutdown(context.Background()) })
	g := gatewaytest.Start(t, cfg, gatewaytest.Options{Runtime: proxy.TestRuntime, Tracer: tracer})
	if a := askChat(t, g); a.text != contAnswer {
		t.Fatalf("answer %q, error %q", a.text, a.errorText)
	}
	var attempts []string
	for _, s := range recv.waitSpans(t, tracer) {
		if s.Kind == tracepb.Span_SPAN_KIND_CLIENT {
			attempts = append(attempts, fmt.Sprintf("%s attempt %s %s", s.Name, attrs(s)["agate.attempt"], s.Status.GetCode()))
		}
	}
	sort.Strings(attempts)
	want := []string{"chat fake-model attempt 1 STATUS_CODE_ERROR", "chat fake-model attempt 2 STATUS_CODE_UNSET"}
	if !slices.Equal(attempts, want) {
		t.Errorf("client spans %q; want %q", attempts, want)
	}
}

// TestContinuation_ChunkContract: the raw chat stream of a continued answer keeps the
// chunk contract (openaitest.CheckChunks: one id and model, role first, one finish, usage
// last, [DONE]); a diverged one ends with an error frame and nothing after it.
func TestContinuation_ChunkContract(t *testing.T) {
	for _, tt := range []struct {
		kind string
		plan []fault
		want openaitest.Want
	}{
		{"anthropic", []fault{{3, "cut"}}, openaitest.Want{Model: "m", Usage: openaitest.UsageRequired}},
		{"gemini", []fault{{2, "stall"}}, openaitest.Want{Model: "m", Usage: openaitest.UsageRequired}},
		{"responses", []fault{{4, "error"}}, openaitest.Want{Model: "m", Usage: openaitest.UsageRequired}},
		{"responses", []fault{{4, "error"}, {0, "diverge"}}, openaitest.Want{Model: "m", ErrorEnd: true}},
	} {
		t.Run(tt.kind+" "+tt.plan[len(tt.plan)-1].how, func(t *testing.T) {
			g := contGateway(t, newChoppy(t, tt.kind, tt.plan...), "")
			resp, err := http.Post(g.V1()+"/chat/completions", "application/json",
				strings.NewReader(`{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"say it"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			openaitest.CheckChunks(t, body, tt.want)
			if n := strings.Count(string(body), `"role":"assistant"`); n != 1 {
				t.Errorf("%d role chunks; want 1:\n%s", n, body)
			}
		})
	}
}

// TestContinuation_RestartWithinFirstToken: a restart that repeats the text the client
// has more slowly than models.<name>.timeouts.first_token is not cut by it: the repeated
// events the client does not see still end the wait for a first event.
func TestContinuation_RestartWithinFirstToken(t *testing.T) {
	up := newChoppy(t, "openai", fault{4, "cut"}, fault{4, "slow"}) // 4 × 30ms before anything new
	g := contGateway(t, up, ", timeouts: {first_token: 50ms}")
	a := askResponses(t, g)
	if a.errorText != "" || a.text != contAnswer {
		t.Fatalf("answer %q, error %q; want the whole answer", a.text, a.errorText)
	}
	if n := len(up.requests()); n != 2 {
		t.Errorf("%d upstream requests; want 2", n)
	}
}
