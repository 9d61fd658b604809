package translate

import (
	"errors"
	"github.com/agate-gateway/agate/internal/jsonx"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
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

// fuzzSeeds are request bodies recorded from the real APIs: the repository's
// testdata/fixtures and the copies the proxy tests keep. Each pattern must match.
func fuzzSeeds(f *testing.F) [][]byte {
	var out [][]byte
	for _, pattern := range []string{
		"../testdata/fixtures/*/*/*.request.json",
		"../proxy/testdata/openai-chat/*/*.request.json",
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

// quirkSeeds are requests that pin how gjson read odd shapes: duplicate keys, escaped keys
// and strings, surrogates, and values of unexpected kinds in nested objects.
var quirkSeeds = []string{
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

// FuzzParseRequestMatchesGJSON: ParseRequest agrees with parseRequestGJSON, the gjson-based
// parser it replaced, on every input: both accept or both reject; accepted requests are
// equal, and rejections blame the same param with the same message. The differences
// allowed: ParseRequest rejects repeated and case-variant member names, which gjson read
// first-wins (ambiguousKey), and the seed range in allowedDifference.
func FuzzParseRequestMatchesGJSON(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	for _, s := range quirkSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(geminiBenchRequest(f)))
	f.Fuzz(func(t *testing.T, body []byte) {
		got, gotErr := ParseRequest(body)
		want, wantErr := parseRequestGJSON(body)
		if ambiguousKey(gotErr) {
			return
		}
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("ParseRequest error %v, gjson error %v, body %q", gotErr, wantErr, body)
		}
		if gotErr != nil {
			if diff := cmp.Diff(wantErr, gotErr); diff != "" {
				t.Fatalf("error (-gjson +ParseRequest):\n%s\nbody %q", diff, body)
			}
			return
		}
		if allowedDifference(want, got) {
			want.Seed = got.Seed
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("request (-gjson +ParseRequest):\n%s\nbody %q", diff, body)
		}
	})
}

// ambiguousKey reports whether err rejects a repeated or case-variant member name, or a
// body that is not UTF-8 (which gjson did not check).
func ambiguousKey(err error) bool {
	var pe *ParamError
	return errors.As(err, &pe) && (pe.Code == CodeDuplicateKey || pe.Code == CodeKeyCase || pe.Code == CodeInvalidUTF8)
}

// allowedDifference reports the one place ParseRequest deliberately differs: a seed beyond
// the int64 range written as plain digits saturates, where gjson's overflow check could
// miss and wrap (25000000000000000000 became 6553255926290448384).
func allowedDifference(want, got *Request) bool {
	return want.Seed != nil && got.Seed != nil && *want.Seed != *got.Seed &&
		(*got.Seed == math.MaxInt64 || *got.Seed == math.MinInt64)
}

// TestParseRequest_Quirks runs the quirk seeds through both parsers (the fuzz target does
// too, but only with -fuzz or on its seed corpus). Seeds with repeated keys are rejected
// now (TestParseRequest_AmbiguousKeys); they stay as fuzz seeds.
func TestParseRequest_Quirks(t *testing.T) {
	for _, body := range quirkSeeds {
		got, gotErr := ParseRequest([]byte(body))
		want, wantErr := parseRequestGJSON([]byte(body))
		if ambiguousKey(gotErr) {
			continue
		}
		if diff := cmp.Diff(wantErr, gotErr); diff != "" {
			t.Errorf("%s: error (-gjson +ParseRequest):\n%s", body, diff)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: request (-gjson +ParseRequest):\n%s", body, diff)
		}
	}
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

// BenchmarkParseRequestGJSON is BenchmarkParseRequest for the gjson-based reference, to
// compare the two on the same machine at the same time.
func BenchmarkParseRequestGJSON(b *testing.B) {
	benchmarkParse(b, parseRequestGJSON)
}

func benchmarkParse(b *testing.B, parse func([]byte) (*Request, error)) {
	body := []byte(geminiBenchRequest(b))
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := parse(body); err != nil {
			b.Fatal(err)
		}
	}
}

// parseRequestGJSON is ParseRequest as it was before the single-pass scanner: gjson.Valid,
// then nested ForEach and Get calls. It is kept, unchanged but for names, as the reference
// FuzzParseRequestMatchesGJSON compares ParseRequest with.
func parseRequestGJSON(body []byte) (*Request, error) {
	if len(body) == 0 {
		return nil, &ParamError{Message: "the request body is empty: send a JSON object with model and messages"}
	}
	s := string(body)
	if !gjson.Valid(s) {
		return nil, &ParamError{Message: "we could not parse the JSON body of your request: it is not valid JSON"}
	}
	root := gjson.Parse(s)
	if !root.IsObject() {
		return nil, &ParamError{Message: "the request body must be a JSON object"}
	}
	p := gjsonParser{req: &Request{Body: s}}
	root.ForEach(p.field)
	if p.err != nil {
		return nil, p.err
	}
	if err := p.req.check(); err != nil {
		return nil, err
	}
	return p.req, nil
}

type gjsonParser struct {
	req     *Request
	err     *ParamError
	sawMsgs bool
	sawOpts bool
}

func (p *gjsonParser) fail(param, format string, args ...any) bool {
	p.err = Errorf(param, format, args...)
	return false
}

func (p *gjsonParser) field(k, v gjson.Result) bool {
	r := p.req
	name := k.Str
	if v.Type == gjson.Null {
		// OpenAI treats an explicit null as "not set" for optional fields.
		switch name {
		case "model", "messages":
			return p.fail(name, "%s is required", name)
		}
		return true
	}
	switch name {
	case "model":
		if v.Type != gjson.String {
			return p.fail("model", "must be a string")
		}
		r.Model = v.Str
	case "messages":
		if !v.IsArray() {
			return p.fail("messages", "must be an array of messages")
		}
		p.sawMsgs = true
		i := 0
		v.ForEach(func(_, m gjson.Result) bool {
			if !p.message(i, m) {
				return false
			}
			i++
			return true
		})
	case "stream":
		if !gjsonIsBool(v) {
			return p.fail("stream", "must be a boolean")
		}
		r.Stream = v.Bool()
	case "stream_options":
		if !v.IsObject() {
			return p.fail("stream_options", "must be an object")
		}
		p.sawOpts = true
		if iu := v.Get("include_usage"); iu.Exists() && iu.Type != gjson.Null {
			if !gjsonIsBool(iu) {
				return p.fail("stream_options.include_usage", "must be a boolean")
			}
			r.IncludeUsage = iu.Bool()
		}
	case "tools":
		if !v.IsArray() {
			return p.fail("tools", "must be an array")
		}
		i := 0
		v.ForEach(func(_, t gjson.Result) bool {
			if !p.tool(i, t) {
				return false
			}
			i++
			return true
		})
	case "tool_choice":
		return p.toolChoice(v)
	case "parallel_tool_calls":
		if !gjsonIsBool(v) {
			return p.fail(name, "must be a boolean")
		}
		b := v.Bool()
		r.ParallelToolCalls = &b
	case "max_tokens", "max_completion_tokens":
		n, ok := gjsonPositiveInt(v)
		if !ok {
			return p.fail(name, "must be an integer of at least 1")
		}
		if name == "max_completion_tokens" || r.MaxTokens == 0 {
			r.MaxTokens, r.MaxTokensParam = n, name
		}
	case "temperature":
		return p.float(name, v, 0, 2, &r.Temperature)
	case "top_p":
		return p.float(name, v, 0, 1, &r.TopP)
	case "presence_penalty":
		return p.float(name, v, -2, 2, &r.PresencePenalty)
	case "frequency_penalty":
		return p.float(name, v, -2, 2, &r.FrequencyPenalty)
	case "stop":
		switch {
		case v.Type == gjson.String:
			r.Stop = []string{v.Str}
		case v.IsArray():
			ok := true
			v.ForEach(func(_, s gjson.Result) bool {
				if s.Type != gjson.String {
					ok = false
					return false
				}
				r.Stop = append(r.Stop, s.Str)
				return true
			})
			if !ok {
				return p.fail("stop", "must be a string or an array of strings")
			}
		default:
			return p.fail("stop", "must be a string or an array of strings")
		}
	case "n":
		n, ok := gjsonPositiveInt(v)
		if !ok {
			return p.fail("n", "must be an integer of at least 1")
		}
		r.N = n
	case "seed":
		if v.Type != gjson.Number || v.Num != math.Trunc(v.Num) {
			return p.fail("seed", "must be an integer")
		}
		s := v.Int()
		r.Seed = &s
	case "logprobs":
		if !gjsonIsBool(v) {
			return p.fail(name, "must be a boolean")
		}
		r.Logprobs = v.Bool()
	case "top_logprobs":
		if v.Type != gjson.Number || v.Num != math.Trunc(v.Num) || v.Num < 0 || v.Num > 20 {
			return p.fail(name, "must be an integer from 0 to 20")
		}
		n := int(v.Num)
		r.TopLogprobs = &n
	case "response_format":
		return p.responseFormat(v)
	case "reasoning_effort":
		switch v.Str {
		case "none", "minimal", "low", "medium", "high", "xhigh":
			if v.Type == gjson.String {
				r.ReasoningEffort = v.Str
				return true
			}
		}
		return p.fail(name, "must be one of none, minimal, low, medium, high, xhigh")
	case "user":
		if v.Type != gjson.String {
			return p.fail(name, "must be a string")
		}
		r.User = v.Str
	case "metadata":
		if !v.IsObject() {
			return p.fail(name, "must be an object of string values")
		}
		ok := true
		v.ForEach(func(_, mv gjson.Result) bool {
			ok = mv.Type == gjson.String
			return ok
		})
		if !ok {
			return p.fail(name, "must be an object of string values")
		}
		r.Metadata = v.Raw
	default:
		r.Extra = append(r.Extra, Field{Name: name, Raw: v.Raw})
	}
	return true
}

func (p *gjsonParser) message(i int, m gjson.Result) bool {
	if !m.IsObject() {
		return p.fail(idx("messages", i), "each message must be an object")
	}
	var msg Message
	var role, content gjson.Result
	ok := true
	m.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "role":
			role = v
		case "content":
			content = v
		}
		if v.Type == gjson.Null {
			return true
		}
		switch k.Str {
		case "name":
			if v.Type != gjson.String {
				ok = p.fail(idx("messages", i)+".name", "must be a string")
			}
			msg.Name = v.Str
		case "tool_call_id":
			if v.Type != gjson.String {
				ok = p.fail(idx("messages", i)+".tool_call_id", "must be a string")
			}
			msg.ToolCallID = v.Str
		case "tool_calls":
			ok = p.toolCalls(i, &msg, v)
		case "reasoning_content":
			if v.Type == gjson.String {
				msg.Reasoning = v.Str
			}
		case "thinking_blocks":
			v.ForEach(func(_, b gjson.Result) bool {
				msg.ThinkingBlocks = append(msg.ThinkingBlocks, ThinkingBlock{
					Type: b.Get("type").Str, Thinking: b.Get("thinking").Str,
					Signature: b.Get("signature").Str, Data: b.Get("data").Str,
				})
				return true
			})
		case "refusal":
			if v.Type == gjson.String {
				msg.Refusal = v.Str
			}
		}
		return ok
	})
	if !ok {
		return false
	}
	if role.Type != gjson.String {
		return p.fail(idx("messages", i)+".role", "role is required and must be a string")
	}
	switch role.Str {
	case RoleSystem, RoleDeveloper, RoleUser, RoleAssistant, RoleTool:
		msg.Role = role.Str
	default:
		return p.fail(idx("messages", i)+".role", "unknown role %q: use system, developer, user, assistant or tool", role.Str)
	}
	if len(msg.ToolCalls) > 0 && msg.Role != RoleAssistant {
		return p.fail(idx("messages", i)+".tool_calls", "only assistant messages may carry tool_calls")
	}
	if content.Exists() && content.Type != gjson.Null && !p.content(i, &msg, content) {
		return false
	}
	switch msg.Role {
	case RoleTool:
		if msg.ToolCallID == "" {
			return p.fail(idx("messages", i)+".tool_call_id", "tool messages need tool_call_id")
		}
	case RoleAssistant:
		if !content.Exists() && len(msg.ToolCalls) == 0 && msg.Refusal == "" {
			return p.fail(idx("messages", i)+".content", "assistant messages need content or tool_calls")
		}
	default:
		if !content.Exists() || content.Type == gjson.Null {
			return p.fail(idx("messages", i)+".content", "%s messages need content", msg.Role)
		}
	}
	p.req.Messages = append(p.req.Messages, msg)
	return true
}

