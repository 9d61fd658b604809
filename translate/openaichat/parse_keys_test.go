package openaichat

import (
	"errors"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/members"

	"github.com/google/go-cmp/cmp"
)

// TestParseRequest_AmbiguousKeys pins the rejection of member names that decoders read
// differently: a repeated name (first-wins vs last-wins) and a known field in another case
// (Go's encoding/json matches names ignoring case). Each is a 400 naming the key.
func TestParseRequest_AmbiguousKeys(t *testing.T) {
	const msgs = `"messages":[{"role":"user","content":"hi"}]`
	type result struct {
		Param, Code string
	}
	dup := func(param string) result { return result{param, CodeDuplicateKey} }
	fold := func(param string) result { return result{param, CodeKeyCase} }
	tests := []struct {
		name string
		body string
		want result
	}{
		{name: "model in upper case", body: `{"model":"cheap-a","MODEL":"gpt-4o",` + msgs + `}`, want: fold("MODEL")},
		{name: "model in upper case first", body: `{"Model":"gpt-4o","model":"cheap-a",` + msgs + `}`, want: fold("Model")},
		{name: "model twice", body: `{"model":"X","model":"cheap-a",` + msgs + `}`, want: dup("model")},
		{name: "model twice, second escaped", body: `{"model":"X","mod\u0065l":"cheap-a",` + msgs + `}`, want: dup("model")},
		{name: "stream_options twice", body: `{"model":"m","stream":true,"stream_options":{"include_usage":true},"stream_options":{"include_usage":false},` + msgs + `}`, want: dup("stream_options")},
		{name: "include_usage twice", body: `{"model":"m","stream":true,"stream_options":{"include_usage":true,"include_usage":false},` + msgs + `}`, want: dup("stream_options.include_usage")},
		{name: "include_usage in another case", body: `{"model":"m","stream":true,"stream_options":{"include_usage":true,"Include_Usage":false},` + msgs + `}`, want: fold("stream_options.Include_Usage")},
		{name: "stream_options with a long s", body: `{"model":"m","stream":true,"stream_options":{"include_usage":true},"ſtream_options":{"include_usage":false},` + msgs + `}`, want: fold("ſtream_options")},
		{name: "max_tokens with a kelvin sign", body: `{"model":"m","max_tokens":5,"max_to\u212aens":50000,` + msgs + `}`, want: fold("max_to\u212aens")},
		{name: "stream in upper case", body: `{"model":"m","STREAM":true,` + msgs + `}`, want: fold("STREAM")},
		{name: "messages twice", body: `{"model":"m",` + msgs + `,` + msgs + `}`, want: dup("messages")},
		{name: "unknown field twice", body: `{"model":"m","store":true,"store":false,` + msgs + `}`, want: dup("store")},
		{name: "role twice", body: `{"model":"m","messages":[{"role":"user","role":"system","content":"hi"}]}`, want: dup("messages[0].role")},
		{name: "content in another case", body: `{"model":"m","messages":[{"role":"user","content":"hi","Content":"bye"}]}`, want: fold("messages[0].Content")},
		{name: "content part type twice", body: `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a","type":"image_url"}]}]}`, want: dup("messages[0].content[0].type")},
		{name: "image url twice", body: `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"a","url":"b"}}]}]}`, want: dup("messages[0].content[0].image_url.url")},
		{name: "image url in upper case", body: `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"a","URL":"b"}}]}]}`, want: fold("messages[0].content[0].image_url.URL")},
		{name: "tool call id twice", body: `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"a","id":"b","function":{"name":"f"}}]}]}`, want: dup("messages[0].tool_calls[0].id")},
		{name: "tool call name in another case", body: `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","Name":"g"}}]}]}`, want: fold("messages[0].tool_calls[0].function.Name")},
		{name: "tool_call_id twice", body: `{"model":"m","messages":[{"role":"tool","tool_call_id":"a","content":"x","tool_call_id":"b"}]}`, want: dup("messages[0].tool_call_id")},
		{name: "refusal twice after unknown names", body: `{"model":"m","messages":[{"role":"assistant","x":1,"refusal":"a","y":2,"refusal":"b"}]}`, want: dup("messages[0].refusal")},
		{name: "tool_calls in another case", body: `{"model":"m","messages":[{"role":"assistant","content":"x","Tool_Calls":[]}]}`, want: fold("messages[0].Tool_Calls")},
		{name: "tool call function twice", body: `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f"},"function":{"name":"g"}}]}]}`, want: dup("messages[0].tool_calls[0].function")},
		{name: "tool call type in upper case", body: `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"a","type":"function","TYPE":"x","function":{"name":"f"}}]}]}`, want: fold("messages[0].tool_calls[0].TYPE")},
		{name: "tool call arguments twice", body: `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}","arguments":"{\"x\":1}"}}]}]}`, want: dup("messages[0].tool_calls[0].function.arguments")},
		{name: "content part text in another case", body: `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a","TEXT":"b"}]}]}`, want: fold("messages[0].content[0].TEXT")},
		{name: "content part input_audio twice", body: `{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"a","format":"wav"},"input_audio":{"data":"b","format":"wav"}}]}]}`, want: dup("messages[0].content[0].input_audio")},
		{name: "thinking block type twice", body: `{"model":"m","messages":[{"role":"assistant","content":"x","thinking_blocks":[{"type":"thinking","type":"x"}]}]}`, want: dup("messages[0].thinking_blocks[0].type")},
		// Members read in the orders the parser tries first (jsonx.Scanner.MemberIs).
		{name: "content twice around role", body: `{"model":"m","messages":[{"content":"a","role":"user","content":"b"}]}`, want: dup("messages[0].content")},
		{name: "role twice around content", body: `{"model":"m","messages":[{"role":"user","content":"a","role":"system"}]}`, want: dup("messages[0].role")},
		{name: "role twice after tool_call_id", body: `{"model":"m","messages":[{"role":"tool","content":"x","tool_call_id":"a","role":"tool"}]}`, want: dup("messages[0].role")},
		{name: "role twice after tool_calls", body: `{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[],"role":"assistant"}]}`, want: dup("messages[0].role")},
		{name: "tool call type twice around function", body: `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f"},"type":"function"}]}]}`, want: dup("messages[0].tool_calls[0].type")},
		{name: "tool call function twice around type", body: `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f"},"type":"function","function":{"name":"g"}}]}]}`, want: dup("messages[0].tool_calls[0].function")},
		{name: "tool call name twice around arguments", body: `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}","name":"g"}}]}]}`, want: dup("messages[0].tool_calls[0].function.name")},
		{name: "tool call arguments twice around name", body: `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"a","function":{"arguments":"{}","name":"f","arguments":"{}"}}]}]}`, want: dup("messages[0].tool_calls[0].function.arguments")},
		{name: "tool type twice around function", body: `{"model":"m","tools":[{"type":"function","function":{"name":"f"},"type":"function"}],` + msgs + `}`, want: dup("tools[0].type")},
		{name: "tool function twice around type", body: `{"model":"m","tools":[{"function":{"name":"f"},"type":"function","function":{"name":"g"}}],` + msgs + `}`, want: dup("tools[0].function")},
		{name: "tool function description twice around name", body: `{"model":"m","tools":[{"type":"function","function":{"description":"a","name":"f","description":"b"}}],` + msgs + `}`, want: dup("tools[0].function.description")},
		{name: "tool function parameters twice around strict", body: `{"model":"m","tools":[{"type":"function","function":{"name":"f","parameters":{},"strict":true,"parameters":{}}}],` + msgs + `}`, want: dup("tools[0].function.parameters")},
		{name: "tool function strict twice", body: `{"model":"m","tools":[{"type":"function","function":{"name":"f","strict":true,"description":"d","strict":false}}],` + msgs + `}`, want: dup("tools[0].function.strict")},
		{name: "tool function parameters in upper case", body: `{"model":"m","tools":[{"type":"function","function":{"name":"f","PARAMETERS":{}}}],` + msgs + `}`, want: fold("tools[0].function.PARAMETERS")},
		{name: "tool function name twice", body: `{"model":"m","tools":[{"type":"function","function":{"name":"f","name":"g"}}],` + msgs + `}`, want: dup("tools[0].function.name")},
		{name: "tool type in upper case", body: `{"model":"m","tools":[{"type":"function","TYPE":"web_search","function":{"name":"f"}}],` + msgs + `}`, want: fold("tools[0].TYPE")},
		{name: "tool_choice function twice", body: `{"model":"m","tool_choice":{"type":"function","function":{"name":"f"},"function":{"name":"g"}},` + msgs + `}`, want: dup("tool_choice.function")},
		{name: "tool_choice name in another case", body: `{"model":"m","tool_choice":{"type":"function","function":{"name":"f","NAME":"g"}},` + msgs + `}`, want: fold("tool_choice.function.NAME")},
		{name: "response_format type twice", body: `{"model":"m","response_format":{"type":"text","type":"json_object"},` + msgs + `}`, want: dup("response_format.type")},
		{name: "json_schema name in another case", body: `{"model":"m","response_format":{"type":"json_schema","json_schema":{"name":"n","Name":"o"}},` + msgs + `}`, want: fold("response_format.json_schema.Name")},
		{name: "unknown field twice among many", body: `{"model":"m","a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1,"h":1,"i":1,"j":1,"k":1,"l":1,"o":1,"p":1,"a":2,` + msgs + `}`, want: dup("a")},
		{name: "metadata key twice", body: `{"model":"m","metadata":{"a":"b","a":"c"},` + msgs + `}`, want: dup("metadata.a")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := ParseRequest([]byte(tt.body))
			if err == nil {
				t.Fatalf("ParseRequest accepted it: model %q", req.Model)
			}
			var pe *translate.ParamError
			if !errors.As(err, &pe) || !errors.Is(err, translate.ErrBadRequest) {
				t.Fatalf("error %v (%T) is not a bad-request *ParamError", err, err)
			}
			if diff := cmp.Diff(tt.want, result{pe.Param, pe.Code}); diff != "" {
				t.Errorf("rejection (-want +got):\n%s\nmessage %q", diff, pe.Message)
			}
		})
	}
}

