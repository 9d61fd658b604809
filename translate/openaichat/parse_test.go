package openaichat

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"

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
		// Duplicates after the members the readers' straight lines read (members.table).
		{name: "content twice", body: `{"model":"m","messages":[{"role":"user","content":"a","content":"b"}]}`, wantParam: "messages[0].content"},
		{name: "role after the straight line", body: `{"model":"m","messages":[{"role":"user","content":"a","role":"user"}]}`, wantParam: "messages[0].role"},
		{name: "tool_call_id twice", body: `{"model":"m","messages":[{"role":"tool","content":"r","tool_call_id":"c","tool_call_id":"d"}]}`, wantParam: "messages[0].tool_call_id"},
		{name: "tool_calls twice", body: `{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[],"tool_calls":[]}]}`, wantParam: "messages[0].tool_calls"},
		{name: "tool call id twice", body: `{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"},"id":"d"}]}]}`, wantParam: "messages[0].tool_calls[0].id"},
		{name: "function name twice", body: `{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}","name":"g"}}]}]}`, wantParam: "messages[0].tool_calls[0].function.name"},
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
		{name: "invalid UTF-8 in a string", body: "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}", wantParam: ""},
		{name: "invalid UTF-8 in a key", body: "{\"model\":\"m\",\"\xc3\":1," + msgs + "}", wantParam: ""},
		{name: "surrogate encoded as UTF-8", body: "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"\xed\xa0\x80\"}]}", wantParam: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := ParseRequest([]byte(tt.body))
			if err == nil {
				t.Fatalf("ParseRequest accepted it: %+v", req)
			}
			var pe *translate.ParamError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T) is not a *ParamError", err, err)
			}
			if !errors.Is(err, translate.ErrBadRequest) {
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
		ToolChoice                             translate.ToolChoice
		Tools                                  []string
		Roles                                  []string
		Parts                                  int
		Calls                                  []translate.ToolCall
		ToolCallID                             string
		Extra                                  []translate.Field
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
		ToolChoice: translate.ToolChoice{Mode: translate.ToolChoiceAuto}, Tools: []string{"get_weather"},
		Roles: []string{"system", "user", "assistant", "tool"}, Parts: 2,
		Calls:      []translate.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: "{}"}},
		ToolCallID: "call_1", Extra: []translate.Field{{Name: "store", Raw: "true"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parsed request (-want +got):\n%s", diff)
	}
	if req.Body != body {
		t.Error("Body is not the request as received")
	}
}

