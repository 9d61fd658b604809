package proxy_test

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agate-gateway/agate/internal/gatewaytest"
)

// TestResponses_NamespaceToolRoundTrip: a namespace tool (Codex's multi-agent tools) on a
// translated backend: its functions reach the upstream as plain tools under their flat
// names, the model's call of one comes back to openai-go as a function_call with the
// function's name and namespace, and that item sent back with its output goes upstream
// under the flat name again.
func TestResponses_NamespaceToolRoundTrip(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	const flat = "multi_agent_v1__spawn_agent"
	tools := []responses.ToolUnionParam{
		{OfFunction: &responses.FunctionToolParam{Name: "exec_command", Strict: openai.Bool(false),
			Parameters: map[string]any{"type": "object", "properties": map[string]any{"cmd": map[string]any{"type": "string"}}}}},
		responses.ToolParamOfNamespace("Tools for spawning and managing sub-agents.", "multi_agent_v1", []responses.NamespaceToolToolUnionParam{
			{OfFunction: &responses.NamespaceToolToolFunctionParam{Name: "spawn_agent", Strict: openai.Bool(false),
				Parameters: map[string]any{"type": "object", "properties": map[string]any{"message": map[string]any{"type": "string"}}}}},
		}),
	}
	for _, kind := range []string{"anthropic", "gemini", "openai"} {
		t.Run(kind, func(t *testing.T) {
			g := startResponsesGateway(t, kind, "")
			g.script(gatewaytest.Turn{Calls: []gatewaytest.Call{{Name: flat, Args: `{"message":"hi"}`}}}, gatewaytest.Turn{Text: "the agent is spawned"})
			c := g.client("alice-key")
			ctx := context.Background()
			first := "spawn an agent"
			resp, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "m", Input: textInput(first), Tools: tools, Store: openai.Bool(false)})
			if err != nil {
				t.Fatalf("turn 1: %v", err)
			}
			call := lastFunctionCall(resp)
			if call == nil || call.Name != "spawn_agent" || call.Namespace != "multi_agent_v1" || call.Arguments != `{"message":"hi"}` {
				t.Fatalf("turn 1 output has no spawn_agent call in namespace multi_agent_v1: %s", resp.RawJSON())
			}
			fc := responses.ResponseInputItemParamOfFunctionCall(call.Arguments, call.CallID, call.Name)
			fc.OfFunctionCall.Namespace = openai.String(call.Namespace)
			input := responses.ResponseInputParam{
				responses.ResponseInputItemParamOfMessage(first, responses.EasyInputMessageRoleUser),
				fc,
				responses.ResponseInputItemParamOfFunctionCallOutput("spawned agent-7"),
			}
			input[2].OfFunctionCallOutput.CallID = openai.String(call.CallID)
			resp2, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "m",
				Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}, Tools: tools, Store: openai.Bool(false)})
			if err != nil {
				t.Fatalf("turn 2: %v", err)
			}
			if got := resp2.OutputText(); got != "the agent is spawned" {
				t.Errorf("turn 2 text %q", got)
			}
			b := g.upstreamBodies()
			if len(b) != 2 {
				t.Fatalf("upstream saw %d requests, want 2", len(b))
			}
			// Turn 1 declares the flat name; turn 2 declares it and names it in the call
			// (and Gemini in the functionResponse too).
			if n := strings.Count(b[0], `"`+flat+`"`); n != 1 || strings.Contains(b[0], "namespace") {
				t.Errorf("turn 1 upstream body names %s %d times (want 1, no namespace):\n%s", flat, n, b[0])
			}
			if n := strings.Count(b[1], `"`+flat+`"`); n < 2 || !strings.Contains(b[1], "spawned agent-7") {
				t.Errorf("turn 2 upstream body names %s %d times (want 2 or more) or lacks the output:\n%s", flat, n, b[1])
			}
		})
	}
}

// TestResponses_CodexCacheKeyAndClientMetadata: Codex CLI's prompt_cache_key and
// client_metadata are no 400 on a translated backend without drop_unsupported_params: the
// cache key reaches an OpenAI chat upstream (same field) and is echoed; client_metadata
// reaches no translated upstream.
func TestResponses_CodexCacheKeyAndClientMetadata(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	for _, kind := range []string{"anthropic", "gemini", "openai"} {
		t.Run(kind, func(t *testing.T) {
			g := startResponsesGateway(t, kind, "")
			g.script(gatewaytest.Turn{Text: "hello"})
			c := g.client("alice-key")
			resp, err := c.Responses.New(context.Background(), responses.ResponseNewParams{Model: "m", Input: textInput("hi"),
				PromptCacheKey: openai.String("session-01a2")},
				option.WithJSONSet("client_metadata", map[string]string{"x-codex-installation-id": "install-2d22", "session_id": "session-01a2"}))
			if err != nil {
				t.Fatalf("responses.create: %v", err)
			}
			if resp.OutputText() != "hello" || resp.PromptCacheKey != "session-01a2" {
				t.Errorf("text %q, prompt_cache_key %q echoed", resp.OutputText(), resp.PromptCacheKey)
			}
			b := g.upstreamBodies()
			if len(b) != 1 {
				t.Fatalf("upstream saw %d requests", len(b))
			}
			wantKey := kind == "openai"
			if strings.Contains(b[0], `"prompt_cache_key":"session-01a2"`) != wantKey || strings.Contains(b[0], "install-2d22") {
				t.Errorf("upstream body (prompt_cache_key wanted: %v, client_metadata never):\n%s", wantKey, b[0])
			}
		})
	}
}
