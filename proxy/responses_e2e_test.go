package proxy_test

import (
	"context"
	"encoding/json"

	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/internal/openaitest"
	"github.com/agate-gateway/agate/proxy"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agate-gateway/agate/limits/redistest"
)

// The end-to-end tests of POST /v1/responses: the official openai-go Responses client
// against the gateway, over the mock backend and a fake upstream of every wire.

// responsesGateway serves model "m" from one backend of kind (mock, anthropic, gemini,
// openai, responses), for keys alice and bob.
type responsesGateway struct {
	url  string
	fake *gatewaytest.Fake // nil for mock
}

func startResponsesGateway(t *testing.T, kind string, extra string) *responsesGateway {
	g := &responsesGateway{}
	backend := "{type: mock}"
	if kind != "mock" {
		g.fake = gatewaytest.NewFakeJSON(t, kind)
		backend = fmt.Sprintf("{type: %s, base_url: %q, api_key: up-secret, retries: {max: 0}}", kind, g.fake.BaseURL())
	}
	y := fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  up: %s
models:
  m: {backend: up, upstream_model: up-model}
  # The default model of the OpenAI Agents SDK 0.20.0 (testdata/node/agents.mjs).
  gpt-5.6-luna: {backend: up, upstream_model: up-model}
keys:
  alice: {key: alice-key, models: ["*"]}
  bob: {key: bob-key, models: ["*"]}
%s`, backend, extra)
	g.url = gatewaytest.StartYAML(t, y, gatewaytest.Options{Runtime: proxy.TestRuntime}).V1()
	return g
}

func (g *responsesGateway) client(key string) openai.Client {
	return gatewaytest.OpenAI(g.url, key)
}

// script sets the fake upstream's turns; the mock backend needs none (it echoes).
func (g *responsesGateway) script(turns ...gatewaytest.Turn) {
	if g.fake != nil {
		g.fake.SetScript(turns...)
	}
}

func (g *responsesGateway) upstreamBodies() []string {
	if g.fake == nil {
		return nil
	}
	return g.fake.Bodies()
}

var responsesKinds = []string{"mock", "anthropic", "gemini", "openai", "responses"}

// lastFunctionCall returns the last function_call item of resp's output, or nil.
func lastFunctionCall(resp *responses.Response) *responses.ResponseFunctionToolCall {
	var call *responses.ResponseFunctionToolCall
	for _, item := range resp.Output {
		if item.Type == "function_call" {
			fc := item.AsFunctionCall()
			call = &fc
		}
	}
	return call
}

func textInput(s string) responses.ResponseNewParamsInputUnion {
	return responses.ResponseNewParamsInputUnion{OfString: openai.String(s)}
}

// TestResponses_New: a non-streamed response on every backend: text, status, usage and
// the client-facing model.
func TestResponses_New(t *testing.T) {
	for _, kind := range responsesKinds {
		t.Run(kind, func(t *testing.T) {
			g := startResponsesGateway(t, kind, "")
			g.script(gatewaytest.Turn{Text: "hello back"})
			want := "hello back"
			if kind == "mock" {
				want = "hello there"
			}
			c := g.client("alice-key")
			resp, err := c.Responses.New(context.Background(), responses.ResponseNewParams{
				Model: "m", Input: textInput("hello there"), Instructions: openai.String("be brief")})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			got := fmt.Sprintf("%s %s %q usage>0=%v", resp.Status, resp.Model, resp.OutputText(), resp.Usage.TotalTokens > 0)
			if w := fmt.Sprintf("completed m %q usage>0=true", want); got != w {
				t.Errorf("got %s, want %s", got, w)
			}
			if !strings.HasPrefix(resp.ID, "resp_") {
				t.Errorf("id %q", resp.ID)
			}
			if kind != "mock" && kind != "responses" {
				if b := g.upstreamBodies(); len(b) != 1 || !strings.Contains(b[0], "be brief") || (kind != "gemini" && !strings.Contains(b[0], "up-model")) {
					t.Errorf("upstream request lacks the instructions or the upstream model: %v", b)
				}
			}
			if kind == "responses" {
				b := g.upstreamBodies()
				if len(b) != 1 || !strings.Contains(b[0], `"model":"up-model"`) || !strings.Contains(b[0], `"instructions":"be brief"`) {
					t.Errorf("passthrough body: %v", b)
				}
			}
		})
	}
}

// streamed collects a Responses stream: the raw events, and the SDK's accumulator's
// reconstruction of the response.
type streamed struct {
	events []map[string]any
	final  *responses.Response
	err    error
	// sawError is set when the stream ended with an error event.
	sawError bool
}

func streamResponse(t *testing.T, c openai.Client, params responses.ResponseNewParams) streamed {
	t.Helper()
	s := c.Responses.NewStreaming(context.Background(), params)
	var out streamed
	var raw, accumulated [][]byte
	for s.Next() {
		ev := s.Current()
		raw = append(raw, []byte(ev.RawJSON()))
		var m map[string]any
		if err := json.Unmarshal([]byte(ev.RawJSON()), &m); err != nil {
			t.Fatalf("event is not JSON: %v", err)
		}
		out.events = append(out.events, m)
		if ev.Type == "error" {
			out.sawError = true
			continue // the SDK passes Responses error events on as events
		}
		accumulated = append(accumulated, raw[len(raw)-1])
	}
	out.err = s.Err()
	// The SDK's accumulator takes the events once the stream is over, decoded as its
	// WebSocket client decodes them (sdkServerEvents: the union's own UnmarshalJSON was
	// most of these tests' CPU under -race).
	var acc responses.ResponseAccumulator
	for _, se := range sdkServerEvents(t, accumulated) {
		if err := acc.AddEvent(se); err != nil {
			t.Fatalf("accumulator rejected %s: %v", se.Type, err)
		}
	}
	if out.err == nil {
		openaitest.CheckResponseEventData(t, raw)
	}
	if out.err == nil && !out.sawError {
		r, err := acc.ReconstructedResponse()
		if err != nil {
			t.Fatalf("accumulator: %v", err)
		}
		out.final = r
	}
	return out
}

// TestResponses_Streaming: a streamed response on every backend, checked by the SDK's
// accumulator, with increasing sequence numbers and one terminal event.
func TestResponses_Streaming(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	for _, kind := range responsesKinds {
		t.Run(kind, func(t *testing.T) {
			g := startResponsesGateway(t, kind, "")
			g.script(gatewaytest.Turn{Text: "streamed words here"})
			want := "streamed words here"
			if kind == "mock" {
				want = "please stream this"
			}
			s := streamResponse(t, g.client("alice-key"), responses.ResponseNewParams{Model: "m", Input: textInput("please stream this")})
			if s.err != nil {
				t.Fatalf("stream: %v", s.err)
			}
			if got := s.final.OutputText(); got != want {
				t.Errorf("accumulated text %q, want %q", got, want)
			}
			if s.final.Usage.TotalTokens == 0 || s.final.Model != "m" {
				t.Errorf("final response: usage %d, model %q (want m)", s.final.Usage.TotalTokens, s.final.Model)
			}
			terminals := 0
			for i, ev := range s.events {
				if seq, _ := ev["sequence_number"].(float64); int(seq) != i {
					t.Errorf("event %d (%v) has sequence_number %v", i, ev["type"], ev["sequence_number"])
				}
				switch ev["type"] {
				case "response.completed", "response.incomplete", "response.failed", "error":
					terminals++
				}
			}
			if terminals != 1 || s.events[len(s.events)-1]["type"] != "response.completed" {
				t.Errorf("%d terminal events, last %v", terminals, s.events[len(s.events)-1]["type"])
			}
		})
	}
}

// TestResponses_FunctionCallRoundTrip: the model calls a client function; the client
// sends the call and its output back as items (store: false, stateless) and gets the
// answer. On translated backends the upstream sees the tool result.
func TestResponses_FunctionCallRoundTrip(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	tool := responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{Name: "get_weather", Strict: openai.Bool(false),
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}
	for _, kind := range responsesKinds {
		t.Run(kind, func(t *testing.T) {
			g := startResponsesGateway(t, kind, "")
			g.script(gatewaytest.Turn{Calls: []gatewaytest.Call{{Name: "get_weather", Args: `{"city":"Paris"}`}}}, gatewaytest.Turn{Text: "It is sunny in Paris."})
			c := g.client("alice-key")
			ctx := context.Background()
			first := "please call get_weather for Paris"
			resp, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "m", Input: textInput(first),
				Tools: []responses.ToolUnionParam{tool}, Store: openai.Bool(false)})
			if err != nil {
				t.Fatalf("turn 1: %v", err)
			}
			call := lastFunctionCall(resp)
			if call == nil || call.Name != "get_weather" || call.CallID == "" {
				t.Fatalf("turn 1 output has no get_weather call: %s", resp.RawJSON())
			}
			input := responses.ResponseInputParam{
				responses.ResponseInputItemParamOfMessage(first, responses.EasyInputMessageRoleUser),
				responses.ResponseInputItemParamOfFunctionCall(call.Arguments, call.CallID, call.Name),
				responses.ResponseInputItemParamOfFunctionCallOutput("sunny, 21C"),
			}
			input[2].OfFunctionCallOutput.CallID = openai.String(call.CallID)
			resp2, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "m",
				Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}, Tools: []responses.ToolUnionParam{tool}, Store: openai.Bool(false)})
			if err != nil {
				t.Fatalf("turn 2: %v", err)
			}
			want := "It is sunny in Paris."
			if kind == "mock" {
				want = "Tool results: sunny, 21C"
			}
			if got := resp2.OutputText(); got != want {
				t.Errorf("turn 2 text %q, want %q", got, want)
			}
			if b := g.upstreamBodies(); kind != "mock" && (len(b) != 2 || !strings.Contains(b[1], "sunny, 21C")) {
				t.Errorf("upstream turn 2 lacks the tool output: %v", b)
			}
		})
	}
}

// kiwiConversation has client store two responses on g, the second continuing the first
// with previous_response_id (the fake upstream says "noted", then "kiwi").
func kiwiConversation(t *testing.T, g *responsesGateway, client openai.Client) (first, second *responses.Response) {
	t.Helper()
	g.script(gatewaytest.Turn{Text: "noted"}, gatewaytest.Turn{Text: "kiwi"})
	ctx := context.Background()
	first, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "m", Input: textInput("remember the word kiwi")})
	if err != nil {
		t.Fatalf("turn 1: %v", err)
	}
	second, err = client.Responses.New(ctx, responses.ResponseNewParams{Model: "m", Input: textInput("which word?"),
		PreviousResponseID: openai.String(first.ID)})
	if err != nil {
		t.Fatalf("turn 2: %v", err)
	}
	return first, second
}

// TestResponses_PreviousResponseID: a stored response continues with
// previous_response_id (the earlier turns reach a translated upstream; a responses
// upstream gets the id), can be read back with GET by its key only, and deleted.
func TestResponses_PreviousResponseID(t *testing.T) {
	for _, kind := range responsesKinds {
		t.Run(kind, func(t *testing.T) {
			g := startResponsesGateway(t, kind, "")
			alice, bob := g.client("alice-key"), g.client("bob-key")
			ctx := context.Background()
			first, second := kiwiConversation(t, g, alice)
			var err error
			// The passthrough answers what the upstream said (the fake echoes no settings).
			if kind != "responses" && second.PreviousResponseID != first.ID {
				t.Errorf("previous_response_id echoed %q, want %q", second.PreviousResponseID, first.ID)
			}
			if b := g.upstreamBodies(); kind == "responses" {
				if len(b) != 2 || !strings.Contains(b[1], `"previous_response_id":"`+first.ID+`"`) {
					t.Errorf("passthrough turn 2 lacks the previous_response_id: %v", b)
				}
			} else if kind != "mock" && (len(b) != 2 || !strings.Contains(b[1], "remember the word kiwi") || !strings.Contains(b[1], "noted")) {
				t.Errorf("upstream turn 2 lacks the earlier turn: %v", b)
			}
			// A stranger's continuation is refused like an unknown id.
			_, err = bob.Responses.New(ctx, responses.ResponseNewParams{Model: "m", Input: textInput("x"), PreviousResponseID: openai.String(first.ID)})
			if e := respSDKError(t, err); e.StatusCode != 404 {
				t.Errorf("bob continuing alice's response: status %d", e.StatusCode)
			}
			got, err := alice.Responses.Get(ctx, second.ID, responses.ResponseGetParams{})
			if err != nil {
				t.Fatalf("GET: %v", err)
			}
			if diff := cmp.Diff(second.OutputText(), got.OutputText()); diff != "" || got.ID != second.ID {
				t.Errorf("GET returned another response (-want +got):\n%s", diff)
			}
			if _, err := bob.Responses.Get(ctx, second.ID, responses.ResponseGetParams{}); err == nil || respSDKError(t, err).StatusCode != 404 {
				t.Errorf("bob read alice's response: %v", err)
			}
			if err := bob.Responses.Delete(ctx, second.ID); err == nil {
				t.Errorf("bob deleted alice's response")
			}
			if err := alice.Responses.Delete(ctx, second.ID); err != nil {
				t.Fatalf("DELETE: %v", err)
			}
			if _, err := alice.Responses.Get(ctx, second.ID, responses.ResponseGetParams{}); err == nil || respSDKError(t, err).StatusCode != 404 {
				t.Errorf("GET after DELETE: %v", err)
			}
		})
	}
}

// TestResponses_StoreFalse: store: false keeps nothing; continuing it is a 404.
func TestResponses_StoreFalse(t *testing.T) {
	g := startResponsesGateway(t, "mock", "")
	c := g.client("alice-key")
	ctx := context.Background()
	resp, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "m", Input: textInput("hi"), Store: openai.Bool(false)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Responses.Get(ctx, resp.ID, responses.ResponseGetParams{})
	if e := respSDKError(t, err); e.StatusCode != 404 {
		t.Errorf("GET of an unstored response: status %d", e.StatusCode)
	}
}

// TestResponses_Errors: requests refused before any upstream call, with the OpenAI error
// shape and the param naming the field.
func TestResponses_Errors(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	tests := []struct {
		name, kind, body string
		want             respError
	}{
		{name: "not JSON", kind: "mock", body: `{"model":`,
			want: respError{Status: 400, Type: "invalid_request_error"}},
		{name: "no input", kind: "mock", body: `{"model":"m"}`,
			want: respError{Status: 400, Type: "invalid_request_error", Param: "input"}},
		{name: "duplicate model key", kind: "responses", body: `{"model":"m","input":"hi","model":"other"}`,
			want: respError{Status: 400, Type: "invalid_request_error", Param: "model", Code: "duplicate_key"}},
		{name: "model key in another case", kind: "responses", body: `{"model":"m","input":"hi","MODEL":"other"}`,
			want: respError{Status: 400, Type: "invalid_request_error", Param: "MODEL", Code: "key_case_mismatch"}},
		{name: "bad item type in a message part", kind: "anthropic", body: `{"model":"m","input":[{"role":"user","content":[{"type":"output_text","text":"x"}]}]}`,
			want: respError{Status: 400, Type: "invalid_request_error", Param: "input[0].content[0].type"}},
		{name: "built-in tool on a translated backend", kind: "anthropic", body: `{"model":"m","input":"hi","tools":[{"type":"web_search"}]}`,
			want: respError{Status: 400, Type: "invalid_request_error", Param: "tools[0].type"}},
		{name: "unsupported parameter on a translated backend", kind: "gemini", body: `{"model":"m","input":"hi","prompt_cache_retention":"24h"}`,
			want: respError{Status: 400, Type: "invalid_request_error", Param: "prompt_cache_retention", Code: "unsupported_parameter"}},
		{name: "unknown previous_response_id", kind: "mock", body: `{"model":"m","input":"hi","previous_response_id":"resp_nope"}`,
			want: respError{Status: 404, Type: "invalid_request_error", Code: "not_found"}},
		{name: "unknown model", kind: "mock", body: `{"model":"nope","input":"hi"}`,
			want: respError{Status: 404, Type: "invalid_request_error", Param: "model", Code: "model_not_found"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := startResponsesGateway(t, tt.kind, "")
			r := postJSON(t, g.url+"/responses", "alice-key", tt.body)
			if diff := cmp.Diff(tt.want, decodeRespError(t, r), cmpErrorView); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if b := g.upstreamBodies(); len(b) != 0 {
				t.Errorf("the upstream was called: %v", b)
			}
		})
	}
}

// TestResponses_StoreOff: with responses.store: off nothing is kept; previous_response_id
// is a 400 that says why.
func TestResponses_StoreOff(t *testing.T) {
	g := startResponsesGateway(t, "mock", "responses: {store: off}\n")
	r := postJSON(t, g.url+"/responses", "alice-key", `{"model":"m","input":"hi","previous_response_id":"resp_1"}`)
	if diff := cmp.Diff(respError{Status: 400, Type: "invalid_request_error", Param: "previous_response_id"}, decodeRespError(t, r), cmpErrorView); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// respError is what the tests compare of an error answer.
type respError struct {
	Status            int
	Type, Param, Code string
	Message           string // ignored by cmpErrorView
}

type respResult struct {
	status int
	header http.Header
	body   []byte
}

// decodeRespError checks that r is exactly OpenAI's error shape and returns its fields.
func decodeRespError(t *testing.T, r respResult) respError {
	t.Helper()
	var e struct {
		Error *struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &e); err != nil || e.Error == nil || e.Error.Message == "" {
		t.Fatalf("not an OpenAI error body (%v): %s", err, r.body)
	}
	v := respError{Status: r.status, Type: e.Error.Type, Message: e.Error.Message}
	if e.Error.Param != nil {
		v.Param = *e.Error.Param
	}
	if e.Error.Code != nil {
		v.Code = *e.Error.Code
	}
	return v
}

func respSDKError(t *testing.T, err error) *openai.Error {
	t.Helper()
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("error %v (%T) is not an *openai.Error", err, err)
	}
	return apiErr
}

var cmpErrorView = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Message" }, cmp.Ignore())

func postJSON(t *testing.T, url, key, body string) respResult {
	t.Helper()
	return sendWithKey(t, "POST", url, key, strings.NewReader(body))
}

// sendWithKey sends a request with key as its bearer token; a body is JSON.
func sendWithKey(t *testing.T, method, url, key string, body io.Reader) respResult {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return respResult{status: resp.StatusCode, header: resp.Header, body: b}
}

// TestResponses_ToolLoop: a key with server tools gets one response from /v1/responses,
// the server calls hidden, the text of both turns in it and the usage of both summed, on
// every backend, streamed and not (a responses backend then goes through the core too).
func TestResponses_ToolLoop(t *testing.T) {
	g := startResponsesLoopGateway(t)
	for _, kind := range gatewaytest.Kinds {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", kind, stream), func(t *testing.T) {
				fake := g.fakes[kind]
				fake.SetScript(
					gatewaytest.Turn{Text: "Let me look. ", Calls: []gatewaytest.Call{{Name: "loop__lookup", Args: `{"key":"k1"}`}}},
					gatewaytest.Turn{Text: "Found it."},
				)
				c := g.client()
				params := responses.ResponseNewParams{Model: "m-" + kind, Input: textInput("look k1 up")}
				var resp *responses.Response
				if stream {
					s := streamResponse(t, c, params)
					if s.err != nil {
						t.Fatalf("stream: %v", s.err)
					}
					resp = s.final
				} else {
					var err error
					if resp, err = c.Responses.New(context.Background(), params); err != nil {
						t.Fatalf("New: %v", err)
					}
				}
				if got := resp.OutputText(); got != "Let me look. Found it." {
					t.Errorf("text %q", got)
				}
				for _, item := range resp.Output {
					if item.Type != "message" {
						t.Errorf("the client sees a %s item", item.Type)
					}
				}
				if resp.Usage.InputTokens != 20 || resp.Usage.OutputTokens != 10 {
					t.Errorf("usage %d/%d, want both turns summed (20/10)", resp.Usage.InputTokens, resp.Usage.OutputTokens)
				}
				if b := fake.Bodies(); len(b) != 2 || !strings.Contains(b[1], "value-of-k1") {
					t.Errorf("the tool result did not reach turn 2: %v", b)
				}
			})
		}
	}
}

// startResponsesLoopGateway is startLoopGateway with the in-process MCP server only (no
// stdio server to install).
func startResponsesLoopGateway(t *testing.T) *loopGateway {
	return startLoopGatewayWith(t, func(mcpURL string) string {
		return fmt.Sprintf(`keys:
  agent: {key: agent-key, models: ["*"], tools: [loop], max_tool_iterations: 3}
tools:
  loop: {type: mcp, url: %q, timeout: 20s}
`, mcpURL)
	})
}

// twoTurnResponses is twoTurn for a Responses client: turn 1 streamed, its function calls
// sent back as function_call items (the standard fields only, store: false) with their
// outputs. It returns the body the upstream received on turn 2.
func twoTurnResponses(t *testing.T, kind string, turn1 []byte) string {
	g := startGatewayFor(t, kind)
	g.up.push(replay{200, "text/event-stream", turn1}, replay{200, "text/event-stream", turn1})
	c := gatewaytest.OpenAI(g.url, "unused")
	tool := responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{Name: "tool", Strict: openai.Bool(false),
		Parameters: map[string]any{"type": "object"}}}
	params := responses.ResponseNewParams{Model: "client-model", Input: textInput("use the tool"), Store: openai.Bool(false),
		Reasoning: responses.ReasoningParam{Effort: responses.ReasoningEffortHigh}, Tools: []responses.ToolUnionParam{tool}}
	s := streamResponse(t, c, params)
	if s.err != nil {
		t.Fatalf("turn 1: %v", s.err)
	}
	input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("use the tool", responses.EasyInputMessageRoleUser)}
	calls := 0
	for _, item := range s.final.Output {
		switch item.Type {
		case "reasoning":
			r := item.AsReasoning()
			var summary []responses.ResponseReasoningItemSummaryParam
			for _, p := range r.Summary {
				summary = append(summary, responses.ResponseReasoningItemSummaryParam{Text: p.Text})
			}
			input = append(input, responses.ResponseInputItemParamOfReasoning(r.ID, summary))
		case "function_call":
			fc := item.AsFunctionCall()
			input = append(input, responses.ResponseInputItemParamOfFunctionCall(fc.Arguments, fc.CallID, fc.Name))
			out := responses.ResponseInputItemParamOfFunctionCallOutput("result for " + fc.Name)
			out.OfFunctionCallOutput.CallID = openai.String(fc.CallID)
			input = append(input, out)
			calls++
		}
	}
	if calls == 0 {
		t.Fatalf("turn 1 has no function calls: %v", s.events)
	}
	params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: input}
	s2 := c.Responses.NewStreaming(context.Background(), params)
	for s2.Next() {
	}
	seen := g.up.seen()
	if len(seen) != 2 {
		t.Fatalf("upstream saw %d requests, want 2", len(seen))
	}
	return seen[1].body
}

// TestResponsesTwoTurn_AnthropicThinkingSignatures: Claude's thinking blocks (with
// signatures) of a tool-use turn reach the next turn through a stateless Responses client
// that sends back only the standard fields of its function calls.
func TestResponsesTwoTurn_AnthropicThinkingSignatures(t *testing.T) {
	turn1 := goldenSection(t, "anthropic", "stream-thinking-tool-use.txtar", "upstream.sse")
	body := twoTurnResponses(t, "anthropic", turn1)
	for _, want := range []string{`"type":"thinking"`, `"signature":"EuYDCmMIDBgCKkC05Zda4P+Cdk/LQK`, `"type":"redacted_thinking"`, `"type":"tool_result"`} {
		if !strings.Contains(body, want) {
			t.Errorf("turn 2 body lacks %s:\n%.1500s", want, body)
		}
	}
}