func (p *gjsonParser) content(i int, msg *Message, v gjson.Result) bool {
	if v.Type == gjson.String {
		msg.Content = []Part{{Type: PartText, Text: v.Str}}
		return true
	}
	if !v.IsArray() {
		return p.fail(idx("messages", i)+".content", "must be a string or an array of content parts")
	}
	j := 0
	ok := true
	v.ForEach(func(_, c gjson.Result) bool {
		pj := j
		param := func() string { return idx(idx("messages", i)+".content", pj) }
		j++
		if !c.IsObject() {
			ok = p.fail(param(), "each content part must be an object")
			return false
		}
		t := c.Get("type").Str
		var part Part
		switch t {
		case "text":
			tx := c.Get("text")
			if tx.Type != gjson.String {
				ok = p.fail(param()+".text", "text parts need a string text")
				return false
			}
			part = Part{Type: PartText, Text: tx.Str}
		case "image_url":
			u := c.Get("image_url")
			url := u.Get("url")
			if u.Type == gjson.String { // a lenient shape some clients send
				url = u
			}
			if url.Type != gjson.String || url.Str == "" {
				ok = p.fail(param()+".image_url.url", "image_url parts need image_url.url")
				return false
			}
			part = Part{Type: PartImage, URL: url.Str, Detail: u.Get("detail").Str}
		case "file":
			f := c.Get("file")
			part = Part{Type: PartFile, FileData: f.Get("file_data").Str, FileID: f.Get("file_id").Str, Filename: f.Get("filename").Str}
			if part.FileData == "" && part.FileID == "" {
				ok = p.fail(param()+".file", "file parts need file.file_data or file.file_id")
				return false
			}
		case "input_audio":
			a := c.Get("input_audio")
			part = Part{Type: PartAudio, AudioData: a.Get("data").Str, AudioFormat: a.Get("format").Str}
			if part.AudioData == "" {
				ok = p.fail(param()+".input_audio.data", "input_audio parts need input_audio.data")
				return false
			}
		case "refusal":
			if msg.Role != RoleAssistant {
				ok = p.fail(param()+".type", "refusal parts are only allowed in assistant messages")
				return false
			}
			part = Part{Type: PartRefusal, Text: c.Get("refusal").Str}
		default:
			ok = p.fail(param()+".type", "unknown content part type %q", t)
			return false
		}
		if part.Type != PartText && part.Type != PartRefusal && msg.Role != RoleUser {
			ok = p.fail(param()+".type", "%s parts are only allowed in user messages", t)
			return false
		}
		msg.Content = append(msg.Content, part)
		return true
	})
	return ok
}

