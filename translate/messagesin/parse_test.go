package messagesin_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/spectest"
	"github.com/agate-gateway/agate/translate/messagesin"
)

// claudeCodeRequest has the shape the issue describes of what Claude Code 2.1 sends:
// system blocks with cache_control, a mid-conversation system message, adaptive thinking
// with display omitted, output_config.effort, context_management, metadata, a deferred
// tool, a server tool, thinking and tool_use history and a failed tool result.
const claudeCodeRequest = `{
 "model": "claude-opus-4-6",
 "max_tokens": 128000,
 "stream": true,
 "system": [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "Be terse."}],
 "messages": [
  {"role": "user", "content": [{"type": "text", "text": "list files", "cache_control": {"type": "ephemeral"}}]},
  {"role": "assistant", "content": [
    {"type": "thinking", "thinking": "use Bash", "signature": "sig-1"},
    {"type": "redacted_thinking", "data": "opaque"},
    {"type": "text", "text": "Running ls."},
    {"type": "tool_use", "id": "toolu_01__agater0xAB", "name": "Bash", "input": {"command": "ls"}}]},
  {"role": "user", "content": [
    {"type": "tool_result", "tool_use_id": "toolu_01__agater0xAB", "is_error": true, "content": [{"type": "text", "text": "permission denied"}]},
    {"type": "text", "text": "try again"}]},
  {"role": "system", "content": "The user switched to plan mode."},
  {"role": "user", "content": "go on"}
 ],
 "thinking": {"type": "adaptive", "display": "omitted"},
 "output_config": {"effort": "high"},
 "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
 "metadata": {"user_id": "user_abc"},
 "tools": [
  {"name": "Bash", "description": "run a command", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}},
  {"name": "NotebookEdit", "description": "edit", "input_schema": {"type": "object"}, "defer_loading": true},
  {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
  {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}
 ],
 "tool_choice": {"type": "auto", "disable_parallel_tool_use": true},
 "temperature": 1,
 "top_k": 40,
 "stop_sequences": ["END"],
 "future_option": {"x": 1}
}`

// coreView is what the tests compare of a parsed request.
type coreView struct {
	Model, Effort, User, Choice string
	MaxTokens                   int
	Stream, Parallel            bool
	TopK                        int
	Stop                        []string
	Messages                    []string
	Tools                       []string
	Extra                       []string
}

func view(r *translate.Request) coreView {
	v := coreView{Model: r.Model, Effort: r.ReasoningEffort, User: r.User, Choice: r.ToolChoice.Mode + r.ToolChoice.Name,
		MaxTokens: r.MaxTokens, Stream: r.Stream, Parallel: r.ParallelToolCalls == nil || *r.ParallelToolCalls, Stop: r.Stop}
	if r.TopK != nil {
		v.TopK = *r.TopK
	}
	for _, m := range r.Messages {
		s := m.Role + ":" + m.Text()
		for _, tc := range m.ToolCalls {
			s += fmt.Sprintf(" call(%s %s %s)", tc.ID, tc.Name, tc.Arguments)
		}
		for _, tb := range m.ThinkingBlocks {
			s += fmt.Sprintf(" %s(%s|%s|%s)", tb.Type, tb.Thinking, tb.Signature, tb.Data)
		}
		if m.ToolCallID != "" {
			s += " id=" + m.ToolCallID
		}
		if m.ToolError {
			s += " error"
		}
		if len(m.Content) > 1 {
			s += fmt.Sprintf(" parts=%d", len(m.Content))
		}
		v.Messages = append(v.Messages, s)
	}
	for _, t := range r.Tools {
		if t.Builtin != nil {
			v.Tools = append(v.Tools, t.Builtin.Dialect+":"+t.Builtin.Type)
			continue
		}
		v.Tools = append(v.Tools, t.Name)
	}
	for _, f := range r.Extra {
		v.Extra = append(v.Extra, f.Name)
	}
	return v
}