// TestResponsesTwoTurn_GeminiThoughtSignatures: Gemini 3's thought signature survives the
// round trip through a stateless Responses client.
func TestResponsesTwoTurn_GeminiThoughtSignatures(t *testing.T) {
	turn1 := goldenSection(t, "gemini", "vercel-chunks-google-tool-call-gemini3.txtar", "upstream.chunks.txt")
	body := twoTurnResponses(t, "gemini", turn1)
	for _, want := range []string{`"thoughtSignature":"EpEgCo4gAb4+9vvWwdN+NkNiCCwrqv`, `"functionResponse"`} {
		if !strings.Contains(body, want) {
			t.Errorf("turn 2 body lacks %s:\n%.1500s", want, body)
		}
	}
}

// TestResponses_RecordingsThroughGateway: every recorded upstream stream, served by a fake
// upstream of its wire, reaches a Responses client through /v1/responses as a stream the
// SDK's accumulator accepts: sequence numbers from 0, one terminal event, last, and the
// client-facing model. (translate/responsesin replays the same recordings split at byte
// offsets and checks each event against the published schema.)
func TestResponses_RecordingsThroughGateway(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	for _, w := range []struct{ kind, dir string }{
		{"anthropic", "anthropic"}, {"gemini", "gemini"}, {"openai", "openai-chat"}, {"responses", "responses"},
	} {
		files, _ := filepath.Glob(filepath.Join("..", "testdata", "fixtures", w.dir, "stream", "*.sse"))
		if len(files) == 0 {
			t.Fatalf("no recordings for %s", w.dir)
		}
		for _, file := range files {
			t.Run(w.dir+"/"+filepath.Base(file), func(t *testing.T) {
				recording, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				g := startGatewayFor(t, w.kind)
				g.up.push(replay{200, "text/event-stream", recording})
				s := streamResponse(t, g.client(), responses.ResponseNewParams{Model: "client-model", Input: textInput("hi")})
				if s.err != nil {
					t.Fatalf("stream: %v", s.err)
				}
				terminals := 0
				for i, ev := range s.events {
					if seq, _ := ev["sequence_number"].(float64); int(seq) != i {
						t.Fatalf("event %d (%v) has sequence_number %v", i, ev["type"], ev["sequence_number"])
					}
					switch ev["type"] {
					case "response.completed", "response.incomplete", "response.failed", "error":
						terminals++
					}
				}
				if terminals != 1 {
					t.Errorf("%d terminal events", terminals)
				}
				if s.final.Model != "client-model" {
					t.Errorf("model %q, want the client-facing name", s.final.Model)
				}
				if s.final.Usage.TotalTokens == 0 {
					t.Errorf("no usage")
				}
			})
		}
	}
}

