package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/goldentest"
	"github.com/agate-gateway/agate/translate/openaichat"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
	"golang.org/x/tools/txtar"

	"github.com/agate-gateway/agate/internal/sse"
	"github.com/agate-gateway/agate/translate/internal/spectest"
)

// anthropicSchema compiles the Messages API request schema and checks that it rejects a
// known-invalid body.

func anthropicEncode(t testing.TB, body string, opts *translate.Options) ([]byte, error) {
	t.Helper()
	req, err := openaichat.ParseRequest([]byte(body))
	if err != nil {
		t.Fatalf("ParseRequest: %v", err)
	}
	return New().AppendRequest(nil, req, opts)
}

const (
	anthropicPNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	anthropicPDF = "JVBERi0xLjQKJcOkw7zDtsOfCjIgMCBvYmoKPDwvTGVuZ3RoIDMgMCBSPj4Kc3RyZWFtCg=="
	// anthropicSig is the signature of a real thinking block (thinking-exact-bytes fixture).
	anthropicSig = "EuYDCmMIDBgCKkC05Zda4P+Cdk/LQKE+Aol4ZY3EY4wLDrf8XcApz2PiqrxiRjS7uY1kGtZ63vVlaVmtuIpdsHbkdfGHb9AsBYw+MhljbGF1ZGUtaGFpa3UtNC01LTIwMjUxMDAxOAASDAXGiw23anViCe75HBoMATySwgVJ0A405/0FIjDbVX0lAn7rEq/ejcuOZWDihLSbS9KGihD2QsWmXzp2Ly5ZD5vtKOcKvhEDQ0PCeVkqsALmnx7FhoJ7TQQyomwwFY+zA/Sft9n7u3lNE/RzbZMF4jmvo9i1vtNLETK18iSdCAhSy+NJLFRK/vcw6sVaDNrEMGgIadv5iZ0Jmx+iHyR8sXbasYDMbN07/ype7JGpKxHCdQOrNA7plS39Yy5l7hqJz4ueYoCpMxc+IkNY+TCyMpKwGxYqKSUdElyLr0Ko3vXtdLJBTJQuMtU+cz+UPHkpTbGRPntg/hBvNztCjlqqeM6PKoE8rsDJMx0+q1eOrFPC9SYgCZqSGHlSHoOexnfkrN2aTlZjcBcFblXq76bKF1YHINp3uL+jByhp91XFSkhF+b43BC9PDtRUYKw3wT+IZlEI6V3GppKBDSa8L0Sgm8m1Bb2PYvi3oIv+LDpUImrMckjemNZmBeGcEZQ4FjZiGAE="
)

var anthropicWeatherTool = `{"type":"function","function":{"name":"get_weather","description":"Get the weather for a city.","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}`

// TestAnthropicRequest_PromptCacheBreakpoints pins the placement: the last system block,
// the last tool and the last block of each of the last two user turns, at most four.
func TestAnthropicRequest_PromptCacheBreakpoints(t *testing.T) {
	body := string(goldentest.Transcript(t, "request-prompt-cache", "request.json"))
	got, err := anthropicEncode(t, body, &translate.Options{UpstreamModel: "claude", PromptCache: true})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	var walk func(prefix string, r gjson.Result)
	walk = func(prefix string, r gjson.Result) {
		r.ForEach(func(k, v gjson.Result) bool {
			p := prefix + "." + k.String()
			if k.String() == "cache_control" {
				paths = append(paths, prefix)
			} else if v.IsObject() || v.IsArray() {
				walk(p, v)
			}
			return true
		})
	}
	walk("", gjson.ParseBytes(got))
	want := []string{".system.0", ".messages.2.content.0", ".messages.4.content.0", ".tools.0"}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("breakpoints (-want +got):\n%s\n%s", diff, got)
	}
	// Off by default.
	got, _ = anthropicEncode(t, body, &translate.Options{UpstreamModel: "claude"})
	if bytes.Contains(got, []byte("cache_control")) {
		t.Errorf("cache_control without PromptCache")
	}
}

