package translate_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/anthropic"
	"github.com/agate-gateway/agate/translate/gemini"
	"github.com/agate-gateway/agate/translate/internal/spectest"
	"github.com/agate-gateway/agate/translate/messagesin"
	"github.com/agate-gateway/agate/translate/openai"
	"github.com/agate-gateway/agate/translate/responses"
	"github.com/agate-gateway/agate/translate/responsesin"
)

// TestBuiltinTools_OnlyTheirOwnUpstream pins where a client's built-in tool definitions
// go on the translated path: an Anthropic-defined tool (web_search_20250305) to an
// anthropic upstream as the client wrote it, a Responses built-in tool (web_search) to a
// responses upstream as written, and neither anywhere else, where the function tools stay
// and every body satisfies its published schema.
func TestBuiltinTools_OnlyTheirOwnUpstream(t *testing.T) {
	const messagesBody = `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"news?"}],` +
		`"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":2},{"name":"f","input_schema":{"type":"object"}}]}`
	const messagesOnlyBuiltin = `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"news?"}],` +
		`"tools":[{"type":"web_search_20250305","name":"web_search"}]}`
	const responsesBody = `{"model":"m","input":"news?","tools":[{"type":"web_search","search_context_size":"low"},{"type":"function","name":"f","parameters":{"type":"object","properties":{}}}]}`
	messages := func(body string) func(t *testing.T) *translate.Request {
		return func(t *testing.T) *translate.Request {
			r, err := messagesin.Parse([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
	}
	responsesReq := func(t *testing.T) *translate.Request {
		r, err := responsesin.Parse([]byte(responsesBody))
		if err != nil {
			t.Fatal(err)
		}
		return r.Core
	}
	tests := []struct {
		name     string
		req      func(t *testing.T) *translate.Request
		provider translate.Provider
		validate func([]byte) error
		path     string // the tools array in the upstream body
		want     string // its JSON; "" for none
	}{
		{"messages to anthropic", messages(messagesBody), anthropic.New(), spectest.AnthropicRequest(t), "tools",
			`[{"type":"web_search_20250305","name":"web_search","max_uses":2},{"name":"f","input_schema":{"type":"object"}}]`},
		{"messages to gemini", messages(messagesBody), gemini.New(), spectest.GeminiRequest(t), "tools.0.functionDeclarations.#.name", `["f"]`},
		{"messages to responses", messages(messagesBody), responses.New(), spectest.ResponsesRequest(t), "tools.#.name", `["f"]`},
		{"messages to openai chat", messages(messagesBody), openai.New(), spectest.ChatRequest(t), "tools.#.function.name", `["f"]`},
		{"messages, only a built-in, to gemini", messages(messagesOnlyBuiltin), gemini.New(), spectest.GeminiRequest(t), "tools", ""},
		{"messages, only a built-in, to openai chat", messages(messagesOnlyBuiltin), openai.New(), spectest.ChatRequest(t), "tools", ""},
		{"responses to responses", responsesReq, responses.New(), spectest.ResponsesRequest(t), "tools",
			`[{"type":"web_search","search_context_size":"low"},{"type":"function","name":"f","parameters":{"type":"object","properties":{}},"strict":false}]`},
		{"responses to anthropic", responsesReq, anthropic.New(), spectest.AnthropicRequest(t), "tools.#.name", `["f"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := tt.provider.AppendRequest(nil, tt.req(t), &translate.Options{UpstreamModel: "m"})
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.validate(out); err != nil {
				t.Errorf("upstream body fails its spec: %v\n%s", err, out)
			}
			if diff := cmp.Diff(tt.want, gjson.GetBytes(out, tt.path).Raw); diff != "" {
				t.Errorf("%s (-want +got):\n%s\nbody: %s", tt.path, diff, out)
			}
		})
	}
}
