package proxy_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/responses"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/proxy"
)

// The Responses passthrough (a /v1/responses client on a responses backend, or azure's
// with api: responses) is continued by restart (continuation_responses.go): openai-go must
// get the whole answer once, one response.created and one terminal event, sequence
// numbers that follow each other, one output item and one content part (the SDK's
// ResponseAccumulator checks the indexes and ids; streamResponse), and the usage of every
// attempt. The fakes are choppy (kind responses) and recorded Responses streams replayed
// and cut (recordedCut).

// TestResponsesContinuation_WholeAnswer: a cut, a stall past stream_idle and an error event
// after part of the answer reached the client are continued on the same route.
func TestResponsesContinuation_WholeAnswer(t *testing.T) {
	for _, tt := range []struct {
		fault fault
		azure bool
	}{
		{fault: fault{3, "cut"}},
		{fault: fault{4, "stall"}},
		{fault: fault{2, "error"}},
		{fault: fault{0, "cut"}},
		{fault: fault{10, "cut"}},
		{fault: fault{5, "error"}, azure: true},
	} {
		name := fmt.Sprintf("%s after %d", tt.fault.how, tt.fault.after)
		if tt.azure {
			name += " on azure"
		}
		t.Run(name, func(t *testing.T) {
			up := newChoppy(t, "responses", tt.fault)
			g := contGateway(t, up, "")
			if tt.azure {
				g = gatewaytest.StartYAML(t, fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  up: {type: azure, base_url: %q, api_key: k, azure: {api: responses, api_version: 2025-03-01-preview}, retries: {max: 1, base_delay: 1ms, max_delay: 2ms}, timeouts: {stream_idle: 100ms}}
models:
  m: {backend: up, upstream_model: fake-model}
`, up.srv.URL), gatewaytest.Options{Runtime: proxy.TestRuntime})
			}
			start := time.Now()
			s := streamResponse(t, gatewaytest.OpenAI(g.V1(), "k"), responses.ResponseNewParams{Model: "m", Input: textInput("say it")})
			took := time.Since(start)
			if s.err != nil || s.sawError || s.final == nil {
				t.Fatalf("error %v (error event %v); want the whole answer", s.err, s.sawError)
			}
			t.Logf("whole answer after %v (stream_idle 100ms)", took.Round(time.Millisecond))
			var text string
			created, terminal := 0, 0
			for i, ev := range s.events {
				if seq := ev["sequence_number"].(float64); int(seq) != i {
					t.Errorf("event %d (%s): sequence_number %v; want %d", i, ev["type"], seq, i)
				}
				if oi, ok := ev["output_index"]; ok && oi.(float64) != 0 {
					t.Errorf("event %d (%s): output_index %v; want 0", i, ev["type"], oi)
				}
				if ci, ok := ev["content_index"]; ok && ci.(float64) != 0 {
					t.Errorf("event %d (%s): content_index %v; want 0", i, ev["type"], ci)
				}
				if id, ok := ev["item_id"]; ok && id != "msg_0" {
					t.Errorf("event %d (%s): item_id %v; want the client's msg_0", i, ev["type"], id)
				}
				switch ev["type"] {
				case "response.output_text.delta":
					text += ev["delta"].(string)
				case "response.created":
					created++
				case "response.completed":
					terminal++
				}
			}
			if text != contAnswer || created != 1 || terminal != 1 {
				t.Errorf("deltas %q, %d response.created, %d response.completed; want the answer once, one each", text, created, terminal)
			}
			if s.final.ID != "resp_0" {
				t.Errorf("final response %s; want the id the stream began with", s.final.ID)
			}
			if n := len(up.requests()); n != 2 {
				t.Fatalf("%d upstream requests; want 2", n)
			}
			waitFor(t, "the continuation counted", func() bool { return continuations(g, "continued") == 1 })
			p, o := int(s.final.Usage.InputTokens), int(s.final.Usage.OutputTokens)
			waitFor(t, "the usage charged", func() bool { cp, co := charged(g); return p == cp && o == co })
			if p < 10 || s.final.Usage.TotalTokens != int64(p+o) {
				t.Errorf("client's usage %d+%d (total %d); want the sum of every attempt (each prompt 10; a cut attempt estimated, or none when it said nothing) and a total that adds up", p, o, s.final.Usage.TotalTokens)
			}
		})
	}
}

// TestResponsesContinuation_NotContinued: a restart whose answer differs ends the stream
// with the Responses error event, code continuation_diverged; with continuation: off the
// upstream's error event is forwarded as it came; when every retry fails the stream ends
// with the failure.
func TestResponsesContinuation_NotContinued(t *testing.T) {
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
		{name: "every retry fails", plan: []fault{{3, "cut"}, {0, "cut"}}, requests: 2, wantError: "ended the stream before it finished",
			outcomes: map[string]int{"failed": 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			up := newChoppy(t, "responses", tt.plan...)
			g := contGateway(t, up, tt.extra)
			s := streamResponse(t, gatewaytest.OpenAI(g.V1(), "k"), responses.ResponseNewParams{Model: "m", Input: textInput("say it")})
			var text string
			var last map[string]any
			for _, ev := range s.events {
				if ev["type"] == "response.output_text.delta" {
					text += ev["delta"].(string)
				}
				last = ev
			}
			if !s.sawError || last["type"] != "error" || !strings.Contains(fmt.Sprint(last["message"]), tt.wantError) ||
				text == "" || !strings.HasPrefix(contAnswer, text) {
				t.Fatalf("text %q, last event %v; want part of the answer, then an error event with %q", text, last, tt.wantError)
			}
			if tt.name == "restart diverged" && last["code"] != "continuation_diverged" {
				t.Errorf("error event %v; want code continuation_diverged", last)
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

// TestResponsesContinuation_Recorded: recorded Responses streams cut at chosen events. A
// cut after the text began, behind a reasoning item, is continued: the client's response is
// the unbroken stream's (its output text and items), the new answer's reasoning swallowed.
// A cut where reasoning but no text reached the client, or inside a function call's
// arguments, is not continued and ends with the error event.
func TestResponsesContinuation_Recorded(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	for _, tt := range []struct {
		name, file string
		at         string // the event to cut before: the n-th containing at
		n          int
		whole      bool
	}{
		{name: "text after reasoning", file: "responses/stream/reasoning-summary.mirascope.sse", at: `"response.output_text.done"`, n: 1, whole: true},
		{name: "text of a plain answer", file: "responses/stream/text-basic.mirascope.sse", at: `"response.output_text.delta"`, n: 3, whole: true},
		{name: "reasoning only", file: "responses/stream/reasoning-summary.mirascope.sse", at: `"response.output_item.added"`, n: 2},
		{name: "function call arguments", file: "responses/stream/parallel-function-calls.mirascope.sse", at: `"response.function_call_arguments.delta"`, n: 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			whole := newRecordedCut(t, tt.file, -1)
			ref := contGatewayOn(t, "responses", whole.srv.URL+"/v1")
			want := streamResponse(t, gatewaytest.OpenAI(ref.V1(), "k"), responses.ResponseNewParams{Model: "m", Input: textInput("say it")})
			if want.err != nil || want.final == nil {
				t.Fatalf("the unbroken stream: %v", want.err)
			}
			up := newRecordedCut(t, tt.file, 0)
			up.cut = up.index(t, tt.at, tt.n)
			g := contGatewayOn(t, "responses", up.srv.URL+"/v1")
			got := streamResponse(t, gatewaytest.OpenAI(g.V1(), "k"), responses.ResponseNewParams{Model: "m", Input: textInput("say it")})
			if !tt.whole {
				if !got.sawError {
					t.Fatalf("error %v; want the stream to end with an error event", got.err)
				}
				if len(up.bodies) != 1 {
					t.Errorf("%d upstream requests; want 1", len(up.bodies))
				}
				waitFor(t, "not_continuable counted", func() bool { return continuations(g, "not_continuable") == 1 })
				return
			}
			if got.err != nil || got.sawError || got.final == nil {
				t.Fatalf("error %v (error event %v); want the whole answer", got.err, got.sawError)
			}
			if got.final.OutputText() != want.final.OutputText() || len(got.final.Output) != len(want.final.Output) {
				t.Errorf("output %q in %d items; want the unbroken stream's %q in %d", got.final.OutputText(), len(got.final.Output),
					want.final.OutputText(), len(want.final.Output))
			}
			if len(got.events) > len(want.events) {
				t.Errorf("%d events; want at most the unbroken stream's %d", len(got.events), len(want.events))
			}
			if len(up.bodies) != 2 {
				t.Errorf("%d upstream requests; want 2", len(up.bodies))
			}
			waitFor(t, "the continuation counted", func() bool { return continuations(g, "continued") == 1 })
		})
	}
}

// contGatewayOn starts a gateway whose model m is on a backend of kind at url, with one
// retry.
func contGatewayOn(t *testing.T, kind, url string) *gatewaytest.Gateway {
	return gatewaytest.StartYAML(t, fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  up: {type: %s, base_url: %q, api_key: upstream-secret, retries: {max: 1, base_delay: 1ms, max_delay: 2ms}, timeouts: {stream_idle: 100ms}}
models:
  m: {backend: up, upstream_model: fake-model}
`, kind, url), gatewaytest.Options{Runtime: proxy.TestRuntime})
}