// TestResponses_StreamCutMidway: an upstream stream that ends before its terminal event
// ends the client's stream with one error event, numbered after the last event, on the
// translated path and the passthrough alike.
func TestResponses_StreamCutMidway(t *testing.T) {
	for _, w := range []struct{ kind, file string }{
		{"anthropic", "anthropic/stream/text-basic.mirascope.sse"},
		{"responses", "responses/stream/text-basic.mirascope.sse"},
	} {
		t.Run(w.kind, func(t *testing.T) {
			recording, err := os.ReadFile(filepath.Join("..", "testdata", "fixtures", w.file))
			if err != nil {
				t.Fatal(err)
			}
			events := strings.SplitAfter(string(recording), "\n\n")
			cut := strings.Join(events[:len(events)/2], "")
			g := startGatewayFor(t, w.kind)
			g.up.push(replay{200, "text/event-stream", []byte(cut)})
			s := streamResponse(t, g.client(), responses.ResponseNewParams{Model: "client-model", Input: textInput("hi")})
			if s.err != nil || !s.sawError {
				t.Fatalf("the stream did not end with an error event (err %v)", s.err)
			}
			last := s.events[len(s.events)-1]
			if last["type"] != "error" || !strings.Contains(fmt.Sprint(last["message"]), "stream ended before") && !strings.Contains(fmt.Sprint(last["message"]), "ended the stream before") {
				t.Errorf("last event %v", last)
			}
			if seq, _ := last["sequence_number"].(float64); int(seq) != len(s.events)-1 {
				t.Errorf("error event numbered %v after %d events", last["sequence_number"], len(s.events)-1)
			}
		})
	}
}

