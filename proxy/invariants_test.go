package proxy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/internal/openaitest"

	"github.com/openai/openai-go/v3"
)

// The views below are what tests compare of SDK values: the fields a client reads, as
// plain data that go-cmp can diff (the SDK types carry unexported JSON metadata).

type chunkView struct {
	ID      string
	Object  string
	Created int64
	Model   string
	Choices []choiceView
	Usage   *usageView
}

type choiceView struct {
	Index        int64
	Role         string
	Content      string
	Refusal      string
	ToolCalls    []toolCallView
	FinishReason string
}

type toolCallView struct {
	Index     int64
	ID        string
	Type      string
	Name      string
	Arguments string
}

type usageView struct {
	Prompt, Completion, Total, Cached, Reasoning int64
}

func viewChunk(c openai.ChatCompletionChunk) chunkView {
	v := chunkView{ID: c.ID, Object: string(c.Object), Created: c.Created, Model: c.Model}
	for _, ch := range c.Choices {
		cv := choiceView{Index: ch.Index, Role: ch.Delta.Role, Content: ch.Delta.Content, Refusal: ch.Delta.Refusal, FinishReason: ch.FinishReason}
		for _, tc := range ch.Delta.ToolCalls {
			cv.ToolCalls = append(cv.ToolCalls, toolCallView{Index: tc.Index, ID: tc.ID, Type: tc.Type, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		v.Choices = append(v.Choices, cv)
	}
	if c.JSON.Usage.Valid() {
		v.Usage = viewUsage(c.Usage)
	}
	return v
}

func viewUsage(u openai.CompletionUsage) *usageView {
	return &usageView{Prompt: u.PromptTokens, Completion: u.CompletionTokens, Total: u.TotalTokens,
		Cached: u.PromptTokensDetails.CachedTokens, Reasoning: u.CompletionTokensDetails.ReasoningTokens}
}

type completionView struct {
	ID      string
	Object  string
	Created int64
	Model   string
	Choices []choiceView
	Usage   *usageView
}

func viewCompletion(c *openai.ChatCompletion) completionView {
	v := completionView{ID: c.ID, Object: string(c.Object), Created: c.Created, Model: c.Model}
	for _, ch := range c.Choices {
		cv := choiceView{Index: ch.Index, Role: string(ch.Message.Role), Content: ch.Message.Content, Refusal: ch.Message.Refusal, FinishReason: ch.FinishReason}
		for i, tc := range ch.Message.ToolCalls {
			cv.ToolCalls = append(cv.ToolCalls, toolCallView{Index: int64(i), ID: tc.ID, Type: tc.Type, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		v.Choices = append(v.Choices, cv)
	}
	if c.JSON.Usage.Valid() {
		v.Usage = viewUsage(c.Usage)
	}
	return v
}

// checkChunkInvariants checks a raw gateway SSE body against the chunk contract
// (openaitest.CheckChunks): every chunk names model, and with includeUsage a last chunk
// has choices [] and usage, without it no chunk carries usage; no error frame; chunks
// without choices (Azure's prompt filter results) pass.
func checkChunkInvariants(t testing.TB, body []byte, model string, includeUsage bool) {
	t.Helper()
	usage := openaitest.UsageNone
	if includeUsage {
		usage = openaitest.UsageRequired
	}
	openaitest.CheckChunks(t, body, openaitest.Want{Model: model, Usage: usage, EmptyChunks: true})
}

// upstreamChunks returns the recorded chunks as the SDK would read them, renamed to
// model, without the usage chunk unless includeUsage.
func upstreamChunks(t testing.TB, sse []byte, model string, includeUsage bool) []chunkView {
	t.Helper()
	var out []chunkView
	for _, d := range sseData(t, sse) {
		if d == "[DONE]" {
			continue
		}
		var c openai.ChatCompletionChunk
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatal(err)
		}
		if len(c.Choices) == 0 && c.JSON.Usage.Valid() && !includeUsage {
			continue
		}
		v := viewChunk(c)
		v.Model = model
		out = append(out, v)
	}
	return out
}

func jsonString(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func indent(s string) string { return "\t" + strings.ReplaceAll(s, "\n", "\n\t") }