// fuzzSeeds are request bodies recorded from the real APIs: the repository's
// testdata/fixtures and the copies the proxy tests keep. Each pattern must match.
func fuzzSeeds(f *testing.F) [][]byte {
	var out [][]byte
	for _, pattern := range []string{
		"../../testdata/fixtures/*/*/*.request.json",
		"../../proxy/testdata/openai-chat/*/*.request.json",
	} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		if len(files) == 0 {
			f.Fatalf("no fuzz seeds match %s", pattern)
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
			var pe *translate.ParamError
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

// quirkSeeds are requests that pin how gjson read odd shapes: duplicate keys, escaped keys
// and strings, surrogates, and values of unexpected kinds in nested objects.
var quirkSeeds = []string{
	`{"model":"m","tools":[{"function":{"name":"f","strict":true,"description":"d","parameters":{"type":"object"}},"type":"function"},{"type":"function","function":{"description":"d","name":"g","parameters":{}}}],"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","tools":[{"type":"function"{"function":{"name":"f"}}],"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","tools":[{"type":"function","function":{"name":"f"{"parameters":{}}}],"messages":[{"role":"user","content":"x"}]}`,
	// Members the generated readers hand to a method (members.table's name=read): null is
	// unset, a function that is not an object is skipped.
	`{"model":"m","messages":[{"role":"assistant","content":"x","tool_calls":null},{"role":"user","tool_calls":null,"content":"y"}]}`,
	`{"model":"m","messages":[{"role":"assistant","content":"x","tool_calls":[{"id":"a","function":null}]}]}`,
	`{"model":"m","tools":[{"type":"function","function":null}],"messages":[{"role":"user","content":"x"}]}`,
	// The member orders read first (MemberIs), and braces where a comma belongs after them.
	`{"model":"m","messages":[{"content":"x","role":"user"},{"role":"assistant","content":null,"tool_calls":[{"id":"c","function":{"arguments":"{}","name":"f"},"type":"function"}]},{"content":"r","tool_call_id":"c","role":"tool"}]}`,
	`{"model":"m","messages":[{"role":"user"{"content":"x"}]}`,
	`{"model":"m","messages":[{"role":"user","content":"x"{"role":"user"}]}`,
	`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function"{"function":{"name":"f"}}]}]}`,
	`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f"{"arguments":"{}"}}]}]}`,
	`{"model":"a","model":"b","messages":[{"role":"user","content":"x"}],"messages":[{"role":"user","content":"y"}]}`,
	`{"model":"m","messages":[{"role":"user","role":"assistant","content":"x","content":null}]}`,
	`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"a","id":"b","function":{"name":"f"},"function":{"arguments":"{}"}}],"tool_calls":[{"id":"c","function":{"name":"g"}}]}]}`,
	`{"model":"m","messages":[{"role":"assistant","tool_calls":["x",[1],{"id":"c","function":"f"}]}]}`,
	`{"model":"m","messages":[{"role":"assistant","content":"x","thinking_blocks":{"a":{"type":"thinking","type":"x","thinking":"t"},"b":1}}]}`,
	`{"model":"m","messages":[{"role":"assistant","content":"x","thinking_blocks":"{\"type\":\"thinking\"}"}]}`,
	`{"model":"m","messages":[{"role":"assistant","content":"x","thinking_blocks":[[{"type":"t"}],{"signature":"s","data":"d"}]}]}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"u","url":"v","detail":"low"},"image_url":"w"}]}]}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":"https://x/y.png"}]}]}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":"text","type":"image_url","text":"a","text":1}]}]}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"f"},"file":{"file_data":"d"}}]}]}`,
	`{"model":"m","messages":[{"role":"assistant","content":[{"type":"refusal","refusal":"no"}]}]}`,
	`{"model":"m","tool_choice":{"type":"function","function":[{"name":"x"}],"function":"y","function":{},"function":{"name":"f"},"function":{"name":"g"}},"tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","tools":[{"type":"function","type":"x","function":{"name":"f","name":"g","parameters":{"a":[1,{"b":"\u0041"}]},"strict":true}}],"tools":[{"type":"function","function":"x","function":{"name":"h"}}],"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","response_format":{"type":"json_schema","json_schema":{"name":"n","strict":true}},"response_format":{"type":"json_schema","json_schema":{"name":"o","schema":{}}},"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","response_format":{"type":"json_schema","json_schema":{"name":"n","schema":null}},"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","stop":"a","stop":["b","c"],"stop":[],"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","stream":true,"stream_options":{"include_usage":true,"include_usage":1},"stream_options":{"include_usage":null},"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","seed":9007199254740993,"top_logprobs":2e1,"n":1.0,"max_tokens":5,"max_completion_tokens":6,"max_tokens":7,"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","seed":-1e300,"temperature":-0,"top_p":1E-1,"messages":[{"role":"user","content":"x"}]}`,
	`{"mod\u0065l":"\u006d","messages":[{"r\u006fle":"user","content":"\ud83d\ude00 \ud800 \ud800\u0041 \udc00\ud800 \u00e9\n\t\/\\\"\b\f\r"}],"x\"y":[]}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"metadata":{"a":"b","a":"c"},"metadata":{},"extra":{"a" : [ 1 , 2 ] },"n":null}`,
	" \t\r\n{ \"model\" : \"m\" , \"messages\" : [ { \"role\" : \"user\" , \"content\" : \"x\" } ] } \n",
	`{"model":"m","messages":[{"role":"user","content":"x"}],"x":[1,]}`,
	`{"model":"m","messages":[{"role":"user","content":"x"},]}`,
	`{"model":"m","messages":[{"role":"robot","content":"x"}],"x":01}`,
	`{"model":"m","messages":[{"role":"user","content":"\x"}]}`,
	"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}",
	`{"model":"m","messages":[{"role":"user","content":"x"}]}{}`,
	`[{"model":"m"}]`, `"x"`, `1`, `nul`, `{`, `{"a":-}`, `{"a":1.}`, `{"a":1e}`, `{"a":.5}`, `{"a":tru}`,
}

// FuzzParseRequestOracle is the request parser's differential oracle: encoding/json. Both
// judge the body's JSON alike (ParseRequest also rejects a body that is not UTF-8 or has
// repeated or case-variant member names, which encoding/json would read last-wins and
// case-insensitively), and what ParseRequest accepts, encoding/json reads the same:
// oracleCheck compares every field both read.
func FuzzParseRequestOracle(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	for _, s := range quirkSeeds {
		f.Add([]byte(s))
	}
	f.Add(benchRequest(f))
	f.Fuzz(func(t *testing.T, body []byte) {
		oracleCheck(t, body)
	})
}

// TestParseRequest_Quirks runs the quirk seeds through the oracle (the fuzz target does
// too, but only with -fuzz or on its seed corpus).
func TestParseRequest_Quirks(t *testing.T) {
	for _, body := range quirkSeeds {
		t.Run(body, func(t *testing.T) { oracleCheck(t, []byte(body)) })
	}
}

// ambiguousKey reports whether err rejects a repeated or case-variant member name, or a
// body that is not UTF-8: inputs encoding/json reads differently.
func ambiguousKey(err error) bool {
	var pe *translate.ParamError
	return errors.As(err, &pe) && (pe.Code == CodeDuplicateKey || pe.Code == CodeKeyCase || pe.Code == CodeInvalidUTF8)
}

// oracleCheck parses body with ParseRequest and with encoding/json and compares them.
func oracleCheck(t *testing.T, body []byte) {
	t.Helper()
	req, err := ParseRequest(body)
	if ambiguousKey(err) {
		return
	}
	if !json.Valid(body) {
		var pe *translate.ParamError
		if err == nil || !errors.As(err, &pe) || !strings.Contains(pe.Message, "not valid JSON") && !strings.Contains(pe.Message, "empty") {
			t.Fatalf("encoding/json rejects %q; ParseRequest: %v", body, err)
		}
		return
	}
	if err != nil {
		return // a field error: the oracle knows no OpenAI rules
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("encoding/json cannot decode an accepted request: %v", err)
	}
	got := oracleView(req)
	if diff := cmp.Diff(oracleRead(m), got); diff != "" {
		t.Fatalf("request (-encoding/json +ParseRequest):\n%s\nbody %q", diff, body)
	}
}

// oracleRequest is what the oracle compares of a request.
type oracleRequest struct {
	Model                 string
	Stream, IncludeUsage  bool
	MaxTokens, N          int
	Temperature, TopP     *float64
	User, ReasoningEffort string
	Messages              []oracleMessage
	Tools                 []string // name: description
}

type oracleMessage struct {
	Role, Name, ToolCallID, Text string
	ToolCalls                    []string // id name arguments
}

func oracleView(r *translate.Request) oracleRequest {
	o := oracleRequest{Model: r.Model, Stream: r.Stream, IncludeUsage: r.IncludeUsage, MaxTokens: r.MaxTokens,
		N: r.N, Temperature: r.Temperature, TopP: r.TopP, User: r.User, ReasoningEffort: r.ReasoningEffort}
	for _, m := range r.Messages {
		om := oracleMessage{Role: m.Role, Name: m.Name, ToolCallID: m.ToolCallID, Text: m.Text()}
		for _, tc := range m.ToolCalls {
			om.ToolCalls = append(om.ToolCalls, tc.ID+" "+tc.Name+" "+tc.Arguments)
		}
		o.Messages = append(o.Messages, om)
	}
	for _, tl := range r.Tools {
		o.Tools = append(o.Tools, tl.Name+": "+tl.Description)
	}
	return o
}

// oracleRead reads an accepted request as encoding/json decoded it, by the documented
// OpenAI shapes: max_completion_tokens outranks max_tokens; content is a string or an
// array of parts whose text parts make the text; null means absent.
func oracleRead(m map[string]any) oracleRequest {
	str := func(v any) string { s, _ := v.(string); return s }
	num := func(v any) *float64 {
		n, ok := v.(json.Number)
		if !ok {
			return nil
		}
		f, _ := n.Float64()
		return &f
	}
	integer := func(v any) int {
		if f := num(v); f != nil {
			return int(*f)
		}
		return 0
	}
	o := oracleRequest{Model: str(m["model"]), Stream: m["stream"] == true, N: integer(m["n"]),
		Temperature: num(m["temperature"]), TopP: num(m["top_p"]), User: str(m["user"]), ReasoningEffort: str(m["reasoning_effort"])}
	if so, ok := m["stream_options"].(map[string]any); ok {
		o.IncludeUsage = so["include_usage"] == true
	}
	o.MaxTokens = integer(m["max_tokens"])
	if n := integer(m["max_completion_tokens"]); n != 0 {
		o.MaxTokens = n
	}
	msgs, _ := m["messages"].([]any)
	for _, v := range msgs {
		msg, _ := v.(map[string]any)
		om := oracleMessage{Role: str(msg["role"]), Name: str(msg["name"]), ToolCallID: str(msg["tool_call_id"])}
		switch c := msg["content"].(type) {
		case string:
			om.Text = c
		case []any:
			for _, p := range c {
				if part, _ := p.(map[string]any); part["type"] == "text" {
					om.Text += str(part["text"])
				}
			}
		}
		calls, _ := msg["tool_calls"].([]any)
		for _, c := range calls {
			call, _ := c.(map[string]any)
			fn, _ := call["function"].(map[string]any)
			om.ToolCalls = append(om.ToolCalls, str(call["id"])+" "+str(fn["name"])+" "+str(fn["arguments"]))
		}
		o.Messages = append(o.Messages, om)
	}
	tools, _ := m["tools"].([]any)
	for _, v := range tools {
		tl, _ := v.(map[string]any)
		fn, _ := tl["function"].(map[string]any)
		o.Tools = append(o.Tools, str(fn["name"])+": "+str(fn["description"]))
	}
	return o
}

// TestParseRequest_SeedSaturates pins the allowed difference from gjson: seeds beyond
// int64 saturate instead of wrapping.
func TestParseRequest_SeedSaturates(t *testing.T) {
	for _, tt := range []struct {
		name string
		seed string
		want int64
	}{
		{name: "exact above 2^53", seed: "9007199254740993", want: 9007199254740993},
		{name: "max int64", seed: "9223372036854775807", want: math.MaxInt64},
		{name: "wrapped by gjson", seed: "25000000000000000000", want: math.MaxInt64},
		{name: "negative", seed: "-25000000000000000000", want: math.MinInt64},
		{name: "exponent", seed: "1e300", want: math.MaxInt64},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, err := ParseRequest([]byte(`{"model":"m","seed":` + tt.seed + `,"messages":[{"role":"user","content":"x"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			if *req.Seed != tt.want {
				t.Errorf("seed = %d, want %d", *req.Seed, tt.want)
			}
		})
	}
}

// BenchmarkParseRequest parses a ~4 KB request with tools and tool-call history.
func BenchmarkParseRequest(b *testing.B) {
	benchmarkParse(b, ParseRequest)
}

func benchmarkParse(b *testing.B, parse func([]byte) (*translate.Request, error)) {
	body := benchRequest(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := parse(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidJSON is the JSON scanner (jsonx.Valid) alone over the ParseRequest benchmark body.
func BenchmarkValidJSON(b *testing.B) {
	body := string(benchRequest(b))
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if !jsonx.Valid(body) {
			b.Fatal("invalid")
		}
	}
}

// benchRequest is testdata/bench-request.json, the ~4 KB chat request (tools, a tool-call
// history with carried Gemini signatures) the parse and Gemini benchmarks read; the gemini
// package's tests check that it is what they build.
func benchRequest(tb testing.TB) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "bench-request.json"))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkParseRequest10K parses testdata/history-10k.json, the ~10 KB request of the
// end-to-end benchmark's scenario d (tools, parallel tool calls, JSON tool results).
func BenchmarkParseRequest10K(b *testing.B) {
	body, err := os.ReadFile("testdata/history-10k.json")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := ParseRequest(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseRequestSmall parses the end-to-end benchmark's ~230-byte request (scenarios
// a and b: a system and a user message, max_tokens, temperature) as the server does: lazily,
// into a Scratch, with a Stage.
func BenchmarkParseRequestSmall(b *testing.B) {
	body := `{"max_tokens":1024,"messages":[{"role":"system","content":"You are a helpful assistant. Answer concisely and accurately."},{"role":"user","content":"Write a short paragraph about the history of the bicycle."}],"model":"claude-bench","temperature":0.7}`
	var sc Scratch
	var st Stage
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := ParseRequestLazyString(body, &sc, &st); err != nil {
			b.Fatal(err)
		}
		sc.Reset()
		st.Reset()
	}
}

// TestParseRequest_ScratchSamplingParams: a request parsed into a Scratch keeps its
// sampling parameters in the scratch, so a typical request allocates nothing, and the
// next request parsed into it sees none of them unless it sends them.
func TestParseRequest_ScratchSamplingParams(t *testing.T) {
	var sc Scratch
	var st Stage
	withAll := `{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":0.7,"top_p":0.9,"presence_penalty":-1.5,"frequency_penalty":2}`
	r, err := ParseRequestLazyString(withAll, &sc, &st)
	if err != nil {
		t.Fatal(err)
	}
	got := []*float64{r.Temperature, r.TopP, r.PresencePenalty, r.FrequencyPenalty}
	for i, want := range []float64{0.7, 0.9, -1.5, 2} {
		if got[i] == nil || *got[i] != want {
			t.Fatalf("parameter %d: got %v, want %v", i, got[i], want)
		}
	}
	sc.Reset()
	st.Reset()
	r, err = ParseRequestLazyString(`{"model":"m","messages":[{"role":"user","content":"hi"}],"top_p":1}`, &sc, &st)
	if err != nil {
		t.Fatal(err)
	}
	if r.Temperature != nil || r.PresencePenalty != nil || r.FrequencyPenalty != nil || r.TopP == nil || *r.TopP != 1 {
		t.Errorf("second request: temperature %v, top_p %v, presence %v, frequency %v; want only top_p 1",
			r.Temperature, r.TopP, r.PresencePenalty, r.FrequencyPenalty)
	}
	allocs := testing.AllocsPerRun(100, func() {
		sc.Reset()
		st.Reset()
		if _, err := ParseRequestLazyString(withAll, &sc, &st); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("a parse into a warm Scratch allocated %v times, want 0", allocs)
	}
	// Without a Stage the parser lives on the stack: escape analysis must not move it to
	// the heap (a pointer into it stored beside values the parse keeps did, #55).
	allocs = testing.AllocsPerRun(100, func() {
		sc.Reset()
		if _, err := ParseRequestLazyString(withAll, &sc, nil); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("a parse into a warm Scratch without a Stage allocated %v times, want 0 (the parser moved to the heap?)", allocs)
	}
	fresh, err := ParseRequestLazyString(withAll, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Temperature == nil || *fresh.Temperature != 0.7 || fresh.Temperature == r.Temperature {
		t.Errorf("a parse without a scratch: temperature %v", fresh.Temperature)
	}
}

// TestParseRequest_ParametersTyped: a tool's ParametersTyped says whether its parameters
// object has a member named type at its top, its name read decoded; a type only inside
// a property, or parameters that are not an object, leave it clear.
func TestParseRequest_ParametersTyped(t *testing.T) {
	for _, c := range []struct {
		params string
		want   bool
	}{
		{`{"type":"object","properties":{}}`, true},
		{`{"properties":{"type":{"type":"string"}},"required":["type"],"type":"object"}`, true},
		{`{"properties":{"type":{"type":"string"}},"required":["type"]}`, false},
		{` { "properties" : {} , "typ\u0065" : "object" } `, true},
		{`{"a":"type"}`, false},
		{`{}`, false},
		{`null`, false},
	} {
		body := `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":` + c.params + `}}]}`
		req, err := ParseRequest([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", c.params, err)
		}
		if got := req.Tools[0].ParametersTyped; got != c.want {
			t.Errorf("%s: ParametersTyped %v, want %v", c.params, got, c.want)
		}
		if c.params != "null" && req.Tools[0].Parameters != strings.TrimSpace(c.params) {
			t.Errorf("%s: Parameters %q", c.params, req.Tools[0].Parameters)
		}
	}
}