// TestResponses_PreviousResponseIDWithToolOutput: the Agents SDK's default flow with
// store: true: turn 1 ends in a function call, turn 2 sends only previous_response_id and
// the call's output; a translated upstream gets the whole conversation.
func TestResponses_PreviousResponseIDWithToolOutput(t *testing.T) {
	for _, kind := range []string{"anthropic", "gemini", "openai"} {
		t.Run(kind, func(t *testing.T) {
			g := startResponsesGateway(t, kind, "")
			g.script(gatewaytest.Turn{Calls: []gatewaytest.Call{{Name: "lookup", Args: `{"q":"x"}`}}}, gatewaytest.Turn{Text: "done"})
			c := g.client("alice-key")
			ctx := context.Background()
			tool := responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{Name: "lookup", Strict: openai.Bool(false),
				Parameters: map[string]any{"type": "object"}}}
			first, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "m", Input: textInput("look x up"), Tools: []responses.ToolUnionParam{tool}})
			if err != nil {
				t.Fatal(err)
			}
			var callID string
			for _, item := range first.Output {
				if item.Type == "function_call" {
					callID = item.AsFunctionCall().CallID
				}
			}
			out := responses.ResponseInputItemParamOfFunctionCallOutput("found: 42")
			out.OfFunctionCallOutput.CallID = openai.String(callID)
			second, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "m", PreviousResponseID: openai.String(first.ID),
				Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{out}}, Tools: []responses.ToolUnionParam{tool}})
			if err != nil {
				t.Fatal(err)
			}
			if second.OutputText() != "done" {
				t.Errorf("text %q", second.OutputText())
			}
			b := g.upstreamBodies()
			if len(b) != 2 || !strings.Contains(b[1], "look x up") || !strings.Contains(b[1], "found: 42") || !strings.Contains(b[1], `lookup`) {
				t.Errorf("upstream turn 2 lacks the conversation: %v", b)
			}
		})
	}
}