func TestParse_ClaudeCodeRequest(t *testing.T) {
	req, err := messagesin.Parse([]byte(claudeCodeRequest))
	if err != nil {
		t.Fatal(err)
	}
	want := coreView{Model: "claude-opus-4-6", Effort: "high", User: "user_abc", Choice: "auto", MaxTokens: 128000, Stream: true,
		Parallel: false, TopK: 40, Stop: []string{"END"},
		Messages: []string{
			"system:You are Claude Code.Be terse. parts=2",
			"user:list files",
			"assistant:Running ls. call(toolu_01~r0xAB Bash {\"command\": \"ls\"}) thinking(use Bash|sig-1|) redacted_thinking(||opaque)",
			"tool:permission denied id=toolu_01~r0xAB error",
			"user:try again",
			"system:The user switched to plan mode.",
			"user:go on",
		},
		Tools: []string{"Bash", "NotebookEdit", "anthropic:tool_search_tool_regex_20251119", "anthropic:web_search_20250305"},
		Extra: []string{"future_option"},
	}
	if diff := cmp.Diff(want, view(req)); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	// The request itself is a valid Messages request but for what Claude Code adds beyond
	// the published schema (the system role, context_management, defer_loading...), which
	// is why the parser cannot be schema-strict.
	schema := spectest.Schema(t, "anthropic/messages.json", "#/components/schemas/CreateMessageParams")
	if err := spectest.Validate(schema, []byte(claudeCodeRequest)); err == nil {
		t.Errorf("the Claude Code request is expected to exceed the published schema")
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		body string
		want coreView
	}{
		{name: "string content", body: `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
			want: coreView{Model: "m", MaxTokens: 5, Parallel: true, Messages: []string{"user:hi"}}},
		{name: "thinking budget low", body: `{"model":"m","max_tokens":5,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"hi"}]}`,
			want: coreView{Model: "m", MaxTokens: 5, Parallel: true, Effort: "low", Messages: []string{"user:hi"}}},
		{name: "effort before adaptive still wins", body: `{"output_config":{"effort":"max"},"thinking":{"type":"adaptive"},"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
			want: coreView{Model: "m", MaxTokens: 5, Parallel: true, Effort: "xhigh", Messages: []string{"user:hi"}}},
		{name: "thinking disabled drops effort", body: `{"output_config":{"effort":"low"},"thinking":{"type":"disabled"},"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
			want: coreView{Model: "m", MaxTokens: 5, Parallel: true, Messages: []string{"user:hi"}}},
		{name: "tool choice any", body: `{"model":"m","max_tokens":5,"tool_choice":{"type":"any"},"messages":[{"role":"user","content":"hi"}]}`,
			want: coreView{Model: "m", MaxTokens: 5, Parallel: true, Choice: "required", Messages: []string{"user:hi"}}},
		{name: "tool choice tool", body: `{"model":"m","max_tokens":5,"tool_choice":{"type":"tool","name":"f"},"messages":[{"role":"user","content":"hi"}]}`,
			want: coreView{Model: "m", MaxTokens: 5, Parallel: true, Choice: "functionf", Messages: []string{"user:hi"}}},
		{name: "image and document", body: `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}},{"type":"document","source":{"type":"text","media_type":"text/plain","data":"doc"}}]}]}`,
			want: coreView{Model: "m", MaxTokens: 5, Parallel: true, Messages: []string{"user:doc parts=2"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := messagesin.Parse([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, view(req)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestParse_Errors(t *testing.T) {
	tests := []struct {
		name, body, wantParam string
		count                 bool
	}{
		{name: "not json", body: `{`, wantParam: ""},
		{name: "array", body: `[]`, wantParam: ""},
		{name: "no model", body: `{"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, wantParam: "model"},
		{name: "no max_tokens", body: `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, wantParam: "max_tokens"},
		{name: "count_tokens needs no max_tokens", body: `{"model":"m","messages":[]}`, wantParam: "messages", count: true},
		{name: "max_tokens zero", body: `{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, wantParam: "max_tokens"},
		{name: "duplicate key", body: `{"model":"m","model":"n","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, wantParam: "model"},
		{name: "case variant", body: `{"model":"m","Max_Tokens":5,"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, wantParam: "Max_Tokens"},
		{name: "bad role", body: `{"model":"m","max_tokens":5,"messages":[{"role":"tool","content":"hi"}]}`, wantParam: "messages[0].role"},
		{name: "bad block", body: `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"text":"x"}]}]}`, wantParam: "messages[0].content[0].type"},
		{name: "bad tool choice", body: `{"model":"m","max_tokens":5,"tool_choice":{"type":"sometimes"},"messages":[{"role":"user","content":"hi"}]}`, wantParam: "tool_choice.type"},
		{name: "bad effort", body: `{"model":"m","max_tokens":5,"output_config":{"effort":"extreme"},"messages":[{"role":"user","content":"hi"}]}`, wantParam: "output_config.effort"},
		{name: "bad system", body: `{"model":"m","max_tokens":5,"system":[{"type":"image"}],"messages":[{"role":"user","content":"hi"}]}`, wantParam: "system[0].type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parse := messagesin.Parse
			if tt.count {
				parse = messagesin.ParseCountTokens
			}
			_, err := parse([]byte(tt.body))
			var pe *translate.ParamError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v, want a ParamError", err)
			}
			if !strings.HasPrefix(pe.Param, tt.wantParam) || (tt.wantParam == "" && pe.Param != "") {
				t.Errorf("param %q, want %q (%v)", pe.Param, tt.wantParam, err)
			}
		})
	}
}

func TestToolIDs(t *testing.T) {
	id := translate.CarryID("toolu_1", []byte("state that rides along"))
	client := messagesin.ClientToolID(id)
	if strings.ContainsAny(client, "~") {
		t.Errorf("client id %q", client)
	}
	if got := messagesin.CoreToolID(client); got != id {
		t.Errorf("round trip %q, want %q", got, id)
	}
}

// FuzzParse: the parser never panics, errors are ParamErrors, what it accepts is complete,
// and its passthrough body (AppendPassBody) parses to the same request for another model.
func FuzzParse(f *testing.F) {
	f.Add([]byte(claudeCodeRequest))
	f.Add([]byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":[{"type":"image","source":{"type":"url","url":"u"}}]}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := messagesin.Parse(body)
		// ParseOwned reads a body it may alias as Parse reads its copy.
		owned, oerr := messagesin.ParseOwned(append([]byte(nil), body...), translate.DefaultMaxInflated)
		if fmt.Sprint(err) != fmt.Sprint(oerr) || !reflect.DeepEqual(req, owned) {
			t.Fatalf("ParseOwned(%q) = %+v, %v; Parse: %+v, %v", body, owned, oerr, req, err)
		}
		if err != nil {
			var pe *translate.ParamError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T %v is not a ParamError", err, err)
			}
			return
		}
		if req.Model == "" || req.MaxTokens < 1 || len(req.Messages) == 0 {
			t.Fatalf("accepted an incomplete request: %+v", req)
		}
		messagesin.EstimateTokens(req)
		// The passthrough body is the same request for another model.
		pass := messagesin.AppendPassBody(nil, body, "up")
		again, err := messagesin.Parse(pass)
		if err != nil || again.Model != "up" || len(again.Messages) != len(req.Messages) {
			t.Fatalf("the passthrough body %s of %s reads differently (%v)", pass, body, err)
		}
	})
}

