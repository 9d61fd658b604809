package translate

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseRequest_Errors pins the parameter each invalid request is blamed on.
func TestParseRequest_Errors(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"hi"}]`
	tests := []struct {
		name      string
		body      string
		wantParam string
	}{
		{name: "empty body", body: ``, wantParam: ""},
		{name: "malformed JSON", body: `{"model":"m",`, wantParam: ""},
		{name: "trailing garbage", body: `{"model":"m",` + msgs + `}x`, wantParam: ""},
		{name: "not an object", body: `["model"]`, wantParam: ""},
		{name: "string body", body: `"hello"`, wantParam: ""},
		{name: "missing model", body: `{` + msgs + `}`, wantParam: "model"},
		{name: "null model", body: `{"model":null,` + msgs + `}`, wantParam: "model"},
		{name: "model not a string", body: `{"model":1,` + msgs + `}`, wantParam: "model"},
		{name: "missing messages", body: `{"model":"m"}`, wantParam: "messages"},
		{name: "null messages", body: `{"model":"m","messages":null}`, wantParam: "messages"},
		{name: "empty messages", body: `{"model":"m","messages":[]}`, wantParam: "messages"},
		{name: "messages not an array", body: `{"model":"m","messages":{"role":"user"}}`, wantParam: "messages"},
		{name: "message not an object", body: `{"model":"m","messages":["hi"]}`, wantParam: "messages[0]"},
		{name: "missing role", body: `{"model":"m","messages":[{"content":"hi"}]}`, wantParam: "messages[0].role"},
		{name: "unknown role", body: `{"model":"m","messages":[{"role":"robot","content":"hi"}]}`, wantParam: "messages[0].role"},
		{name: "user without content", body: `{"model":"m","messages":[{"role":"user"}]}`, wantParam: "messages[0].content"},
		{name: "content a number", body: `{"model":"m","messages":[{"role":"user","content":5}]}`, wantParam: "messages[0].content"},
		{name: "content part not an object", body: `{"model":"m","messages":[{"role":"user","content":["hi"]}]}`, wantParam: "messages[0].content[0]"},
		{name: "unknown content part", body: `{"model":"m","messages":[{"role":"user","content":[{"type":"video"}]}]}`, wantParam: "messages[0].content[0].type"},
		{name: "text part without text", body: `{"model":"m","messages":[{"role":"user","content":[{"type":"text"}]}]}`, wantParam: "messages[0].content[0].text"},
		{name: "image without url", body: `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]}`, wantParam: "messages[0].content[0].image_url.url"},
		{name: "image in a system message", body: `{"model":"m","messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]}`, wantParam: "messages[0].content[0].type"},
		{name: "tool message without id", body: `{"model":"m","messages":[{"role":"tool","content":"42"}]}`, wantParam: "messages[0].tool_call_id"},
		{name: "assistant without content or calls", body: `{"model":"m","messages":[{"role":"assistant"}]}`, wantParam: "messages[0].content"},
		{name: "tool_calls on a user message", body: `{"model":"m","messages":[{"role":"user","content":"x","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`, wantParam: "messages[0].tool_calls"},
		{name: "tool call without id", body: `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}]}`, wantParam: "messages[0].tool_calls[0].id"},
		{name: "tool call arguments an object", body: `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":{}}}]}]}`, wantParam: "messages[0].tool_calls[0].function.arguments"},
		{name: "second message bad", body: `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"user","content":true}]}`, wantParam: "messages[1].content"},
		{name: "stream not a boolean", body: `{"model":"m","stream":"true",` + msgs + `}`, wantParam: "stream"},
		{name: "stream_options not an object", body: `{"model":"m","stream":true,"stream_options":true,` + msgs + `}`, wantParam: "stream_options"},
		{name: "include_usage not a boolean", body: `{"model":"m","stream":true,"stream_options":{"include_usage":1},` + msgs + `}`, wantParam: "stream_options.include_usage"},
		{name: "stream_options without stream", body: `{"model":"m","stream_options":{"include_usage":true},` + msgs + `}`, wantParam: "stream_options"},
		{name: "tools not an array", body: `{"model":"m","tools":{},` + msgs + `}`, wantParam: "tools"},
		{name: "tool of another type", body: `{"model":"m","tools":[{"type":"web_search"}],` + msgs + `}`, wantParam: "tools[0].type"},
		{name: "tool name invalid", body: `{"model":"m","tools":[{"type":"function","function":{"name":"has space"}}],` + msgs + `}`, wantParam: "tools[0].function.name"},
		{name: "duplicate tool", body: `{"model":"m","tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}],` + msgs + `}`, wantParam: "tools[1].function.name"},
		{name: "tool parameters not an object", body: `{"model":"m","tools":[{"type":"function","function":{"name":"f","parameters":"x"}}],` + msgs + `}`, wantParam: "tools[0].function.parameters"},
		{name: "tool_choice unknown", body: `{"model":"m","tool_choice":"sometimes",` + msgs + `}`, wantParam: "tool_choice"},
		{name: "tool_choice names a missing tool", body: `{"model":"m","tool_choice":{"type":"function","function":{"name":"g"}},"tools":[{"type":"function","function":{"name":"f"}}],` + msgs + `}`, wantParam: "tool_choice"},
		{name: "tool_choice without name", body: `{"model":"m","tool_choice":{"type":"function","function":{}},` + msgs + `}`, wantParam: "tool_choice.function.name"},
		{name: "tool_choice required without tools", body: `{"model":"m","tool_choice":"required",` + msgs + `}`, wantParam: "tool_choice"},
		{name: "parallel_tool_calls not a boolean", body: `{"model":"m","parallel_tool_calls":1,` + msgs + `}`, wantParam: "parallel_tool_calls"},
		{name: "max_tokens zero", body: `{"model":"m","max_tokens":0,` + msgs + `}`, wantParam: "max_tokens"},
		{name: "max_completion_tokens fractional", body: `{"model":"m","max_completion_tokens":1.5,` + msgs + `}`, wantParam: "max_completion_tokens"},
		{name: "temperature a string", body: `{"model":"m","temperature":"hot",` + msgs + `}`, wantParam: "temperature"},
		{name: "temperature too high", body: `{"model":"m","temperature":2.5,` + msgs + `}`, wantParam: "temperature"},
		{name: "top_p out of range", body: `{"model":"m","top_p":-0.1,` + msgs + `}`, wantParam: "top_p"},
		{name: "presence_penalty out of range", body: `{"model":"m","presence_penalty":3,` + msgs + `}`, wantParam: "presence_penalty"},
		{name: "frequency_penalty a bool", body: `{"model":"m","frequency_penalty":true,` + msgs + `}`, wantParam: "frequency_penalty"},
		{name: "stop a number", body: `{"model":"m","stop":1,` + msgs + `}`, wantParam: "stop"},
		{name: "stop array of numbers", body: `{"model":"m","stop":["a",1],` + msgs + `}`, wantParam: "stop"},
		{name: "n zero", body: `{"model":"m","n":0,` + msgs + `}`, wantParam: "n"},
		{name: "seed fractional", body: `{"model":"m","seed":1.5,` + msgs + `}`, wantParam: "seed"},
		{name: "logprobs not a boolean", body: `{"model":"m","logprobs":"yes",` + msgs + `}`, wantParam: "logprobs"},
		{name: "top_logprobs too many", body: `{"model":"m","top_logprobs":21,` + msgs + `}`, wantParam: "top_logprobs"},
		{name: "response_format not an object", body: `{"model":"m","response_format":"json",` + msgs + `}`, wantParam: "response_format"},
		{name: "response_format unknown type", body: `{"model":"m","response_format":{"type":"xml"},` + msgs + `}`, wantParam: "response_format.type"},
		{name: "json_schema without schema object", body: `{"model":"m","response_format":{"type":"json_schema"},` + msgs + `}`, wantParam: "response_format.json_schema"},
		{name: "json_schema without name", body: `{"model":"m","response_format":{"type":"json_schema","json_schema":{"schema":{}}},` + msgs + `}`, wantParam: "response_format.json_schema.name"},
		{name: "reasoning_effort unknown", body: `{"model":"m","reasoning_effort":"max",` + msgs + `}`, wantParam: "reasoning_effort"},
		{name: "user not a string", body: `{"model":"m","user":5,` + msgs + `}`, wantParam: "user"},
		{name: "metadata with a number", body: `{"model":"m","metadata":{"a":1},` + msgs + `}`, wantParam: "metadata"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := ParseRequest([]byte(tt.body))
			if err == nil {
				t.Fatalf("ParseRequest accepted it: %+v", req)
			}
			var pe *ParamError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T) is not a *ParamError", err, err)
			}
			if !errors.Is(err, ErrBadRequest) {
				t.Errorf("error does not match ErrBadRequest")
			}
			if pe.Param != tt.wantParam {
				t.Errorf("param = %q, want %q (message %q)", pe.Param, tt.wantParam, pe.Message)
			}
			if pe.Message == "" {
				t.Error("empty message")
			}
		})
	}
}