// TestResponses_ContinueOnAnotherBackend: a response a responses backend stored upstream
// cannot be continued on another backend (a 400 naming previous_response_id), and one the
// gateway generated cannot be forwarded to a responses upstream as an id it never saw: it
// is translated with the stored conversation instead.
func TestResponses_ContinueOnAnotherBackend(t *testing.T) {
	resp := gatewaytest.NewFakeJSON(t, "responses")
	anth := gatewaytest.NewFakeJSON(t, "anthropic")
	y := fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  r: {type: responses, base_url: %q, api_key: k, retries: {max: 0}}
  a: {type: anthropic, base_url: %q, api_key: k, retries: {max: 0}}
models:
  gpt: {backend: r, upstream_model: gpt-5}
  claude: {backend: a, upstream_model: claude}
`, resp.BaseURL(), anth.BaseURL())
	url := gatewaytest.StartYAML(t, y, gatewaytest.Options{Runtime: proxy.TestRuntime}).V1()
	c := gatewaytest.OpenAI(url, "k")
	ctx := context.Background()
	resp.SetScript(gatewaytest.Turn{Text: "from gpt"}, gatewaytest.Turn{Text: "gpt again"})
	anth.SetScript(gatewaytest.Turn{Text: "from claude"}, gatewaytest.Turn{Text: "claude again"})

	fromGPT, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt", Input: textInput("hi")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Responses.New(ctx, responses.ResponseNewParams{Model: "claude", Input: textInput("more"), PreviousResponseID: openai.String(fromGPT.ID)})
	if e := respSDKError(t, err); e.StatusCode != 400 || e.Param != "previous_response_id" {
		t.Errorf("continuing a gpt response on claude: %d %q", e.StatusCode, e.Param)
	}

	fromClaude, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "claude", Input: textInput("hello claude")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt", Input: textInput("more"), PreviousResponseID: openai.String(fromClaude.ID)}); err != nil {
		t.Fatalf("continuing a claude response on gpt: %v", err)
	}
	b := resp.Bodies()
	if len(b) != 2 || strings.Contains(b[1], "previous_response_id") || !strings.Contains(b[1], "hello claude") || !strings.Contains(b[1], "from claude") {
		t.Errorf("the responses upstream did not get the stored conversation: %v", b)
	}
}

// TestResponses_NodeSDK runs the scripts of testdata/node against the mock backend: the
// Node openai SDK (responses.mjs: responses.create, responses.stream with finalResponse(),
// a function call continued with previous_response_id, retrieve, delete) and the Vercel AI
// SDK's default OpenAI provider (vercel.mjs: generateText, streamText, a tool loop) and
// the OpenAI Agents SDK with its default model (agents.mjs: an agent with a function tool,
// run plain and streamed). It
// needs node and the npm packages in AGATE_NODE_MODULES, else ../.ci/npm/node_modules
// (.ci/run installs them there); without them it skips, and fails under CI=true.
func TestResponses_NodeSDK(t *testing.T) {
	t.Parallel() // its own gateway and Node processes (#54)
	node := gatewaytest.Require(t, "node", "apt-get install nodejs")
	modules := os.Getenv("AGATE_NODE_MODULES")
	if modules == "" {
		modules, _ = filepath.Abs(filepath.Join("..", ".ci", "npm", "node_modules"))
	}
	if _, err := os.Stat(filepath.Join(modules, "@ai-sdk", "openai", "package.json")); err != nil {
		gatewaytest.Missing(t, "the npm packages (openai, ai, @ai-sdk/openai) are not installed: "+err.Error(),
			"set AGATE_NODE_MODULES; .ci/run installs them in .ci/npm")
	}
	tests := []struct {
		script string
		want   map[string]map[string]any
	}{
		{"responses.mjs", map[string]map[string]any{
			"create": {"status": "completed", "text": "hello from node", "model": "m"},
			"stream": {"text": "stream from node", "first": "response.created", "last": "response.completed", "deltas": float64(3)},
			"tools":  {"call": "get_weather", "text": "Tool results: sunny"},
			"stored": {"same": true, "afterDelete": "404"},
		}},
		{"vercel.mjs", map[string]map[string]any{
			"generate": {"text": "hello from vercel", "finish": "stop", "usage": true},
			"stream":   {"text": "stream from vercel", "finish": "stop"},
			"tools":    {"text": "Tool results: sunny", "steps": float64(2), "finish": "stop"},
		}},
		{"agents.mjs", map[string]map[string]any{
			"run":    {"output": "Tool results: sunny", "items": "tool_call_item,tool_call_output_item,message_output_item"},
			"stream": {"output": "hello agents", "text": "hello agents"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			g := startResponsesGateway(t, "mock", "")
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, filepath.Join("testdata", "node", tt.script))
			cmd.Env = append(os.Environ(), "AGATE_URL="+g.url, "AGATE_NODE_MODULES="+modules,
				"OPENAI_MODULE="+filepath.Join(modules, "openai"))
			outBytes, err := cmd.Output()
			if err != nil {
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					t.Fatalf("node: %v\n%s", err, ee.Stderr)
				}
				t.Fatalf("node: %v", err)
			}
			var got map[string]map[string]any
			if err := json.Unmarshal(outBytes, &got); err != nil {
				t.Fatalf("node output: %v\n%s", err, outBytes)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestResponses_PassthroughUpstreamErrors: a responses upstream's refusal reaches the
// client with its status and message; a 200 that is not a Response object is a 502.
func TestResponses_PassthroughUpstreamErrors(t *testing.T) {
	tests := []struct {
		name       string
		upstream   replay
		wantStatus int
		wantInMsg  string
	}{
		{name: "rate limited", wantStatus: 429, wantInMsg: "Rate limit reached",
			upstream: replay{429, "application/json", []byte(`{"error":{"message":"Rate limit reached for gpt-5","type":"requests","param":null,"code":"rate_limit_exceeded"}}`)}},
		{name: "bad request", wantStatus: 400, wantInMsg: "Unsupported parameter",
			upstream: replay{400, "application/json", []byte(`{"error":{"message":"Unsupported parameter: 'temperature'","type":"invalid_request_error","param":"temperature","code":"unsupported_parameter"}}`)}},
		{name: "not a Response", wantStatus: 502, wantInMsg: "not a Response object",
			upstream: replay{200, "application/json", []byte(`{"object":"list","data":[]}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := startGatewayFor(t, "responses")
			g.up.push(tt.upstream)
			c := g.client()
			_, err := c.Responses.New(context.Background(), responses.ResponseNewParams{Model: "client-model", Input: textInput("hi")})
			e := respSDKError(t, err)
			if e.StatusCode != tt.wantStatus || !strings.Contains(e.Message, tt.wantInMsg) {
				t.Errorf("status %d, message %q; want %d with %q", e.StatusCode, e.Message, tt.wantStatus, tt.wantInMsg)
			}
		})
	}
}