// TestClaudeCodeRequest_UpstreamSpecs: Claude Code's request, translated for each upstream,
// satisfies that upstream's published request schema. The OpenAI chat provider forwards
// the core Request's Body, which must therefore be a chat completions body, never the
// Messages body.
func TestClaudeCodeRequest_UpstreamSpecs(t *testing.T) {
	recorded, err := os.ReadFile(filepath.Join("testdata", "claude-code-2.1.330.request.json"))
	if err != nil {
		t.Fatal(err)
	}
	specs := map[string][2]string{
		"anthropic":   {"anthropic/messages.json", "#/components/schemas/CreateMessageParams"},
		"gemini":      {"gemini/generate-content.json", "#/components/schemas/GenerateContentRequest"},
		"openai-chat": {"openai/chat-and-responses.json", "#/components/schemas/CreateChatCompletionRequest"},
		"responses":   {"openai/chat-and-responses.json", "#/components/schemas/CreateResponse"},
	}
	for _, body := range []struct{ name, json string }{{"described", claudeCodeRequest}, {"recorded", string(recorded)}} {
		for wire, provider := range wireProviders {
			t.Run(body.name+"/"+wire, func(t *testing.T) {
				req, err := messagesin.Parse([]byte(body.json))
				if err != nil {
					t.Fatal(err)
				}
				// What the proxy does for these backends (proxy/messages.go prepare).
				req.Extra = nil
				if wire == "gemini" {
					req.User = ""
				}
				if wire == "openai-chat" || wire == "responses" {
					req.TopK = nil
				}
				if wire == "responses" {
					req.Stop = nil // refused unless drop_unsupported_params, as for chat clients
				}
				out, err := provider().AppendRequest(nil, req, &translate.Options{UpstreamModel: "up", Stream: true})
				if err != nil {
					t.Fatal(err)
				}
				s := spectest.Schema(t, specs[wire][0], specs[wire][1])
				if wire == "responses" {
					out = easyMessagesChecked(t, out)
				}
				if err := spectest.Validate(s, out); err != nil {
					t.Errorf("%v\n%s", err, out)
				}
			})
		}
	}
}