func TestParseRequest_Valid(t *testing.T) {
	body := `{"model":"gpt","stream":true,"stream_options":{"include_usage":true},"temperature":0.5,"max_tokens":10,` +
		`"max_completion_tokens":20,"stop":"END","n":1,"seed":7,"user":"u","metadata":{"a":"b"},"tool_choice":"auto",` +
		`"parallel_tool_calls":false,"reasoning_effort":"low","store":true,"logit_bias":null,` +
		`"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}],` +
		`"messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"https://x/y.png","detail":"low"}}]},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"call_1","content":"sunny"}]}`
	req, err := ParseRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	type view struct {
		Model, ReasoningEffort, User, Metadata string
		Stream, IncludeUsage                   bool
		MaxTokens                              int
		MaxTokensParam                         string
		Temperature                            float64
		Stop                                   []string
		Seed                                   int64
		Parallel                               bool
		ToolChoice                             ToolChoice
		Tools                                  []string
		Roles                                  []string
		Parts                                  int
		Calls                                  []ToolCall
		ToolCallID                             string
		Extra                                  []Field
	}
	got := view{Model: req.Model, ReasoningEffort: req.ReasoningEffort, User: req.User, Metadata: req.Metadata,
		Stream: req.Stream, IncludeUsage: req.IncludeUsage, MaxTokens: req.MaxTokens, MaxTokensParam: req.MaxTokensParam,
		Temperature: *req.Temperature, Stop: req.Stop, Seed: *req.Seed, Parallel: *req.ParallelToolCalls,
		ToolChoice: req.ToolChoice, Parts: len(req.Messages[1].Content), Calls: req.Messages[2].ToolCalls,
		ToolCallID: req.Messages[3].ToolCallID, Extra: req.Extra}
	for _, tl := range req.Tools {
		got.Tools = append(got.Tools, tl.Name)
	}
	for _, m := range req.Messages {
		got.Roles = append(got.Roles, m.Role)
	}
	want := view{Model: "gpt", ReasoningEffort: "low", User: "u", Metadata: `{"a":"b"}`, Stream: true, IncludeUsage: true,
		MaxTokens: 20, MaxTokensParam: "max_completion_tokens", Temperature: 0.5, Stop: []string{"END"}, Seed: 7,
		ToolChoice: ToolChoice{Mode: ToolChoiceAuto}, Tools: []string{"get_weather"},
		Roles: []string{"system", "user", "assistant", "tool"}, Parts: 2,
		Calls:      []ToolCall{{ID: "call_1", Name: "get_weather", Arguments: "{}"}},
		ToolCallID: "call_1", Extra: []Field{{Name: "store", Raw: "true"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parsed request (-want +got):\n%s", diff)
	}
	if req.Body != body {
		t.Error("Body is not the request as received")
	}
}

// fuzzSeeds are request bodies recorded from the real APIs: the shared fixtures (when the
// repository sits beside them) and the copies the proxy tests keep.
func fuzzSeeds(f *testing.F) [][]byte {
	var out [][]byte
	for _, pattern := range []string{
		"../../shared/fixtures/*/*/*.request.json",
		"../proxy/testdata/openai-chat/*/*.request.json",
	} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			out = append(out, b)
		}
	}
	return out
}

// FuzzParseRequest: no input may panic, and an accepted request always has a model and
// messages; a rejection is always a *ParamError.
func FuzzParseRequest(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	for _, s := range []string{
		``, `{}`, `null`, `[]`, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":[{"type":"text","text":"x"}]}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_data":"data:application/pdf;base64,AA=="}},{"type":"input_audio","input_audio":{"data":"AA==","format":"wav"}}]}]}`,
		`{"model":"m","tool_choice":{"type":"function","function":{"name":"f"}},"tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{"type":"object"},"strict":true}},"messages":[{"role":"user","content":"hi"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := ParseRequest(body)
		if err != nil {
			var pe *ParamError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T) is not a *ParamError", err, err)
			}
			return
		}
		if req.Model == "" || len(req.Messages) == 0 {
			t.Fatalf("accepted a request without model or messages: %q", body)
		}
		_ = req.Clone()
	})
}
