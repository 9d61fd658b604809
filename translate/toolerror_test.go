package translate_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/anthropic"
	"github.com/agate-gateway/agate/translate/gemini"
	"github.com/agate-gateway/agate/translate/openai"
	"github.com/agate-gateway/agate/translate/openaichat"
	"github.com/agate-gateway/agate/translate/responses"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/translate/internal/spectest"
)

// toolErrorRequest is a client request whose last message is a tool result; the test
// flags it as the tool loop flags a failed server tool call.
const toolErrorRequest = `{"model":"m","messages":[` +
	`{"role":"user","content":"Save my notes."},` +
	`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"write","arguments":"{\"text\":\"notes\"}"}}]},` +
	`{"role":"tool","tool_call_id":"call_1","content":"disk full"}],` +
	`"tools":[{"type":"function","function":{"name":"write","description":"Write a file.","parameters":{"type":"object","properties":{"text":{"type":"string"}}}}}]}`

// TestToolErrorRequest pins how each upstream is told that a tool call failed: Anthropic
// tool_result is_error, Gemini functionResponse.response "error", and the "Error: " text
// where the wire has no mark (Responses function_call_output, OpenAI chat). Each body is
// checked against its published request schema; an unflagged result keeps the plain
// encoding. The whole flagged bodies are goldens of each dialect's own runner
// (<dialect>/testdata/request-tool-error.txtar, options.json tool_errors).
func TestToolErrorRequest(t *testing.T) {
	tests := []struct {
		name     string
		provider translate.Provider
		validate func([]byte) error
		// path is where the tool result lands in the upstream body; flagged and plain are
		// its JSON with and without ToolError.
		path, flagged, plain string
	}{
		{"anthropic", anthropic.New(), spectest.AnthropicRequest(t),
			"messages.2.content.0",
			`{"type":"tool_result","tool_use_id":"call_1","content":"disk full","is_error":true}`,
			`{"type":"tool_result","tool_use_id":"call_1","content":"disk full"}`},
		{"gemini", gemini.New(), spectest.GeminiRequest(t),
			"contents.2.parts.0.functionResponse.response",
			`{"error":"disk full"}`,
			`{"output":"disk full"}`},
		{"responses", responses.New(), spectest.ResponsesRequest(t),
			"input.#(type==\"function_call_output\")",
			`{"type":"function_call_output","call_id":"call_1","output":"Error: disk full"}`,
			`{"type":"function_call_output","call_id":"call_1","output":"disk full"}`},
		{"openai-chat", openai.New(), spectest.ChatRequest(t),
			"messages.2",
			`{"role":"tool","content":"Error: disk full","tool_call_id":"call_1"}`,
			`{"role":"tool","content":"disk full","tool_call_id":"call_1"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parsed, err := openaichat.ParseRequest([]byte(toolErrorRequest))
			if err != nil {
				t.Fatal(err)
			}
			opts := &translate.Options{UpstreamModel: "upstream-model"}
			for _, flag := range []bool{true, false} {
				req := parsed.Clone() // as the tool loop does before appending results
				req.Messages[2].ToolError = flag
				got, err := tt.provider.AppendRequest(nil, req, opts)
				if err != nil {
					t.Fatalf("AppendRequest: %v", err)
				}
				if err := tt.validate(got); err != nil {
					t.Errorf("ToolError %v: body does not satisfy the upstream's request schema: %v\n%s", flag, err, got)
				}
				want := tt.plain
				if flag {
					want = tt.flagged
				}
				r := gjson.GetBytes(got, tt.path)
				if !r.Exists() {
					t.Fatalf("ToolError %v: no %s in %s", flag, tt.path, got)
				}
				var w, g bytes.Buffer
				if err := json.Compact(&w, []byte(want)); err != nil {
					t.Fatal(err)
				}
				json.Compact(&g, []byte(r.Raw))
				if diff := cmp.Diff(w.String(), g.String()); diff != "" {
					t.Errorf("ToolError %v: tool result (-want +got):\n%s", flag, diff)
				}
			}
		})
	}
}