// easyMessagesChecked works around a quirk of the Responses spec (as translate's
// responsesSchemaCheck does): a message item with a content array matches both
// EasyInputMessage and InputMessage of the InputItem oneOf, so such items are validated
// alone against EasyInputMessage and the body returned with their content made a string.
func easyMessagesChecked(t *testing.T, body []byte) []byte {
	t.Helper()
	msg := spectest.Schema(t, "openai/chat-and-responses.json", "#/components/schemas/EasyInputMessage")
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	in, _ := v["input"].([]any)
	for i, it := range in {
		m, _ := it.(map[string]any)
		if _, list := m["content"].([]any); !list || m["role"] == nil {
			continue
		}
		b, _ := json.Marshal(m)
		if err := spectest.Validate(msg, b); err != nil {
			t.Errorf("input[%d]: %v", i, err)
		}
		m["content"] = "validated above"
	}
	out, _ := json.Marshal(v)
	return out
}

// TestParse_RecordedClaudeCode: Claude Code 2.1.330's own request (testdata/SOURCES.md)
// parses: its system blocks, the trailing role "system" message, its twelve tools with the
// deferred placeholder, adaptive thinking and effort high.
func TestParse_RecordedClaudeCode(t *testing.T) {
	recorded, err := os.ReadFile(filepath.Join("testdata", "claude-code-2.1.330.request.json"))
	if err != nil {
		t.Fatal(err)
	}
	req, err := messagesin.Parse(recorded)
	if err != nil {
		t.Fatal(err)
	}
	v := view(req)
	got := fmt.Sprintf("%s %d %v %s tools=%d roles=", v.Model, v.MaxTokens, v.Stream, v.Effort, len(v.Tools))
	for _, m := range req.Messages {
		got += m.Role + ","
	}
	if want := "claude-opus-4-6 32000 true high tools=12 roles=system,user,system,"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if len(v.Extra) != 0 {
		t.Errorf("unknown fields %v", v.Extra)
	}
}
