package proxy

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agate-gateway/agate/metrics"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/messagesin"
	"github.com/agate-gateway/agate/translate/openaichat"
	"github.com/agate-gateway/agate/translate/responsesin"
)

// TestFullRequest_FirstPass: a Messages request the first pass read incomplete
// (messagesin.ParseHead) is completed, in place and once, by the first reader of its
// messages: the meter's prompt estimate of an upstream that reports no usage charges
// the whole request's, as the full parse reads it.
func TestFullRequest_FirstPass(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	body := []byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"what is the weather like in Paris today?"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"weather","input":{"city":"Paris"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"sunny, 21 degrees"}]}]}`)
	want, err := messagesin.ParseLazy(append([]byte(nil), body...), translate.DefaultMaxInflated)
	if err != nil {
		t.Fatal(err)
	}
	req, _, complete, err := messagesin.ParseHead(body, translate.DefaultMaxInflated, nil)
	if err != nil || complete || req.Messages != nil {
		t.Fatalf("ParseHead: complete %v, %d messages, %v; want the first pass's request", complete, len(req.Messages), err)
	}
	c := &requestRun{s: &Server{maxInflated: translate.DefaultMaxInflated}, req: req}
	m := &messagesRun{c: c, body: body}
	c.deferred, c.ownCall.meter.pending = m, c
	chargeCompletes(t, c, req, want)
	c.fullRequest() // a second reader: a no-op
	if len(req.Messages) != len(want.Messages) {
		t.Errorf("fullRequest again: %d messages", len(req.Messages))
	}
}

// TestFullRequest_FirstPassResponses is TestFullRequest_FirstPass for a Responses request
// (responsesin.ParseHead): the request is completed in place, its Core pointer kept.
func TestFullRequest_FirstPassResponses(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	body := []byte(`{"model":"m","input":[{"role":"user","content":"what is the weather like in Paris today?"},` +
		`{"type":"function_call","call_id":"c1","name":"weather","arguments":"{\"city\":\"Paris\"}"},` +
		`{"type":"function_call_output","call_id":"c1","output":"sunny, 21 degrees"}]}`)
	want, err := responsesin.ParseWithin(body, translate.DefaultMaxInflated)
	if err != nil {
		t.Fatal(err)
	}
	req, complete, err := responsesin.ParseHead(body, translate.DefaultMaxInflated, nil)
	if err != nil || complete || req.Core.Messages != nil {
		t.Fatalf("ParseHead: complete %v, %d messages, %v; want the first pass's request", complete, len(req.Core.Messages), err)
	}
	core := req.Core
	c := &requestRun{s: &Server{maxInflated: translate.DefaultMaxInflated}, req: core}
	c.deferred, c.ownCall.meter.pending = &responsesRun{c: c, req: req}, c
	c.fullRequest()
	if c.deferred != nil || req.Core != core || len(core.Messages) != len(want.Core.Messages) || core.Body != want.Core.Body {
		t.Errorf("after fullRequest: deferred %v, core kept %v, %d messages (want %d)", c.deferred, req.Core == core, len(core.Messages), len(want.Core.Messages))
	}
	if got, w := messagesin.EstimateTokens(core), messagesin.EstimateTokens(want.Core); got != w {
		t.Errorf("estimate %d, want the full request's %d", got, w)
	}
}

// TestFullRequest_FirstPassChat is TestFullRequest_FirstPass for a chat request
// (openaichat.ParseHead, as handleChat parses it: a view of the body, into a Scratch):
// completed in place by the first reader of its messages, the last user message's text
// (the ledger's capture) and the prompt estimate then the full parse's.
func TestFullRequest_FirstPassChat(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	// The model before the messages: a body this small with its model after them is built
	// at once (openaichat's guessFrom).
	body := `{"model":"m","messages":[{"role":"user","content":"what is the weather like in Paris today?"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}}]},` +
		`{"role":"tool","tool_call_id":"c1","content":"sunny, 21 degrees"},{"role":"user","content":"and tomorrow in \"Lyon\"?"}]}`
	want, err := openaichat.ParseRequestLazy([]byte(body)) // as handleChat's parse leaves its strings
	if err != nil {
		t.Fatal(err)
	}
	sc, st := new(openaichat.Scratch), new(openaichat.Stage)
	req, complete, err := openaichat.ParseHead(body, sc, st, translate.DefaultMaxInflated, func(string) bool { return true })
	if err != nil || complete || req.Messages != nil {
		t.Fatalf("ParseHead: complete %v, %d messages, %v; want the first pass's request", complete, len(req.Messages), err)
	}
	c := &requestRun{s: &Server{maxInflated: translate.DefaultMaxInflated}, req: req, scratch: sc}
	c.deferred, c.ownCall.meter.pending = (*chatRun)(c), c
	if !chargeCompletes(t, c, req, want) {
		t.FailNow()
	}
	if got, w := lastUserText(req, 100), lastUserText(want, 100); got != w || w != `and tomorrow in "Lyon"?` {
		t.Errorf("last user text %q, want %q", got, w)
	}
	c.fullRequest() // a second reader: a no-op
	if len(req.Messages) != len(want.Messages) {
		t.Errorf("fullRequest again: %d messages", len(req.Messages))
	}
}

// chargeCompletes charges c's meter for an answer that reported no usage, its prompt req
// (left incomplete by a first pass): the estimate must be the full request want's, and the
// charge must have completed req in place. It reports whether req was completed.
func chargeCompletes(t *testing.T, c *requestRun, req, want *translate.Request) bool {
	t.Helper()
	meter := &c.ownCall.meter
	meter.prompt, meter.tail = req, 8 // output read, no usage reported
	u, estimated := meter.charge()
	if !estimated || u.PromptTokens != messagesin.EstimateTokens(want) || u.PromptTokens <= 4 {
		t.Errorf("charged %d prompt tokens (estimated %v), want the full request's %d", u.PromptTokens, estimated, messagesin.EstimateTokens(want))
	}
	if c.deferred != nil || meter.pending != nil || len(req.Messages) != len(want.Messages) {
		t.Errorf("after the charge: deferred %v, pending %v, %d messages (want %d)", c.deferred, meter.pending, len(req.Messages), len(want.Messages))
		return false
	}
	return true
}

// TestServer_PassesBound: the func values New binds for the chat, Messages and Responses
// first passes (made once, not a closure a request) ask mayPass about their own
// passthrough's backends: a model on an anthropic backend passes as Messages only, one on
// a responses backend as Responses only, one on an openai backend as chat only, and a
// model no route names passes (it is refused once routed).
func TestServer_PassesBound(t *testing.T) {
	reg := prometheus.NewRegistry()
	srv, err := New(Options{Config: parseConfig(t, `