func (p *gjsonParser) toolCalls(i int, msg *Message, v gjson.Result) bool {
	base := func() string { return idx("messages", i) + ".tool_calls" }
	if !v.IsArray() {
		return p.fail(base(), "must be an array")
	}
	j := 0
	ok := true
	v.ForEach(func(_, c gjson.Result) bool {
		pj := j
		param := func() string { return idx(base(), pj) }
		j++
		var id, typ, name, args gjson.Result
		c.ForEach(func(k, f gjson.Result) bool {
			switch k.Str {
			case "id":
				id = f
			case "type":
				typ = f
			case "function":
				f.ForEach(func(fk, fv gjson.Result) bool {
					switch fk.Str {
					case "name":
						name = fv
					case "arguments":
						args = fv
					}
					return true
				})
			}
			return true
		})
		if id.Type != gjson.String || id.Str == "" {
			ok = p.fail(param()+".id", "tool calls need a string id")
			return false
		}
		if typ.Exists() && typ.Str != "function" {
			ok = p.fail(param()+".type", "only function tool calls are supported")
			return false
		}
		if name.Type != gjson.String || name.Str == "" {
			ok = p.fail(param()+".function.name", "tool calls need function.name")
			return false
		}
		if args.Exists() && args.Type != gjson.String && args.Type != gjson.Null {
			ok = p.fail(param()+".function.arguments", "must be a string of JSON")
			return false
		}
		msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: id.Str, Name: name.Str, Arguments: args.Str})
		return true
	})
	return ok
}

