package spectest

import (
	"encoding/json"
	"fmt"
	"testing"
)

// The request checks below are what each upstream dialect's request bodies must satisfy.
// Each first makes sure its schema rejects a few invalid bodies, so that a schema trimmed
// too far cannot pass everything.

// AnthropicRequest checks a body against the Messages API's CreateMessageParams.
func AnthropicRequest(t testing.TB) func(body []byte) error {
	t.Helper()
	s := Schema(t, "anthropic/messages.json", "#/components/schemas/CreateMessageParams")
	MustRejectInvalid(t, s, `{"model":"claude","messages":"nope"}`)
	MustRejectInvalid(t, s, `{"model":"claude","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`)
	return func(body []byte) error { return Validate(s, body) }
}

// GeminiRequest checks a body against generateContent's GenerateContentRequest.
func GeminiRequest(t testing.TB) func(body []byte) error {
	t.Helper()
	s := Schema(t, "gemini/generate-content.json", "#/components/schemas/GenerateContentRequest")
	MustRejectInvalid(t, s, `{"contents":[{"role":"user","parts":"nope"}]}`)
	MustRejectInvalid(t, s, `{"contents":[],"generationConfig":{"thinkingConfig":{"thinking_budget":1}}}`)
	return func(body []byte) error { return Validate(s, body) }
}

// ChatRequest checks a body against OpenAI's CreateChatCompletionRequest.
func ChatRequest(t testing.TB) func(body []byte) error {
	t.Helper()
	s := Schema(t, "openai/chat-and-responses.json", "#/components/schemas/CreateChatCompletionRequest")
	return func(body []byte) error { return Validate(s, body) }
}

// ResponsesRequest checks a body against OpenAI's CreateResponse. Input messages with a
// content list are checked as EasyInputMessage on their own (the spec's oneOf over input
// items cannot tell them apart from output messages), then with their content emptied.
func ResponsesRequest(t testing.TB) func(body []byte) error {
	t.Helper()
	const spec = "openai/chat-and-responses.json"
	s := Schema(t, spec, "#/components/schemas/CreateResponse")
	msg := Schema(t, spec, "#/components/schemas/EasyInputMessage")
	MustRejectInvalid(t, s, `{"model":"gpt-4o","input":[{"type":"no_such_item"}],"temperature":"hot"}`)
	// Bodies shaped like ours but broken where we take care (tools, tool_choice, images).
	MustRejectInvalid(t, s, `{"model":"gpt-4o","input":"hi","tools":[{"type":"function","name":"f"}]}`)
	MustRejectInvalid(t, s, `{"model":"gpt-4o","input":"hi","tool_choice":{"type":"function","function":{"name":"f"}}}`)
	MustRejectInvalid(t, msg, `{"role":"user","content":[{"type":"input_image","image_url":"https://x/a.png"}]}`)
	return func(body []byte) error {
		var v map[string]any
		if err := json.Unmarshal(body, &v); err != nil {
			return err
		}
		in, _ := v["input"].([]any)
		for i, it := range in {
			m, _ := it.(map[string]any)
			if _, list := m["content"].([]any); !list || m["role"] == nil {
				continue
			}
			b, _ := json.Marshal(m)
			if err := Validate(msg, b); err != nil {
				return fmt.Errorf("input[%d]: %w", i, err)
			}
			m["content"] = ""
		}
		b, _ := json.Marshal(v)
		return Validate(s, b)
	}
}