// TestResponses_Limits: /v1/responses is admitted against the key's limits like chat: the
// request over requests_per_minute is a 429 with Retry-After, before any upstream call.
func TestResponses_Limits(t *testing.T) {
	url := gatewaytest.StartYAML(t, `server: {listen: "127.0.0.1:0"}
backends:
  up: {type: mock}
models:
  m: {backend: up}
keys:
  alice: {key: alice-key, models: ["*"], limits: {requests_per_minute: 1}}
`, gatewaytest.Options{Runtime: proxy.TestRuntime}).V1()
	body := `{"model":"m","input":"hi"}`
	if r := postJSON(t, url+"/responses", "alice-key", body); r.status != 200 {
		t.Fatalf("first request: %d %s", r.status, r.body)
	}
	r := postJSON(t, url+"/responses", "alice-key", body)
	if got := decodeRespError(t, r); got.Status != 429 || got.Code != "rate_limit_exceeded" || r.header.Get("Retry-After") == "" {
		t.Errorf("second request: %+v, Retry-After %q", got, r.header.Get("Retry-After"))
	}
}

// TestResponses_RedisStoreSharedByReplicas: with responses.store: redis two gateways on
// one redis-server share stored responses: one replica's response is continued and read on
// the other, for its key only.
func TestResponses_RedisStoreSharedByReplicas(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	rs := redistest.Start(t)
	y := fmt.Sprintf(`server: {listen: "127.0.0.1:0"}
backends:
  up: {type: mock}
models:
  m: {backend: up}
keys:
  alice: {key: alice-key, models: ["*"]}
  bob: {key: bob-key, models: ["*"]}
state: {type: redis, url: %q}
responses: {store: redis}
`, rs.URL())
	var urls [2]string
	for i := range urls {
		urls[i] = gatewaytest.StartYAML(t, y, gatewaytest.Options{Runtime: proxy.TestRuntime}).V1()
	}
	client := gatewaytest.OpenAI
	ctx := context.Background()
	a, b := client(urls[0], "alice-key"), client(urls[1], "alice-key")
	first, err := a.Responses.New(ctx, responses.ResponseNewParams{Model: "m", Input: textInput("remember kiwi")})
	if err != nil {
		t.Fatal(err)
	}
	second, err := b.Responses.New(ctx, responses.ResponseNewParams{Model: "m", Input: textInput("next"), PreviousResponseID: openai.String(first.ID)})
	if err != nil {
		t.Fatalf("continuing on the other replica: %v", err)
	}
	got, err := a.Responses.Get(ctx, second.ID, responses.ResponseGetParams{})
	if err != nil || got.OutputText() != second.OutputText() {
		t.Fatalf("GET on the first replica: %v", err)
	}
	bob := client(urls[1], "bob-key")
	if _, err := bob.Responses.Get(ctx, second.ID, responses.ResponseGetParams{}); err == nil || respSDKError(t, err).StatusCode != 404 {
		t.Errorf("bob read alice's response: %v", err)
	}

	// With Redis gone, a stored response is unavailable (503), not unknown (404).
	rs.Kill()
	if _, err := a.Responses.Get(ctx, second.ID, responses.ResponseGetParams{}); err == nil || respSDKError(t, err).StatusCode != 503 {
		t.Errorf("GET with Redis down: %v", err)
	}
	_, err = a.Responses.New(ctx, responses.ResponseNewParams{Model: "m", Input: textInput("again"), PreviousResponseID: openai.String(second.ID)})
	if err == nil || respSDKError(t, err).StatusCode != 503 {
		t.Errorf("continuing with Redis down: %v", err)
	}
}

// TestResponses_ClientToolNamedLikeServerTool: a client function tool that takes a server
// tool's name is a 400 naming tools[i].name.
func TestResponses_ClientToolNamedLikeServerTool(t *testing.T) {
	g := startResponsesLoopGateway(t)
	r := postJSON(t, g.url+"/responses", "agent-key", `{"model":"m-openai","input":"hi","tools":[{"type":"function","name":"loop__lookup"}]}`)
	if got := decodeRespError(t, r); got.Status != 400 || got.Param != "tools[0].name" {
		t.Errorf("%+v", got)
	}
}
