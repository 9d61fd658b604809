package responsesin

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/spectest"
	"github.com/agate-gateway/agate/translate/openai"
	"github.com/agate-gateway/agate/translate/openaichat"
)

func ptr[T any](v T) *T { return &v }

// TestParse: what each Responses request shape becomes in the core request.
func TestParse(t *testing.T) {
	tests := []struct {
		name string
		body string
		want translate.Request
		// check inspects the Request beyond the core fields.
		check func(t *testing.T, r *Request)
	}{
		{
			name: "string input with instructions",
			body: `{"model":"m","input":"hi","instructions":"be brief"}`,
			want: translate.Request{Model: "m", Messages: []translate.Message{
				{Role: "system", Content: []translate.Part{{Type: translate.PartText, Text: "be brief"}}},
				{Role: "user", Content: []translate.Part{{Type: translate.PartText, Text: "hi"}}},
			}},
			check: func(t *testing.T, r *Request) {
				if !r.Store || r.Input != `[{"type":"message","role":"user","content":"hi"}]` {
					t.Errorf("store %v, input %s", r.Store, r.Input)
				}
			},
		},
		{
			name: "a function call round trip with reasoning, as a stateless client sends it back",
			body: `{"model":"m","store":false,"input":[
				{"role":"user","content":[{"type":"input_text","text":"weather?"},{"type":"input_image","image_url":"https://x/y.png","detail":"low"}]},
				{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"think"}],"encrypted_content":"opaque"},
				{"type":"message","role":"assistant","id":"msg_1","status":"completed","content":[{"type":"output_text","text":"Let me check.","annotations":[]}]},
				{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},
				{"type":"function_call","call_id":"call_2","name":"get_time","arguments":"{}"},
				{"type":"function_call_output","call_id":"call_1","output":"sunny"},
				{"type":"function_call_output","call_id":"call_2","output":[{"type":"input_text","text":"noon"}]}
			]}`,
			want: translate.Request{Model: "m", Messages: []translate.Message{
				{Role: "user", Content: []translate.Part{{Type: translate.PartText, Text: "weather?"}, {Type: translate.PartImage, Media: &translate.Media{URL: "https://x/y.png", Detail: "low"}}}},
				{Role: "assistant", Reasoning: "think", Content: []translate.Part{{Type: translate.PartText, Text: "Let me check."}},
					ToolCalls: []translate.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}, {ID: "call_2", Name: "get_time", Arguments: "{}"}}},
				{Role: "tool", ToolCallID: "call_1", Content: []translate.Part{{Type: translate.PartText, Text: "sunny"}}},
				{Role: "tool", ToolCallID: "call_2", Content: []translate.Part{{Type: translate.PartText, Text: "noon"}}},
			}},
			check: func(t *testing.T, r *Request) {
				if r.Store || r.Untranslatable != nil {
					t.Errorf("store %v, untranslatable %v", r.Store, r.Untranslatable)
				}
			},
		},
		{
			name: "calls of successive turns stay in their turns",
			body: `{"model":"m","input":[{"role":"user","content":"go"},
				{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"r1"},
				{"type":"function_call","call_id":"c2","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c2","output":"r2"}]}`,
			want: translate.Request{Model: "m", Messages: []translate.Message{
				{Role: "user", Content: []translate.Part{{Type: translate.PartText, Text: "go"}}},
				{Role: "assistant", ToolCalls: []translate.ToolCall{{ID: "c1", Name: "f", Arguments: "{}"}}},
				{Role: "tool", ToolCallID: "c1", Content: []translate.Part{{Type: translate.PartText, Text: "r1"}}},
				{Role: "assistant", ToolCalls: []translate.ToolCall{{ID: "c2", Name: "f", Arguments: "{}"}}},
				{Role: "tool", ToolCallID: "c2", Content: []translate.Part{{Type: translate.PartText, Text: "r2"}}},
			}},
		},
		{
			name: "settings",
			body: `{"model":"m","input":"x","stream":true,"max_output_tokens":100,"temperature":0.5,"top_p":0.9,
				"tools":[{"type":"function","name":"f","description":"d","parameters":{"type":"object"},"strict":true}],
				"tool_choice":{"type":"function","name":"f"},"parallel_tool_calls":false,
				"text":{"format":{"type":"json_schema","name":"s","schema":{"type":"object"},"strict":true}},
				"reasoning":{"effort":"low","summary":"auto"},"safety_identifier":"u1","metadata":{"a":"b"},
				"include":["reasoning.encrypted_content"],"previous_response_id":"resp_1"}`,
			want: translate.Request{Model: "m", Stream: true, IncludeUsage: true, MaxTokens: 100, MaxTokensParam: "max_output_tokens",
				Temperature: ptr(0.5), TopP: ptr(0.9), ParallelToolCalls: ptr(false), ReasoningEffort: "low", User: "u1",
				Tools:          []translate.Tool{{Name: "f", Description: "d", Parameters: `{"type":"object"}`, Strict: ptr(true)}},
				ToolChoice:     translate.ToolChoice{Mode: "function", Name: "f"},
				ResponseFormat: translate.ResponseFormat{Type: "json_schema", Name: "s", Schema: `{"type":"object"}`, Strict: ptr(true)},
				Messages:       []translate.Message{{Role: "user", Content: []translate.Part{{Type: translate.PartText, Text: "x"}}}}},
			check: func(t *testing.T, r *Request) {
				if !r.EncryptedReasoning || r.PreviousResponseID != "resp_1" {
					t.Errorf("include %v, previous %q", r.EncryptedReasoning, r.PreviousResponseID)
				}
			},
		},
		{
			name: "built-in tools and unknown items are left to a responses backend",
			body: `{"model":"m","input":[{"type":"item_reference","id":"x"}],"tools":[{"type":"web_search"}],"prompt_cache_retention":"24h"}`,
			want: translate.Request{Model: "m", Extra: []translate.Field{{Name: "prompt_cache_retention", Raw: `"24h"`}},
				Tools: []translate.Tool{{Builtin: &translate.Item{Dialect: translate.DialectResponses, Type: "web_search", Raw: `{"type":"web_search"}`}}}},
			check: func(t *testing.T, r *Request) {
				var pe *translate.ParamError
				if !errors.As(r.Untranslatable, &pe) || pe.Param != "input[0].type" {
					t.Errorf("untranslatable %v", r.Untranslatable)
				}
				if !errors.As(r.BuiltinTool, &pe) || pe.Param != "tools[0].type" {
					t.Errorf("built-in tool %v", r.BuiltinTool)
				}
			},
		},
		{
			name: "built-in tools go to a responses backend on the translated path, not to others",
			body: `{"model":"m","input":"news?","tools":[{"type":"function","name":"f"},{"type":"web_search","search_context_size":"low"}]}`,
			want: translate.Request{Model: "m", Messages: []translate.Message{{Role: "user", Content: []translate.Part{{Type: translate.PartText, Text: "news?"}}}},
				Tools: []translate.Tool{{Name: "f"}, {Builtin: &translate.Item{Dialect: translate.DialectResponses, Type: "web_search", Raw: `{"type":"web_search","search_context_size":"low"}`}}}},
			check: func(t *testing.T, r *Request) {
				if err := r.Translatable(true); err != nil {
					t.Errorf("Translatable(responses only) = %v", err)
				}
				var pe *translate.ParamError
				if err := r.Translatable(false); !errors.As(err, &pe) || pe.Param != "tools[1].type" {
					t.Errorf("Translatable(other backends) = %v, want the built-in tool named", err)
				}
				// The echo keeps the client's tools in order.
				if got := gjson.Get("{"+string(r.echo)+"}", "tools.#.type").Raw; got != `["function","web_search"]` {
					t.Errorf("echoed tool types %s", got)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse([]byte(tt.body))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got := *r.Core
			got.Body = ""
			if !got.Edited {
				t.Errorf("Edited is not set: the chat provider would not write the messages")
			}
			got.Edited = false
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("core request (-want +got):\n%s", diff)
			}
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}

// TestParse_ChatBody: what the OpenAI chat provider sends upstream for a Responses request
// (the core's Body with its messages, tools and tool_choice) is a valid chat completions
// request.
func TestParse_ChatBody(t *testing.T) {
	s := spectest.Schema(t, "openai/chat-and-responses.json", "#/components/schemas/CreateChatCompletionRequest")
	spectest.MustRejectInvalid(t, s, `{"model":"m"}`)
	r, err := Parse([]byte(`{"model":"m","input":[{"role":"user","content":"q"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},
		{"type":"function_call_output","call_id":"c","output":"r"}],"instructions":"sys","tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],
		"tool_choice":"required","text":{"format":{"type":"json_object"}},"max_output_tokens":9,"stream":true,"prompt_cache_key":"pk"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, err := openai.New().AppendRequest(nil, r.Core, &translate.Options{UpstreamModel: "up", Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := spectest.Validate(s, body); err != nil {
		t.Errorf("chat body does not satisfy the schema: %v\n%s", err, body)
	}
	for _, want := range []string{`"role":"tool"`, `"tool_calls":[`, `"tool_choice":"required"`, `"max_completion_tokens":9`, `"sys"`, `"prompt_cache_key":"pk"`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("chat body lacks %s: %s", want, body)
		}
	}
}

// TestParse_CodexFields: prompt_cache_key is a caching hint, echoed and passed to an
// OpenAI chat upstream only; client_metadata (Codex CLI's ids) is the client's own and goes
// nowhere. Neither is an unsupported parameter (Extra), which would be a 400 without
// drop_unsupported_params.
func TestParse_CodexFields(t *testing.T) {
	tests := []struct {
		name, body string
		// echo and chat are what the Response echo and the chat body hold, "" for nothing.
		echo, chat string
	}{
		{name: "prompt_cache_key", body: `{"model":"m","input":"x","prompt_cache_key":"01a2-session"}`,
			echo: `"prompt_cache_key":"01a2-session"`, chat: `"prompt_cache_key":"01a2-session"`},
		{name: "prompt_cache_key null", body: `{"model":"m","input":"x","prompt_cache_key":null}`},
		{name: "client_metadata", body: `{"model":"m","input":"x","client_metadata":{"x-codex-installation-id":"2d22","session_id":"01a2"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustParse(t, tt.body)
			if len(r.Core.Extra) != 0 {
				t.Errorf("Extra %v, want none", r.Core.Extra)
			}
			for _, c := range []struct{ what, got, want string }{{"echo", string(r.echo), tt.echo}, {"chat body", r.Core.Body, tt.chat}} {
				for _, field := range []string{"prompt_cache_key", "client_metadata", "2d22"} {
					if strings.Contains(c.got, field) != (c.want != "" && strings.Contains(c.want, field)) {
						t.Errorf("%s %s, want %q in it", c.what, c.got, c.want)
					}
				}
				if c.want != "" && !strings.Contains(c.got, c.want) {
					t.Errorf("%s %s lacks %s", c.what, c.got, c.want)
				}
			}
		})
	}
}

// TestParse_Errors: each malformed request is a 400 whose param names the field.
func TestParse_Errors(t *testing.T) {
	tests := []struct {
		name, body, param, code string
	}{
		{name: "empty", body: ``},
		{name: "not JSON", body: `{"model":`},
		{name: "not an object", body: `[]`},
		{name: "invalid UTF-8", body: "{\"model\":\"m\xff\",\"input\":\"x\"}", code: CodeInvalidUTF8},
		{name: "no model", body: `{"input":"x"}`, param: "model"},
		{name: "null model", body: `{"model":null,"input":"x"}`, param: "model"},
		{name: "no input", body: `{"model":"m"}`, param: "input"},
		{name: "input a number", body: `{"model":"m","input":1}`, param: "input"},
		{name: "duplicate key", body: `{"model":"m","input":"x","input":"y"}`, param: "input", code: CodeDuplicateKey},
		{name: "key case", body: `{"model":"m","input":"x","Stream":true}`, param: "Stream", code: CodeKeyCase},
		{name: "duplicate key in an item", body: `{"model":"m","input":[{"role":"user","role":"system","content":"x"}]}`, param: "input[0].role", code: CodeDuplicateKey},
		{name: "duplicate key in a part", body: `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"a","text":"b"}]}]}`, param: "input[0].content[0].text", code: CodeDuplicateKey},
		{name: "duplicate key in a tool", body: `{"model":"m","input":"x","tools":[{"type":"function","name":"a","name":"b"}]}`, param: "tools[0].name", code: CodeDuplicateKey},
		{name: "bad role", body: `{"model":"m","input":[{"role":"robot","content":"x"}]}`, param: "input[0].role"},
		{name: "output_text from the user", body: `{"model":"m","input":[{"role":"user","content":[{"type":"output_text","text":"x"}]}]}`, param: "input[0].content[0].type"},
		{name: "function call without call_id", body: `{"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, param: "input[0].call_id"},
		{name: "function call output without output", body: `{"model":"m","input":[{"type":"function_call_output","call_id":"c"}]}`, param: "input[0].output"},
		{name: "item without type", body: `{"model":"m","input":[{"content":"x"}]}`, param: "input[0].type"},
		{name: "tool without name", body: `{"model":"m","input":"x","tools":[{"type":"function"}]}`, param: "tools[0].name"},
		{name: "tool_choice names no tool", body: `{"model":"m","input":"x","tool_choice":{"type":"function","name":"f"}}`, param: "tool_choice"},
		{name: "tool_choice required without tools", body: `{"model":"m","input":"x","tool_choice":"required"}`, param: "tool_choice"},
		{name: "bad tool_choice", body: `{"model":"m","input":"x","tool_choice":"sometimes"}`, param: "tool_choice"},
		{name: "json_schema without schema", body: `{"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"s"}}}`, param: "text.format.schema"},
		{name: "bad effort", body: `{"model":"m","input":"x","reasoning":{"effort":"max"}}`, param: "reasoning.effort"},
		{name: "fractional max_output_tokens", body: `{"model":"m","input":"x","max_output_tokens":1.5}`, param: "max_output_tokens"},
		{name: "temperature out of range", body: `{"model":"m","input":"x","temperature":3}`, param: "temperature"},
		{name: "store not a boolean", body: `{"model":"m","input":"x","store":"yes"}`, param: "store"},
		{name: "include not strings", body: `{"model":"m","input":"x","include":[1]}`, param: "include[0]"},
		{name: "prompt_cache_key not a string", body: `{"model":"m","input":"x","prompt_cache_key":1}`, param: "prompt_cache_key"},
		{name: "client_metadata not an object", body: `{"model":"m","input":"x","client_metadata":"x"}`, param: "client_metadata"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.body))
			var pe *translate.ParamError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *translate.ParamError", err)
			}
			if pe.Param != tt.param || pe.Code != tt.code || pe.Message == "" {
				t.Errorf("param %q code %q (%s), want param %q code %q", pe.Param, pe.Code, pe.Message, tt.param, tt.code)
			}
		})
	}
}

// TestPrepend: a continuation puts the stored items between the instructions and the new
// input.
func TestPrepend(t *testing.T) {
	r, err := Parse([]byte(`{"model":"m","input":"second","instructions":"sys","previous_response_id":"resp_1"}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Prepend(`[{"type":"message","role":"user","content":"first"},{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"answer"}]}]`); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range r.Core.Messages {
		got = append(got, m.Role+":"+m.Text())
	}
	want := []string{"system:sys", "user:first", "assistant:answer", "user:second"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	chat, err := openai.New().AppendRequest(nil, r.Core, &translate.Options{UpstreamModel: "up"})
	if err != nil || !strings.Contains(string(chat), `"answer"`) {
		t.Errorf("chat body lacks the earlier turn (%v): %s", err, chat)
	}
}

// TestPrepend_BuiltinItems: a stored response whose output holds the built-in tool items a
// responses upstream ran (as the Encoder passes them on) continues on the translated path:
// the items are left out, the rest of the turn is kept.
func TestPrepend_BuiltinItems(t *testing.T) {
	r, err := Parse([]byte(`{"model":"m","input":"and now?","previous_response_id":"resp_1"}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Prepend(`[{"type":"message","role":"user","content":"news?"},` +
		`{"id":"ws_1","type":"web_search_call","status":"completed","action":{"type":"search","query":"news"}},` +
		`{"id":"ci_1","type":"code_interpreter_call","status":"completed","code":"1+1","container_id":"c","outputs":null},` +
		`{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"quiet day"}]}]`); err != nil {
		t.Fatal(err)
	}
	if err := r.Translatable(false); err != nil {
		t.Fatalf("Translatable: %v", err)
	}
	var got []string
	for _, m := range r.Core.Messages {
		got = append(got, m.Role+":"+m.Text())
	}
	if diff := cmp.Diff([]string{"user:news?", "assistant:quiet day", "user:and now?"}, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

// FuzzParse: the parser never panics, what it accepts has a core request whose chat
// body is a valid chat completions request, and its forwarded body (AppendBody) parses to
// the same request for another model and is the body a walk for the model makes.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","input":"hi"}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"a"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"r"}]}`,
		`{"model":"m","input":"x","tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],"tool_choice":{"type":"function","name":"f"}}`,
		`{"model":"m","input":[{"type":"reasoning","summary":[{"type":"summary_text","text":"t"}]}],"text":{"format":{"type":"json_schema","name":"s","schema":{}}}}`,
		`{"model":"m","input":"x","MODEL":"y"}`,
		`{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","namespace":"ns","arguments":"{}"}],"tools":[{"type":"namespace","name":"ns","description":"d","tools":[{"type":"function","name":"f"}]},{"type":"function","name":"ns__f"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := Parse(body)
		if err != nil {
			var pe *translate.ParamError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *translate.ParamError", err)
			}
			return
		}
		if again, err := Parse(r.AppendBody(nil, "up")); err != nil || again.Core.Model != "up" || again.Input != r.Input {
			t.Fatalf("the forwarded body of %s reads differently (%v)", body, err)
		}
		// The model's value, kept by Parse, is where a walk of the body finds it.
		walked := *r
		walked.model = translate.Span{}
		if got, want := r.AppendBody(nil, `u"p`), walked.AppendBody(nil, `u"p`); string(got) != string(want) {
			t.Fatalf("AppendBody of %s = %s, walked %s", body, got, want)
		}
		if r.Translatable(false) != nil {
			return
		}
		chat, err := openai.New().AppendRequest(nil, r.Core, &translate.Options{UpstreamModel: "up"})
		if err != nil {
			t.Fatalf("accepted %s, but the chat provider refuses it: %v", body, err)
		}
		if _, err := openaichat.ParseRequest(chat); err != nil {
			t.Fatalf("accepted %s, but its chat body does not parse: %v\n%s", body, err, chat)
		}
	})
}

// TestFieldPositions: the position constants name the fields of their lists, where
// members.Read stores the values.
func TestFieldPositions(t *testing.T) {
	for _, tt := range []struct {
		name, list string
		at         map[string]int
	}{
		{"item", itemFields, map[string]int{"type": itemType, "id": itemID, "role": itemRole, "content": itemContent,
			"status": itemStatus, "call_id": itemCallID, "name": itemName, "arguments": itemArguments, "output": itemOutput,
			"summary": itemSummary, "encrypted_content": itemEncrypted}},
		{"part", partFields, map[string]int{"type": partType, "text": partText, "refusal": partRefusal, "image_url": partImageURL,
			"file_id": partFileID, "detail": partDetail, "file_data": partFileData, "filename": partFilename,
			"file_url": partFileURL, "annotations": partAnnotations, "logprobs": partLogprobs}},
		{"tool", toolFields, map[string]int{"type": toolType, "name": toolName, "description": toolDescription,
			"parameters": toolParameters, "strict": toolStrict}},
		{"format", formatFields, map[string]int{"type": toolType, "name": toolName, "description": toolDescription,
			"schema": toolParameters, "strict": toolStrict}},
		{"text", textFields, map[string]int{"format": textFormat}},
		{"reasoning", reasonFields, map[string]int{"effort": reasonEffort}},
		{"choice", choiceFields, map[string]int{"type": choiceType, "name": choiceName}},
		{"summary", summaryFields, map[string]int{"text": summaryText}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			names := strings.Fields(tt.list)
			for name, at := range tt.at {
				if at >= len(names) || names[at] != name {
					t.Errorf("position %d of %q is not %q", at, tt.list, name)
				}
			}
		})
	}
	if len(strings.Fields(itemFields)) != itemN || len(strings.Fields(partFields)) != partN || len(strings.Fields(toolFields)) != toolN {
		t.Error("a position list does not cover its field list")
	}
}