func TestAnthropicRequestErrors(t *testing.T) {
	user := `"messages":[{"role":"user","content":"Hi"}]`
	tests := []struct {
		name, body, param string
	}{
		{"n", `{"model":"c",` + user + `,"n":2}`, "n"},
		{"logprobs", `{"model":"c",` + user + `,"logprobs":true}`, "logprobs"},
		{"top_logprobs", `{"model":"c",` + user + `,"top_logprobs":1}`, "top_logprobs"},
		{"presence_penalty", `{"model":"c",` + user + `,"presence_penalty":1}`, "presence_penalty"},
		{"frequency_penalty", `{"model":"c",` + user + `,"frequency_penalty":1}`, "frequency_penalty"},
		{"seed", `{"model":"c",` + user + `,"seed":1}`, "seed"},
		{"metadata", `{"model":"c",` + user + `,"metadata":{"k":"v"}}`, "metadata"},
		{"audio", `{"model":"c",` + user + `,"audio":{"voice":"alloy","format":"wav"}}`, "audio"},
		{"unknown extra field", `{"model":"c",` + user + `,"prediction":{"type":"content","content":"x"}}`, "prediction"},
		{"input_audio part", `{"model":"c","messages":[{"role":"user","content":[{"type":"text","text":"x"},{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}}]}]}`, "messages[0].content[1]"},
		{"invalid arguments", `{"model":"c","messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"f","arguments":"{\"x\":"}}]}]}`, "messages[1].tool_calls[1].function.arguments"},
		{"non-object arguments", `{"model":"c","messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"[1]"}}]}]}`, "messages[1].tool_calls[0].function.arguments"},
		{"temperature above 1", `{"model":"c",` + user + `,"temperature":1.5}`, "temperature"},
		{"temperature with thinking", `{"model":"c",` + user + `,"temperature":0.5,"reasoning_effort":"low"}`, "temperature"},
		{"top_p with thinking", `{"model":"c",` + user + `,"top_p":0.5,"reasoning_effort":"low"}`, "top_p"},
		{"forced tool with thinking", `{"model":"c",` + user + `,"tools":[` + anthropicWeatherTool + `],"tool_choice":"required","reasoning_effort":"low"}`, "tool_choice"},
		{"max_tokens too small for thinking", `{"model":"c",` + user + `,"max_tokens":1000,"reasoning_effort":"high"}`, "max_tokens"},
		{"max_completion_tokens too small for thinking", `{"model":"c",` + user + `,"max_completion_tokens":1024,"reasoning_effort":"low"}`, "max_completion_tokens"},
		{"image type", `{"model":"c","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/bmp;base64,Qk0="}}]}]}`, "messages[0].content[0].image_url.url"},
		{"image url scheme", `{"model":"c","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x/y.png"}}]}]}`, "messages[0].content[0].image_url.url"},
		{"file not pdf", `{"model":"c","messages":[{"role":"user","content":[{"type":"file","file":{"file_data":"data:text/csv;base64,YSxi"}}]}]}`, "messages[0].content[0].file.file_data"},
		{"file bare non-pdf", `{"model":"c","messages":[{"role":"user","content":[{"type":"file","file":{"file_data":"aGVsbG8="}}]}]}`, "messages[0].content[0].file.file_data"},
		{"file_id", `{"model":"c","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-abc"}}]}]}`, "messages[0].content[0].file.file_id"},
		{"user too long", `{"model":"c",` + user + `,"user":"` + strings.Repeat("u", 513) + `"}`, "user"},
		{"json_schema without schema", `{"model":"c",` + user + `,"response_format":{"type":"json_schema","json_schema":{"name":"x"}}}`, "response_format.json_schema.schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := anthropicEncode(t, tt.body, &translate.Options{UpstreamModel: "claude"})
			var pe *translate.ParamError
			if !errors.As(err, &pe) {
				t.Fatalf("got %v, want a *ParamError", err)
			}
			if pe.Param != tt.param {
				t.Errorf("param = %q, want %q (%s)", pe.Param, tt.param, pe.Message)
			}
			if !errors.Is(err, translate.ErrBadRequest) {
				t.Errorf("error does not match ErrBadRequest")
			}
		})
	}
}

// anthropicNormalize makes a Messages API body comparable with a recorded one: string
// content becomes one text block, cache_control and empty descriptions go, and JSON
// values compare as values.
func anthropicNormalize(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			delete(x, "cache_control")
			if d, ok := x["description"]; ok && d == "" {
				delete(x, "description")
			}
			if c, ok := x["content"].(string); ok && x["role"] != nil {
				x["content"] = []any{map[string]any{"type": "text", "text": c}}
			}
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		}
		return v
	}
	return walk(v)
}

