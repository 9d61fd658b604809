package proxy

import (
	"encoding/json"
	"strings"
	"testing"

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

// checkChunkInvariants checks a raw gateway SSE body against DESIGN 3.3: every chunk has
// the same id, created and model (the client-facing name); the first delta carries the
// assistant role; a tool call's first delta carries index, id, type, name and arguments,
// later ones only index and arguments; indexes are 0,1,2...; exactly one chunk carries a
// finish_reason; with include_usage a last chunk has choices [] and usage, without it no
// chunk carries usage; the stream ends with [DONE].
func checkChunkInvariants(t testing.TB, body []byte, model string, includeUsage bool) {
	t.Helper()
	data := sseData(t, body)
	if len(data) < 2 {
		t.Fatalf("stream has %d events:\n%s", len(data), body)
	}
	if data[len(data)-1] != "[DONE]" {
		t.Errorf("stream does not end with data: [DONE]:\n%s", body)
	}
	chunks := data[:len(data)-1]
	var id string
	var created int64
	finishes, usageChunks := 0, 0
	seenCalls := map[int]bool{}
	for i, d := range chunks {
		var c struct {
			ID      string            `json:"id"`
			Object  string            `json:"object"`
			Created int64             `json:"created"`
			Model   string            `json:"model"`
			Choices []json.RawMessage `json:"choices"`
			Usage   json.RawMessage   `json:"usage"`
			Error   json.RawMessage   `json:"error"`
		}
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatalf("chunk %d is not JSON: %v: %s", i, err, d)
		}
		if c.Error != nil {
			t.Errorf("chunk %d is an error: %s", i, d)
			continue
		}
		if i == 0 {
			id, created = c.ID, c.Created
			if id == "" || created == 0 {
				t.Errorf("first chunk has id %q created %d", id, created)
			}
		}
		if c.ID != id || c.Created != created || c.Model != model || c.Object != "chat.completion.chunk" {
			t.Errorf("chunk %d: id %q created %d model %q object %q, want %q %d %q chat.completion.chunk", i, c.ID, c.Created, c.Model, c.Object, id, created, model)
		}
		hasUsage := len(c.Usage) > 0 && string(c.Usage) != "null"
		if hasUsage {
			usageChunks++
			if !includeUsage {
				t.Errorf("chunk %d carries usage although the client did not ask: %s", i, d)
			}
			if len(c.Choices) != 0 || i != len(chunks)-1 {
				t.Errorf("usage chunk %d is not the last chunk with choices []: %s", i, d)
			}
		}
		for _, raw := range c.Choices {
			var ch struct {
				Delta struct {
					Role      *string `json:"role"`
					ToolCalls []map[string]json.RawMessage
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			}
			if err := json.Unmarshal(raw, &ch); err != nil {
				t.Fatalf("chunk %d choice: %v", i, err)
			}
			if i == 0 && (ch.Delta.Role == nil || *ch.Delta.Role != "assistant") {
				t.Errorf("first chunk's delta lacks role assistant: %s", d)
			}
			if ch.FinishReason != nil {
				finishes++
				switch *ch.FinishReason {
				case "stop", "length", "tool_calls", "content_filter":
				default:
					t.Errorf("chunk %d: finish_reason %q", i, *ch.FinishReason)
				}
			}
			for _, tc := range ch.Delta.ToolCalls {
				var index int
				if err := json.Unmarshal(tc["index"], &index); err != nil {
					t.Errorf("chunk %d: tool call without index: %s", i, d)
					continue
				}
				fn := map[string]json.RawMessage{}
				_ = json.Unmarshal(tc["function"], &fn)
				if !seenCalls[index] {
					if index != len(seenCalls) {
						t.Errorf("chunk %d: tool call index %d, want %d", i, index, len(seenCalls))
					}
					seenCalls[index] = true
					if tc["id"] == nil || string(tc["type"]) != `"function"` || fn["name"] == nil || fn["arguments"] == nil {
						t.Errorf("chunk %d: first delta of tool call %d lacks id, type, name or arguments: %s", i, index, d)
					}
				} else if tc["id"] != nil || fn["name"] != nil {
					t.Errorf("chunk %d: later delta of tool call %d repeats id or name: %s", i, index, d)
				}
			}
		}
	}
	if finishes != 1 {
		t.Errorf("%d chunks carry a finish_reason, want 1", finishes)
	}
	if includeUsage && usageChunks != 1 {
		t.Errorf("%d usage chunks, want 1", usageChunks)
	}
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
