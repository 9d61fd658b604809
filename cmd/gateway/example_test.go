package main

import (
	"context"
	"regexp"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/agate-gateway/agate/internal/gatewaytest"
)

// TestExample_ToolLoop: examples/tool-loop.yaml, the README's first tool loop, runs as it
// says: the demo key's request makes the mock call the built-in clock, the gateway run it,
// and the answer hold the time, in one response.
func TestExample_ToolLoop(t *testing.T) {
	g := gatewaytest.StartFile(t, "../../examples/tool-loop.yaml", gatewaytest.Options{Tools: true})
	client := gatewaytest.OpenAI(g.V1(), "sk-demo-agent")
	r, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "demo", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("what time is it?")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Choices[0].Message.Content; !regexp.MustCompile(`^Tool results: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`).MatchString(got) {
		t.Errorf("answer %q, want the clock's time", got)
	}
}