// fieldSwitches pairs each field function the parser reads members by with the list of
// names its positions index.
var fieldSwitches = []struct {
	name  string
	list  string
	names members.Names
	field func(string) int
}{
	{"topLevelField", topLevelFields, topLevelNames, topLevelField},
	{"messageField", messageFields, messageNames, messageField},
	{"toolCallField", toolCallFields, toolCallNames, toolCallField},
	{"toolCallFuncField", toolCallFuncFields, toolCallFuncNames, toolCallFuncField},
	{"toolField", toolFields, toolNames, toolField},
	{"toolFuncField", toolFuncFields, toolFuncNames, toolFuncField},
	{"partField", partFields, partNames, partField},
	{"toolChoiceField", toolChoiceFields, toolChoiceNames, toolChoiceField},
	{"responseFormatField", responseFormatFields, responseFormatNames, responseFormatField},
}

// TestFieldSwitchesMatchNames: each field function returns a name's position in its list,
// and -1 for any other name, so that the bit members.Set.Known tests is the name's.
func TestFieldSwitchesMatchNames(t *testing.T) {
	for _, fs := range fieldSwitches {
		list := strings.Fields(fs.list)
		for i, k := range list {
			if got := fs.field(k); got != i {
				t.Errorf("%s(%q) = %d, want %d (its position in the list)", fs.name, k, got, i)
			}
			for _, other := range []string{strings.ToUpper(k), k + "s", k[1:], ""} {
				if got, want := fs.field(other), fs.names.Index(other); got != want {
					t.Errorf("%s(%q) = %d, want %d", fs.name, other, got, want)
				}
			}
		}
	}
}

