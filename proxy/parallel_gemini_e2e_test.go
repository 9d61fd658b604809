package proxy_test

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/tidwall/gjson"
)

// TestGemini_ParallelToolCallsFalse: a client asking Gemini for one tool call at a time
// (parallel_tool_calls: false) is served, streamed and not, with the recorded turn of two
// parallel function calls: the SDK sees only the first call, and the next turn's upstream
// history holds that one call, with its thought signature, and its one response.
func TestGemini_ParallelToolCallsFalse(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	recorded := map[bool]replay{
		true:  {200, "text/event-stream", goldenSection(t, "gemini", "stream-parallel-function-calls.mirascope.txtar", "upstream.sse")},
		false: {200, "application/json", goldenSection(t, "gemini", "json-parallel-function-calls.mirascope.txtar", "upstream.json")},
	}
	for _, stream := range []bool{true, false} {
		name := map[bool]string{true: "stream", false: "non-stream"}[stream]
		t.Run(name, func(t *testing.T) {
			g := startGatewayFor(t, "gemini")
			g.up.push(recorded[stream], recorded[stream])
			c := g.client()
			params := openai.ChatCompletionNewParams{
				Model:             "client-model",
				Messages:          []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Retrieve the secrets for mellon and radiance.")},
				ParallelToolCalls: openai.Bool(false),
				Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
					Name: "secret_retrieval_tool", Parameters: openai.FunctionParameters{"type": "object",
						"properties": map[string]any{"password": map[string]any{"type": "string"}}}})},
			}
			ask := func() (msg openai.ChatCompletionMessage, finish string, err error) {
				if !stream {
					resp, err := c.Chat.Completions.New(context.Background(), params)
					if err != nil {
						return msg, "", err
					}
					return resp.Choices[0].Message, resp.Choices[0].FinishReason, nil
				}
				s := c.Chat.Completions.NewStreaming(context.Background(), params)
				var acc openai.ChatCompletionAccumulator
				for s.Next() {
					acc.AddChunk(s.Current())
				}
				if err := s.Err(); err != nil {
					return msg, "", err
				}
				return acc.Choices[0].Message, acc.Choices[0].FinishReason, nil
			}
			msg, finish, err := ask()
			if err != nil {
				t.Fatalf("turn 1: %v", err)
			}
			if len(msg.ToolCalls) != 1 || !strings.Contains(msg.ToolCalls[0].Function.Arguments, "mellon") {
				t.Fatalf("turn 1 tool calls = %+v, want only the first (mellon)", msg.ToolCalls)
			}
			if finish != "tool_calls" {
				t.Errorf("finish_reason = %q, want tool_calls", finish)
			}

			params.Messages = append(params.Messages, msg.ToParam(), openai.ToolMessage("Welcome!", msg.ToolCalls[0].ID))
			if _, _, err := ask(); err != nil {
				t.Fatalf("turn 2: %v", err) // its answer is the recording again; the request matters
			}
			seen := g.up.seen()
			if len(seen) != 2 {
				t.Fatalf("upstream saw %d requests, want 2", len(seen))
			}
			body := seen[1].body
			model := gjson.Get(body, "contents.1")
			if n := len(model.Get("parts").Array()); model.Get("role").Str != "model" || n != 1 ||
				model.Get("parts.0.functionCall.args.password").Str != "mellon" || !model.Get("parts.0.thoughtSignature").Exists() {
				t.Errorf("turn 2 model turn = %s, want the one call the client saw, with its thought signature", model.Raw)
			}
			if n := len(gjson.Get(body, "contents.2.parts").Array()); n != 1 || !gjson.Get(body, "contents.2.parts.0.functionResponse").Exists() {
				t.Errorf("turn 2 user turn = %s, want one functionResponse", gjson.Get(body, "contents.2").Raw)
			}
		})
	}
}