func (p *gjsonParser) tool(i int, t gjson.Result) bool {
	param := idx("tools", i)
	if !t.IsObject() {
		return p.fail(param, "each tool must be an object")
	}
	if typ := t.Get("type").Str; typ != "function" {
		return p.fail(param+".type", "only function tools are supported, got %q", typ)
	}
	fn := t.Get("function")
	name := fn.Get("name")
	if name.Type != gjson.String || !validToolName(name.Str) {
		return p.fail(param+".function.name", "function names must be 1 to 64 characters of a-z, A-Z, 0-9, _ and -")
	}
	tool := Tool{Name: name.Str, Description: fn.Get("description").Str}
	if ps := fn.Get("parameters"); ps.Exists() && ps.Type != gjson.Null {
		if !ps.IsObject() {
			return p.fail(param+".function.parameters", "must be a JSON Schema object")
		}
		tool.Parameters = ps.Raw
	}
	if st := fn.Get("strict"); gjsonIsBool(st) {
		b := st.Bool()
		tool.Strict = &b
	}
	for k := range p.req.Tools {
		if p.req.Tools[k].Name == tool.Name {
			return p.fail(param+".function.name", "duplicate function name %q", tool.Name)
		}
	}
	p.req.Tools = append(p.req.Tools, tool)
	return true
}