backends:
  anth: {type: anthropic, base_url: "http://127.0.0.1:1", api_key: k}
  resp: {type: responses, base_url: "http://127.0.0.1:1/v1", api_key: k}
  chat: {type: openai, base_url: "http://127.0.0.1:1/v1"}
models:
  claude: {backend: anth, upstream_model: c}
  gpt-resp: {backend: resp, upstream_model: r}
  gpt-chat: {backend: chat, upstream_model: o}
keys:
  k: {key: sk-k, models: ["*"]}
`, nil), Metrics: metrics.New(reg), Gatherer: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.closeLimiter)
	for _, c := range []struct {
		model                       string
		openAI, messages, responses bool
	}{
		{"claude", false, true, false},
		{"gpt-resp", false, false, true},
		{"gpt-chat", true, false, false},
		{"no-such-model", true, true, true},
	} {
		if got := srv.passesOpenAI(c.model); got != c.openAI {
			t.Errorf("passesOpenAI(%q) = %v, want %v", c.model, got, c.openAI)
		}
		if got := srv.passesMessages(c.model); got != c.messages {
			t.Errorf("passesMessages(%q) = %v, want %v", c.model, got, c.messages)
		}
		if got := srv.passesResponses(c.model); got != c.responses {
			t.Errorf("passesResponses(%q) = %v, want %v", c.model, got, c.responses)
		}
	}
}