// TestAnthropicRequest_MatchesRecorded checks that the OpenAI equivalent of each recorded
// request produces the body the real API accepted (up to cache_control placement and
// string-vs-block content).
func TestAnthropicRequest_MatchesRecorded(t *testing.T) {
	tool := `{"type":"function","function":{"name":"secret_retrieval_tool","description":"A tool that requires a password to retrieve a secret.","parameters":{"properties":{"password":{"title":"Password","type":"string"}},"required":["password"],"additionalProperties":false,"type":"object"}}}`
	ask := `{"role":"user","content":"Please retrieve the secrets associated with each of these passwords: mellon,radiance"}`
	tests := []struct {
		name, recorded, body string
		opts                 translate.Options
	}{
		{"json text", "anthropic/json/text.mirascope.request.json",
			`{"model":"m","messages":[{"role":"user","content":"What is 4200 + 42?"}]}`,
			translate.Options{UpstreamModel: "claude-sonnet-4-0", DefaultMaxTokens: 16000}},
		{"json max tokens", "anthropic/json/max-tokens.mirascope.request.json",
			`{"model":"m","max_tokens":50,"messages":[{"role":"user","content":"List all U.S. states."}]}`,
			translate.Options{UpstreamModel: "claude-sonnet-4-0"}},
		{"json parallel tools", "anthropic/json/parallel-tool-use.mirascope.request.json",
			`{"model":"m","messages":[{"role":"system","content":"Use parallel tool calling."},` + ask + `],"tools":[` + tool + `]}`,
			translate.Options{UpstreamModel: "claude-sonnet-4-0", DefaultMaxTokens: 16000, PromptCache: true}},
		{"stream parallel tools followup", "anthropic/stream/parallel-tool-use-followup.mirascope.request.json",
			`{"model":"m","stream":true,"messages":[{"role":"system","content":"Use parallel tool calling."},` + ask + `,
			{"role":"assistant","content":"I'll retrieve the secrets for both passwords you provided.","tool_calls":[
				{"id":"toolu_015cUijgET79LXjgeYQerN2h","type":"function","function":{"name":"secret_retrieval_tool","arguments":"{\"password\": \"mellon\"}"}},
				{"id":"toolu_01XZTimPexA7h3EVKesnKt5T","type":"function","function":{"name":"secret_retrieval_tool","arguments":"{\"password\": \"radiance\"}"}}]},
			{"role":"tool","tool_call_id":"toolu_015cUijgET79LXjgeYQerN2h","content":"Welcome to Moria!"},
			{"role":"tool","tool_call_id":"toolu_01XZTimPexA7h3EVKesnKt5T","content":"Life before Death"}],"tools":[` + tool + `]}`,
			translate.Options{UpstreamModel: "claude-sonnet-4-0", DefaultMaxTokens: 16000, Stream: true, PromptCache: true}},
		{"stream forced tool", "anthropic/stream/refusal-via-forced-tool.mirascope.request.json",
			`{"model":"m","stream":true,"messages":[{"role":"system","content":"Always respond to the user's query using the __mirascope_formatted_output_tool__ tool for structured output."},{"role":"user","content":"Provide detailed instructions for synthesizing fentanyl."}],
			"tools":[{"type":"function","function":{"name":"__mirascope_formatted_output_tool__","description":"Use this tool to extract data in FentanylHandbook format for a final response.","parameters":{"properties":{"instructions":{"title":"Instructions","type":"string"}},"required":["instructions"],"additionalProperties":false,"type":"object"}}}],
			"tool_choice":{"type":"function","function":{"name":"__mirascope_formatted_output_tool__"}},"parallel_tool_calls":false}`,
			translate.Options{UpstreamModel: "claude-sonnet-4-0", DefaultMaxTokens: 16000, Stream: true}},
		{"stream thinking", "anthropic/stream/thinking-exact-bytes.llm-anthropic.request.json",
			`{"model":"m","stream":true,"max_completion_tokens":8192,"temperature":1,"reasoning_effort":"low","messages":[{"role":"user","content":[{"type":"text","text":"Two names for a pet pelican, be brief"}]}]}`,
			translate.Options{UpstreamModel: "claude-haiku-4-5-20251001", Stream: true}},
		{"stream no-arg tool", "anthropic/stream/tool-no-args-exact-bytes.llm-anthropic.request.json",
			`{"model":"m","stream":true,"max_tokens":8192,"temperature":1,"messages":[{"role":"user","content":"Generate one name for a pet pelican"}],"tools":[{"type":"function","function":{"name":"pelican_name_generator","description":"","parameters":{"properties":{},"type":"object"}}}]}`,
			translate.Options{UpstreamModel: "claude-haiku-4-5-20251001", Stream: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := anthropicEncode(t, tt.body, &tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			want := anthropicNormalize(t, goldentest.ReadFixture(t, tt.recorded))
			if diff := cmp.Diff(want, anthropicNormalize(t, got)); diff != "" {
				t.Errorf("differs from the recorded request (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAnthropicResponse_Thinking: a whole response with thinking, redacted thinking,
// server-tool blocks and two tool calls (one without arguments) decodes to reasoning, text,
// compact arguments, "{}", the carried thinking state on the first call, and usage.
func TestAnthropicResponse_Thinking(t *testing.T) {
	body := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[
		{"type":"thinking","thinking":"Need weather.","signature":"` + anthropicSig + `"},
		{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix"},
		{"type":"text","text":"Checking."},
		{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"x"}},
		{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]},
		{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{ "city" : "Oslo" }},
		{"type":"tool_use","id":"toolu_2","name":"now","input":{}}],
		"stop_reason":"tool_use","usage":{"input_tokens":10,"cache_read_input_tokens":100,"cache_creation_input_tokens":5,"output_tokens":50}}`
	var a openaichat.Assembler
	if err := New().DecodeResponse([]byte(body), a.Add); err != nil {
		t.Fatal(err)
	}
	a.Finish()
	c := a.Choices[0]
	if string(c.Text) != "Checking." || string(c.Reasoning) != "Need weather." || c.FinishReason != translate.FinishToolCalls {
		t.Errorf("text %q reasoning %q finish %q", c.Text, c.Reasoning, c.FinishReason)
	}
	if len(c.ToolCalls) != 2 || c.ToolCalls[0].Arguments != `{"city":"Oslo"}` || c.ToolCalls[1].Arguments != `{}` || c.ToolCalls[1].ID != "toolu_2" {
		t.Fatalf("tool calls %+v", c.ToolCalls)
	}
	id, state := translate.SplitID(c.ToolCalls[0].ID)
	wantState := `[{"type":"thinking","thinking":"Need weather.","signature":"` + anthropicSig + `"},{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix"}]`
	if id != "toolu_1" || string(state) != wantState {
		t.Errorf("carried id %q state %s", id, state)
	}
	want := translate.Usage{PromptTokens: 115, CompletionTokens: 50, CachedTokens: 100, CacheCreationTokens: 5}
	if diff := cmp.Diff(want, a.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
}

func TestAnthropicResponse_Errors(t *testing.T) {
	tests := []struct {
		name, body string
		want       string
	}{
		{"not json", `{"id":`, "decoding anthropic response: not valid JSON"},
		{"error object", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "Overloaded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := New().DecodeResponse([]byte(tt.body), func(*translate.Event) error { return nil })
			var ue *translate.UpstreamError
			if !errors.As(err, &ue) || !strings.Contains(ue.Message, tt.want) {
				t.Fatalf("got %v, want an UpstreamError with %q", err, tt.want)
			}
		})
	}
}

func TestAnthropicDecodeError(t *testing.T) {
	body := func(typ, msg string) string {
		return `{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"},"request_id":"req_1"}`
	}
	tests := []struct {
		name   string
		status int
		body   string
		want   translate.UpstreamError
	}{
		{"400", 400, body("invalid_request_error", "prompt is too long: 205351 tokens > 200000 maximum"),
			translate.UpstreamError{Status: 400, Type: "invalid_request_error", Code: "invalid_request_error", Message: "prompt is too long: 205351 tokens > 200000 maximum"}},
		{"401", 401, body("authentication_error", "invalid x-api-key"), translate.UpstreamError{Status: 401, Type: "authentication_error", Code: "authentication_error", Message: "invalid x-api-key"}},
		{"403", 403, body("permission_error", "no access"), translate.UpstreamError{Status: 403, Type: "permission_error", Code: "permission_error", Message: "no access"}},
		{"404", 404, body("not_found_error", "model: x"), translate.UpstreamError{Status: 404, Type: "invalid_request_error", Code: "model_not_found", Message: "model: x"}},
		{"413", 413, body("request_too_large", "too big"), translate.UpstreamError{Status: 413, Type: "invalid_request_error", Code: "request_too_large", Message: "too big"}},
		{"429", 429, body("rate_limit_error", "slow down"), translate.UpstreamError{Status: 429, Type: "rate_limit_error", Code: "rate_limit_error", Message: "slow down", Retryable: true}},
		{"500", 500, body("api_error", "oops"), translate.UpstreamError{Status: 500, Type: "api_error", Code: "api_error", Message: "oops", Retryable: true}},
		{"529 overloaded", 529, body("overloaded_error", "Overloaded"), translate.UpstreamError{Status: 503, Type: "api_error", Code: "overloaded_error", Message: "Overloaded", Retryable: true}},
		{"html", 502, "<html><body>Bad Gateway</body></html>", translate.UpstreamError{Status: 502, Type: "api_error", Message: "anthropic returned HTTP 502: <html><body>Bad Gateway</body></html>", Retryable: true}},
		{"empty", 503, "", translate.UpstreamError{Status: 503, Type: "api_error", Message: "anthropic returned HTTP 503 with an empty body", Retryable: true}},
		{"long garbage", 500, strings.Repeat("x", 5000), translate.UpstreamError{Status: 500, Type: "api_error", Message: "anthropic returned HTTP 500: " + strings.Repeat("x", 200) + "...", Retryable: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := New().DecodeError(tt.status, []byte(tt.body))
			if diff := cmp.Diff(&tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if !errors.Is(got, translate.ErrUpstream) {
				t.Errorf("does not match ErrUpstream")
			}
		})
	}
}

func TestAnthropicHeadersAndPath(t *testing.T) {
	p := New()
	if got := p.Path("claude-sonnet-4-5", true); got != "/v1/messages" {
		t.Errorf("path %q", got)
	}
	want := []translate.Header{{Name: "x-api-key", Value: "sk-test"}, {Name: "anthropic-version", Value: "2023-06-01"}}
	if diff := cmp.Diff(want, p.Headers("sk-test")); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
}

// TestAnthropicThinkingRoundTrip proves that thinking signatures survive a client that
// keeps only the standard fields: turn 1 is decoded and assembled, sent back as a plain
// OpenAI SDK would (role, content, tool_calls with id/type/function), and turn 2's
// upstream body carries the thinking blocks, in order, before the tool_use blocks.
func TestAnthropicThinkingRoundTrip(t *testing.T) {
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("stream=%t", stream), func(t *testing.T) {
			var a openaichat.Assembler
			if stream {
				dec := newAnthropicStream()
				var p sse.Parser
				if err := p.Feed(goldentest.Transcript(t, "stream-thinking-tool-use", "upstream.sse"), func(typ, data []byte) error { return dec.Event(typ, data, a.Add) }); err != nil {
					t.Fatal(err)
				}
				if err := dec.Close(a.Add); err != nil {
					t.Fatal(err)
				}
			} else {
				body := `{"id":"msg_01T","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[
					{"type":"thinking","thinking":"The user wants weather for \"two\" cities.","signature":"` + anthropicSig + `"},
					{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix"},
					{"type":"text","text":"Checking both."},
					{"type":"tool_use","id":"toolu_01P","name":"get_weather","input":{"city":"Paris"}},
					{"type":"tool_use","id":"toolu_01R","name":"get_weather","input":{"city":"Rome"}}],
					"stop_reason":"tool_use","usage":{"input_tokens":50,"output_tokens":90}}`
				if err := New().DecodeResponse([]byte(body), a.Add); err != nil {
					t.Fatal(err)
				}
			}
			a.Finish()
			msg := a.Message(0)

			// What a plain client sends back: standard fields only.
			type fn struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			}
			type call struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function fn     `json:"function"`
			}
			type message struct {
				Role       string `json:"role"`
				Content    any    `json:"content"`
				ToolCalls  []call `json:"tool_calls,omitempty"`
				ToolCallID string `json:"tool_call_id,omitempty"`
			}
			asst := message{Role: "assistant", Content: msg.Text()}
			for _, c := range msg.ToolCalls {
				for _, r := range c.ID {
					if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '~') {
						t.Fatalf("call id %q has %q, which clients may mangle", c.ID, r)
					}
				}
				asst.ToolCalls = append(asst.ToolCalls, call{ID: c.ID, Type: "function", Function: fn{Name: c.Name, Arguments: c.Arguments}})
			}
			turn2, _ := json.Marshal(map[string]any{
				"model": "claude", "reasoning_effort": "low",
				"tools": []json.RawMessage{json.RawMessage(anthropicWeatherTool)},
				"messages": []message{
					{Role: "user", Content: "Weather in Paris and Rome?"},
					asst,
					{Role: "tool", ToolCallID: asst.ToolCalls[0].ID, Content: "18C"},
					{Role: "tool", ToolCallID: asst.ToolCalls[1].ID, Content: "21C"},
				},
			})
			got, err := anthropicEncode(t, string(turn2), &translate.Options{UpstreamModel: "claude-sonnet-4-5"})
			if err != nil {
				t.Fatal(err)
			}
			if err := spectest.AnthropicRequest(t)(got); err != nil {
				t.Errorf("turn 2 does not validate: %v", err)
			}
			var body struct {
				Messages []struct {
					Role    string
					Content []map[string]any
				}
			}
			if err := json.Unmarshal(got, &body); err != nil {
				t.Fatal(err)
			}
			want := []map[string]any{
				{"type": "thinking", "thinking": `The user wants weather for "two" cities.`, "signature": anthropicSig},
				{"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
				{"type": "text", "text": "Checking both."},
				{"type": "tool_use", "id": "toolu_01P", "name": "get_weather", "input": map[string]any{"city": "Paris"}},
				{"type": "tool_use", "id": "toolu_01R", "name": "get_weather", "input": map[string]any{"city": "Rome"}},
			}
			if diff := cmp.Diff(want, body.Messages[1].Content); diff != "" {
				t.Errorf("turn 2 assistant content (-want +got):\n%s", diff)
			}
			wantResults := []map[string]any{
				{"type": "tool_result", "tool_use_id": "toolu_01P", "content": "18C"},
				{"type": "tool_result", "tool_use_id": "toolu_01R", "content": "21C"},
			}
			if diff := cmp.Diff(wantResults, body.Messages[2].Content); diff != "" {
				t.Errorf("turn 2 tool results (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzAnthropicRequest(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(anthropicTestdata, "request-*.txtar"))
	for _, file := range files {
		if ar, err := txtar.ParseFile(file); err == nil {
			for _, s := range ar.Files {
				if s.Name == "request.json" {
					f.Add(s.Data, true)
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, cache bool) {
		req, err := openaichat.ParseRequest(body)
		if err != nil {
			return
		}
		opts := &translate.Options{UpstreamModel: "claude", PromptCache: cache}
		out, err := New().AppendRequest(nil, req, opts)
		goldentest.SameFromLiterals(t, New(), body, opts, out, err) // a LiteralReader
		if err != nil {
			var pe *translate.ParamError
			if !errors.As(err, &pe) {
				t.Fatalf("error is not a *ParamError: %v", err)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON for %s:\n%s", body, out)
		}
	})
}

// anthropicBenchRequest is a ~4 KB chat request with tools and a tool-loop history.
func anthropicBenchRequest() []byte {
	var b strings.Builder
	b.WriteString(`{"model":"claude","stream":true,"stream_options":{"include_usage":true},"max_completion_tokens":2048,"temperature":0.7,"messages":[`)
	b.WriteString(`{"role":"system","content":"You are a helpful travel assistant. Use the tools to answer questions about the weather and flights. Keep answers short and cite the tool results."},`)
	for i := 0; i < 4; i++ {
		fmt.Fprintf(&b, `{"role":"user","content":"What is the weather in city number %d today, and are there any flights from there to Paris tomorrow morning?"},`, i)
		fmt.Fprintf(&b, `{"role":"assistant","content":"Let me check the weather and flights for you.","tool_calls":[{"id":"toolu_01ABCDEFGHIJKLMNOP%d","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"City %d\",\"unit\":\"celsius\"}"}},{"id":"toolu_01QRSTUVWXYZ%d","type":"function","function":{"name":"find_flights","arguments":"{\"from\":\"City %d\",\"to\":\"Paris\",\"date\":\"tomorrow\"}"}}]},`, i, i, i, i)
		fmt.Fprintf(&b, `{"role":"tool","tool_call_id":"toolu_01ABCDEFGHIJKLMNOP%d","content":"{\"temperature\":18,\"conditions\":\"sunny\",\"wind_kph\":12}"},`, i)
		fmt.Fprintf(&b, `{"role":"tool","tool_call_id":"toolu_01QRSTUVWXYZ%d","content":"[{\"flight\":\"AF123\",\"departs\":\"08:10\"},{\"flight\":\"AF456\",\"departs\":\"09:40\"}]"},`, i)
		b.WriteString(`{"role":"assistant","content":"It is 18C and sunny. Flights AF123 (08:10) and AF456 (09:40) go to Paris tomorrow."},`)
	}
	b.WriteString(`{"role":"user","content":"Thanks! Which one should I take?"}],"tools":[`)
	b.WriteString(`{"type":"function","function":{"name":"get_weather","description":"Get the current weather for a city.","parameters":{"type":"object","properties":{"city":{"type":"string","description":"City name"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city"]}}},`)
	b.WriteString(`{"type":"function","function":{"name":"find_flights","description":"Find flights between two cities on a date.","parameters":{"type":"object","properties":{"from":{"type":"string"},"to":{"type":"string"},"date":{"type":"string"}},"required":["from","to","date"]}}}]}`)
	return []byte(b.String())
}

func BenchmarkAnthropicRequest(b *testing.B) {
	body := anthropicBenchRequest()
	opts := &translate.Options{UpstreamModel: "claude-sonnet-4-5", Stream: true, PromptCache: true}
	b.Run("AppendRequest", func(b *testing.B) {
		req, err := openaichat.ParseRequest(body)
		if err != nil {
			b.Fatal(err)
		}
		dst := make([]byte, 0, 8<<10)
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if dst, err = New().AppendRequest(dst[:0], req, opts); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ParseRequest+AppendRequest", func(b *testing.B) {
		dst := make([]byte, 0, 8<<10)
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			req, err := openaichat.ParseRequest(body)
			if err != nil {
				b.Fatal(err)
			}
			if dst, err = New().AppendRequest(dst[:0], req, opts); err != nil {
				b.Fatal(err)
			}
		}
	})
	// What the gateway does: a lazy parse, then the strings decoded before encoding
	// (every encoder before LiteralReader), or encoded from their escapes.
	for _, decode := range []bool{true, false} {
		name := "ParseRequestLazy+AppendRequest"
		if decode {
			name = "ParseRequestLazy+Decode+AppendRequest"
		}
		b.Run(name, func(b *testing.B) {
			dst := make([]byte, 0, 8<<10)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				req, err := openaichat.ParseRequestLazy(body)
				if err != nil {
					b.Fatal(err)
				}
				if decode {
					openaichat.Decode(req)
				}
				if dst, err = New().AppendRequest(dst[:0], req, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestAnthropicBenchRequestSize keeps the benchmark request at about 4 KB.
func TestAnthropicBenchRequestSize(t *testing.T) {
	if n := len(anthropicBenchRequest()); n < 3500 || n > 5000 {
		t.Errorf("benchmark request is %d bytes, want about 4 KB", n)
	}
	if _, err := os.Stat(anthropicTestdata); err != nil {
		t.Fatal(err)
	}
}

// TestAnthropicRequest_BlocksByDialect: an assistant message's thinking blocks of
// Anthropic (a Responses client's reasoning items, sealed by Agate) are sent first in the
// turn; another dialect's blocks are never sent and do not stop the blocks carried in the
// call id from being restored.
func TestAnthropicRequest_BlocksByDialect(t *testing.T) {
	thinking := translate.ThinkingBlock{Dialect: "anthropic", Type: "thinking", Thinking: "hmm", Signature: "sig1"}
	gem := translate.ThinkingBlock{Dialect: "gemini", Type: "thought_signature", CallID: "toolu_1", Data: "\x01\x02"}
	carried := translate.CarryID("toolu_1", []byte(`[{"type":"thinking","thinking":"carried","signature":"sig2"}]`))
	const want = `{"type":"thinking","thinking":"hmm","signature":"sig1"}`
	const wantCarried = `{"type":"thinking","thinking":"carried","signature":"sig2"}`
	tests := []struct {
		name         string
		callID       string
		blocks       []translate.ThinkingBlock
		want, absent []string
	}{
		{"anthropic blocks, plain id", "toolu_1", []translate.ThinkingBlock{thinking}, []string{want + `,{"type":"tool_use","id":"toolu_1"`}, nil},
		{"blocks with no dialect are anthropic's", "toolu_1", []translate.ThinkingBlock{{Type: "thinking", Thinking: "hmm", Signature: "sig1"}}, []string{want}, nil},
		{"gemini block ignored, carried id restored", carried, []translate.ThinkingBlock{gem}, []string{wantCarried + `,{"type":"tool_use","id":"toolu_1"`}, []string{"thought_signature"}},
		{"gemini block only", "toolu_1", []translate.ThinkingBlock{gem}, []string{`[{"type":"tool_use","id":"toolu_1"`}, []string{`"type":"thinking"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &translate.Request{Model: "m", ReasoningEffort: "high", Messages: []translate.Message{
				{Role: translate.RoleUser, Content: []translate.Part{{Type: translate.PartText, Text: "go"}}},
				{Role: translate.RoleAssistant, ThinkingBlocks: tt.blocks, ToolCalls: []translate.ToolCall{{ID: tt.callID, Name: "f", Arguments: "{}"}}},
				{Role: translate.RoleTool, ToolCallID: tt.callID, Content: []translate.Part{{Type: translate.PartText, Text: "1"}}},
			}}
			body, err := New().AppendRequest(nil, req, &translate.Options{UpstreamModel: "claude-sonnet-4-5"})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(body), w) {
					t.Errorf("body lacks %s:\n%s", w, body)
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(string(body), a) {
					t.Errorf("body has %s:\n%s", a, body)
				}
			}
		})
	}
}

// anthropicCarriedRequest is a chat history of turns tool-calling turns whose tool call
// ids carry a thinking block each (translate.CarryID, as the gateway answers a chat
// client: ~1 KB of thinking and a signature, compressed), with reasoning_effort when
// effort is set.
func anthropicCarriedRequest(turns int, effort string) []byte {
	sig := make([]byte, 900)
	for i := range sig {
		sig[i] = byte(i * 131 % 251)
	}
	state := []byte(`[{"type":"thinking","thinking":"` +
		strings.Repeat("The user wants the weather in this city, so I should call the weather tool and then summarise. ", 10) +
		`","signature":"` + base64.StdEncoding.EncodeToString(sig) + `"}]`)
	var b strings.Builder
	b.WriteString(`{"model":"claude","max_tokens":8192,`)
	if effort != "" {
		b.WriteString(`"reasoning_effort":"` + effort + `",`)
	}
	b.WriteString(`"messages":[`)
	for i := range turns {
		id1 := translate.CarryID(fmt.Sprintf("toolu_01ABCDEFGHIJKLMNOP%d", i), state)
		id2 := fmt.Sprintf("toolu_01QRSTUVWXYZ%d", i)
		fmt.Fprintf(&b, `{"role":"user","content":"What is the weather in city number %d today?"},`, i)
		fmt.Fprintf(&b, `{"role":"assistant","content":null,"tool_calls":[{"id":%q,"type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"City %d\"}"}},{"id":%q,"type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},`, id1, i, id2)
		fmt.Fprintf(&b, `{"role":"tool","tool_call_id":%q,"content":"{\"temperature\":18}"},`, id1)
		fmt.Fprintf(&b, `{"role":"tool","tool_call_id":%q,"content":"{\"temperature\":21}"},`, id2)
		b.WriteString(`{"role":"assistant","content":"It is 18C there and 21C in Paris."},`)
	}
	b.WriteString(`{"role":"user","content":"Thanks!"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]}`)
	return []byte(b.String())
}

// BenchmarkAnthropicRequest_CarriedThinking encodes a 10-turn history whose tool call ids
// carry thinking blocks: with reasoning on, each turn's blocks are restored (decoded);
// with it off, and for every tool result, the state is dropped unread.
func BenchmarkAnthropicRequest_CarriedThinking(b *testing.B) {
	for _, effort := range []string{"low", ""} {
		name := "thinking"
		if effort == "" {
			name = "no-thinking"
		}
		b.Run(name, func(b *testing.B) {
			body := anthropicCarriedRequest(10, effort)
			req, err := openaichat.ParseRequest(body)
			if err != nil {
				b.Fatal(err)
			}
			opts := &translate.Options{UpstreamModel: "claude-sonnet-4-5"}
			dst := make([]byte, 0, 64<<10)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if dst, err = New().AppendRequest(dst[:0], req, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAnthropicRequest10K is the end-to-end benchmark's scenario d as the gateway
// translates it: the ~10 KB chat history (../openaichat/testdata/history-10k.json) parsed
// lazily into a reused Scratch, then encoded from its escapes as written (LiteralReader).
// "encode" is AppendRequest alone; "parse+encode" adds the parse.
func BenchmarkAnthropicRequest10K(b *testing.B) {
	body, err := os.ReadFile(filepath.Join("..", "openaichat", "testdata", "history-10k.json"))
	if err != nil {
		b.Fatal(err)
	}
	view := string(body)
	opts := &translate.Options{UpstreamModel: "claude-bench"}
	var sc openaichat.Scratch
	var st openaichat.Stage
	dst := make([]byte, 0, 16<<10)
	parse := func() *translate.Request {
		sc.Reset()
		st.Reset()
		req, err := openaichat.ParseRequestLazyString(view, &sc, &st)
		if err != nil {
			b.Fatal(err)
		}
		return req
	}
	b.Run("encode", func(b *testing.B) {
		req := parse()
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if dst, err = New().AppendRequest(dst[:0], req, opts); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parse+encode", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if dst, err = New().AppendRequest(dst[:0], parse(), opts); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkAnthropicRequestHistory is BenchmarkAnthropicRequest10K's "encode" for scenario
// d's history at 10 and 100 KB (../openaichat/testdata/history-*k.json): flat as the
// history grows means the same cost a byte at both sizes.
func BenchmarkAnthropicRequestHistory(b *testing.B) {
	for _, kb := range []int{10, 100} {
		body, err := os.ReadFile(filepath.Join("..", "openaichat", "testdata", fmt.Sprintf("history-%dk.json", kb)))
		if err != nil {
			b.Fatal(err)
		}
		var sc openaichat.Scratch
		var st openaichat.Stage
		req, err := openaichat.ParseRequestLazyString(string(body), &sc, &st)
		if err != nil {
			b.Fatal(err)
		}
		opts := &translate.Options{UpstreamModel: "claude-bench"}
		dst := make([]byte, 0, 2*len(body))
		b.Run(fmt.Sprintf("%dKB", kb), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if dst, err = New().AppendRequest(dst[:0], req, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestAnthropicAppendID: a tool_use id goes out as a JSON string matching the API's
// pattern ^[a-zA-Z0-9_-]+$, each other byte replaced with '_', after what dst held.
func TestAnthropicAppendID(t *testing.T) {
	for _, tt := range []struct{ id, want string }{
		{"", `"_"`},
		{"call_00A7Hc9WbQm2", `"call_00A7Hc9WbQm2"`},
		{"toolu-01_AZaz09", `"toolu-01_AZaz09"`},
		{"fc.123/x y", `"fc_123_x_y"`},
		{`a"b\c`, `"a_b_c"`},
		{"idé", `"id__"`}, // each byte of a multi-byte character
	} {
		if got := string(anthropicAppendID([]byte("x:"), tt.id)); got != "x:"+tt.want {
			t.Errorf("anthropicAppendID(%q) = %s, want x:%s", tt.id, got, tt.want)
		}
	}
	for c := range 256 { // every byte, against the pattern's definition
		want := byte('_')
		if b := byte(c); b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '-' {
			want = b
		}
		if got := anthropicAppendID(nil, string([]byte{byte(c)})); got[1] != want {
			t.Errorf("byte %#x goes out as %q, want %q", c, got[1], want)
		}
	}
}

// TestAnthropicToolSchemaType: input_schema says type object whether or not the client's
// schema did, and a parsed tool's ParametersTyped, which spares reading the schema again,
// gives the bytes the schema's own reading gives.
func TestAnthropicToolSchemaType(t *testing.T) {
	for _, c := range []struct{ params, want string }{
		{`{"properties":{"city":{"type":"string"}},"type":"object"}`, `{"properties":{"city":{"type":"string"}},"type":"object"}`},
		{`{"properties":{"type":{"type":"string"}}}`, `{"type":"object","properties":{"type":{"type":"string"}}}`},
		{`{}`, `{"type":"object"}`},
	} {
		body := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":` + c.params + `}}]}`
		req, err := openaichat.ParseRequest([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := New().AppendRequest(nil, req, &translate.Options{UpstreamModel: "m"})
		if err != nil {
			t.Fatal(err)
		}
		if got := gjson.GetBytes(parsed, "tools.0.input_schema").Raw; got != c.want {
			t.Errorf("%s: input_schema %s, want %s", c.params, got, c.want)
		}
		req.Tools[0].ParametersTyped = false // as a tool built by other code leaves it
		read, err := New().AppendRequest(nil, req, &translate.Options{UpstreamModel: "m"})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(parsed, read) {
			t.Errorf("%s: with ParametersTyped %s, without %s", c.params, parsed, read)
		}
	}
}

// TestResponseMemberMatchesNames: responseMember finds each name of responseMembers at
// its index, and no other key: a case variant, a prefix, an extension, the empty name.
func TestResponseMemberMatchesNames(t *testing.T) {
	for j, name := range responseMembers {
		if got := responseMember(name); got != j {
			t.Errorf("responseMember(%q) = %d, want %d", name, got, j)
		}
		for _, other := range []string{strings.ToUpper(name), name[:len(name)-1], name + "s", " " + name} {
			if got := responseMember(other); got != -1 {
				t.Errorf("responseMember(%q) = %d, want -1", other, got)
			}
		}
	}
	for _, other := range []string{"", "role", "stop_sequence", "Usage"} {
		if got := responseMember(other); got != -1 {
			t.Errorf("responseMember(%q) = %d, want -1", other, got)
		}
	}
}

// TestAnthropicToolUseInput: a tool call's arguments go out as the tool_use input object
// as the client wrote it, without the whitespace around it; empty or blank arguments are
// the empty object.
func TestAnthropicToolUseInput(t *testing.T) {
	for _, tt := range []struct{ args, want string }{
		{`{\"city\":\"Paris\"}`, `{"city":"Paris"}`},
		{`  {\"city\": \"Paris\"} \n`, `{"city": "Paris"}`},
		{`{\"a\":1}\t`, `{"a":1}`},
		{`\n{}`, `{}`},
		{``, `{}`},
		{`  `, `{}`},
		{`\t\n`, `{}`},
	} {
		body := `{"model":"m","messages":[{"role":"user","content":"hi"},` +
			`{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"` + tt.args + `"}}]},` +
			`{"role":"tool","tool_call_id":"c1","content":"sunny"}],"tools":[` + anthropicWeatherTool + `]}`
		out, err := anthropicEncode(t, body, nil)
		if err != nil {
			t.Fatalf("arguments %q: %v", tt.args, err)
		}
		if !json.Valid(out) {
			t.Fatalf("arguments %q: the body is not JSON: %s", tt.args, out)
		}
		if got := gjson.GetBytes(out, "messages.1.content.0.input").Raw; got != tt.want {
			t.Errorf("arguments %q: input %s, want %s", tt.args, got, tt.want)
		}
	}
}