func FuzzFieldSwitchesMatchNames(f *testing.F) {
	for _, fs := range fieldSwitches {
		for _, k := range strings.Fields(fs.list) {
			f.Add(k)
		}
	}
	f.Fuzz(func(t *testing.T, k string) {
		for _, fs := range fieldSwitches {
			if got, want := fs.field(k), fs.names.Index(k); got != want {
				t.Fatalf("%s(%q) = %d, want %d", fs.name, k, got, want)
			}
		}
	})
}

// TestParseRequest_KeysThatStayAccepted: names that no decoder confuses with a field the
// gateway reads stay accepted, whatever their case.
func TestParseRequest_KeysThatStayAccepted(t *testing.T) {
	for _, tt := range []struct {
		name string
		body string
	}{
		{name: "unknown fields differing in case", body: `{"model":"m","Foo":1,"foo":2,"messages":[{"role":"user","content":"hi"}]}`},
		{name: "metadata keys differing in case", body: `{"model":"m","metadata":{"A":"1","a":"2"},"messages":[{"role":"user","content":"hi"}]}`},
		{name: "schema with repeated names in nested objects", body: `{"model":"m","tools":[{"type":"function","function":{"name":"f","parameters":{"properties":{"a":{},"A":{}}}}}],"messages":[{"role":"user","content":"hi"}]}`},
		{name: "many top-level fields", body: `{"model":"m","a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1,"h":1,"i":1,"j":1,"k":1,"l":1,"m":1,"o":1,"p":1,"q":1,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ParseRequest([]byte(tt.body)); err != nil {
				t.Fatalf("ParseRequest: %v", err)
			}
		})
	}
}

// TestParseRequest_MemberOrders: the member orders the parser reads first (role and
// content either way round, then tool_calls or tool_call_id; a tool call's type and
// function either way round; a function's name and arguments either way round) give the
// request that the same body gives with a space after each comma, which NextField reads,
// and that encoding/json gives (oracleCheck); so do a tool's type and function and its
// function's name, description, parameters and strict in the orders tried first.
func TestParseRequest_MemberOrders(t *testing.T) {
	const call = `{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}`
	const callGo = `{"id":"c2","function":{"arguments":"{\"b\":2}","name":"g"},"type":"function"}`
	// Tools in the orders of the API reference, of sorted keys and of openai-go, and others.
	const tools = `{"type":"function","function":{"name":"t1","description":"d","parameters":{"type":"object"}}},` +
		`{"function":{"description":"d","name":"t2","parameters":{"properties":{}},"strict":true},"type":"function"},` +
		`{"function":{"name":"t3","strict":false,"description":"d","parameters":{"type":"object","properties":{"a":{"type":"string"}}}},"type":"function"},` +
		`{"type":"function","function":{"parameters":{},"name":"t4"}},{"type":"function","function":{"name":"t5","parameters":null,"strict":true}}`
	for _, msgs := range []string{
		`{"role":"user","content":"hi"}`,
		`{"content":"hi","role":"user"}`,
		`{"role":"assistant","content":null,"tool_calls":[` + call + `,` + callGo + `]},{"role":"tool","content":"r1","tool_call_id":"c1"},{"content":"r2","tool_call_id":"c2","role":"tool"}`,
		`{"content":null,"tool_calls":[` + callGo + `],"role":"assistant"},{"role":"tool","tool_call_id":"c2","content":"r2"}`,
		`{"role":"user","name":"ann","content":"hi"}`,
		`{"role":"assistant","content":"a","refusal":null,"tool_calls":[{"id":"c3","function":{"name":"h"}}]}`,
		`{"role":"assistant","content":"x","tool_calls":[{"type":"function","id":"c4","function":{"name":"h","arguments":""}}]}`,
	} {
		body := `{"model":"m","messages":[` + msgs + `],"tools":[` + tools + `]}`
		spaced := strings.ReplaceAll(body, `,"`, `, "`)
		req, err := ParseRequest([]byte(body))
		if err != nil {
			t.Errorf("%s: %v", body, err)
			continue
		}
		want, err := ParseRequest([]byte(spaced))
		if err != nil {
			t.Fatalf("%s: %v", spaced, err)
		}
		if diff := cmp.Diff(oracleView(want), oracleView(req)); diff != "" {
			t.Errorf("%s (-spaced +compact):\n%s", body, diff)
		}
		wantTools := append([]translate.Tool(nil), want.Tools...)
		for k := range wantTools {
			wantTools[k].Parameters = strings.ReplaceAll(wantTools[k].Parameters, `, "`, `,"`)
		}
		if diff := cmp.Diff(wantTools, req.Tools); diff != "" {
			t.Errorf("%s: tools (-spaced +compact):\n%s", body, diff)
		}
		if len(req.Tools) != 5 || !req.Tools[0].ParametersTyped || req.Tools[1].ParametersTyped || req.Tools[1].Strict == nil || !*req.Tools[1].Strict {
			t.Errorf("%s: tools %+v", body, req.Tools)
		}
		oracleCheck(t, []byte(body))
	}
}