func (p *gjsonParser) toolChoice(v gjson.Result) bool {
	r := p.req
	if v.Type == gjson.String {
		switch v.Str {
		case ToolChoiceAuto, ToolChoiceNone, ToolChoiceRequired:
			r.ToolChoice.Mode = v.Str
			return true
		}
		return p.fail("tool_choice", "must be auto, none, required or a named function")
	}
	if !v.IsObject() || v.Get("type").Str != "function" {
		return p.fail("tool_choice", "must be auto, none, required or {\"type\":\"function\",\"function\":{\"name\":...}}")
	}
	name := v.Get("function.name")
	if name.Type != gjson.String || name.Str == "" {
		return p.fail("tool_choice.function.name", "a named tool_choice needs function.name")
	}
	r.ToolChoice = ToolChoice{Mode: ToolChoiceFunction, Name: name.Str}
	return true
}

func (p *gjsonParser) responseFormat(v gjson.Result) bool {
	if !v.IsObject() {
		return p.fail("response_format", "must be an object")
	}
	rf := &p.req.ResponseFormat
	switch t := v.Get("type").Str; t {
	case FormatText, FormatJSONObject:
		rf.Type = t
	case FormatJSONSchema:
		js := v.Get("json_schema")
		if !js.IsObject() {
			return p.fail("response_format.json_schema", "json_schema formats need a json_schema object")
		}
		name := js.Get("name")
		if name.Type != gjson.String || name.Str == "" {
			return p.fail("response_format.json_schema.name", "json_schema.name is required")
		}
		schema := js.Get("schema")
		if schema.Exists() && !schema.IsObject() {
			return p.fail("response_format.json_schema.schema", "must be a JSON Schema object")
		}
		rf.Type, rf.Name, rf.Description, rf.Schema = t, name.Str, js.Get("description").Str, schema.Raw
		if st := js.Get("strict"); gjsonIsBool(st) {
			b := st.Bool()
			rf.Strict = &b
		}
	default:
		return p.fail("response_format.type", "must be text, json_object or json_schema")
	}
	return true
}

func (p *gjsonParser) float(name string, v gjson.Result, lo, hi float64, dst **float64) bool {
	if v.Type != gjson.Number {
		return p.fail(name, "must be a number")
	}
	if v.Num < lo || v.Num > hi {
		return p.fail(name, "must be between %g and %g", lo, hi)
	}
	f := v.Num
	*dst = &f
	return true
}

func gjsonIsBool(v gjson.Result) bool { return v.Type == gjson.True || v.Type == gjson.False }

func gjsonPositiveInt(v gjson.Result) (int, bool) {
	if v.Type != gjson.Number || v.Num != math.Trunc(v.Num) || v.Num < 1 || v.Num > math.MaxInt32 {
		return 0, false
	}
	return int(v.Num), true
}

// BenchmarkValidJSON is the JSON scanner (jsonx.Valid) alone over the ParseRequest benchmark body.
func BenchmarkValidJSON(b *testing.B) {
	body := geminiBenchRequest(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if !jsonx.Valid(body) {
			b.Fatal("invalid")
		}
	}
}
