// Package openaitest checks what the gateway sends an OpenAI client: chat chunk streams
// (CheckChunks) and Responses streams (CheckResponseEvents). It is for tests only
// (translate's goldens, proxy's end-to-end tests): it imports testing and must not be
// imported by non-test code.
package openaitest

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agate-gateway/agate/internal/sse"
)

// Usage says what a checked stream must do about usage.
type Usage uint8

const (
	// UsageRequired: exactly one usage chunk, the last, with choices [] (include_usage).
	UsageRequired Usage = iota
	// UsageNone: no chunk carries usage (include_usage off).
	UsageNone
)

// Want is what CheckChunks holds a stream to besides the invariants every stream keeps.
type Want struct {
	// Model is the model every chunk must name; "" accepts any, as long as it is
	// non-empty and the same in every chunk.
	Model string
	Usage Usage
	// ErrorEnd allows the stream to end with an in-band error frame instead of
	// data: [DONE]; after an error, finish_reason and usage are not required.
	ErrorEnd bool
	// EmptyChunks allows chunks with choices [] and no usage, such as the
	// prompt_filter_results chunk Azure sends first, which the passthrough forwards.
	EmptyChunks bool
}

// CheckChunks parses an OpenAI SSE body sent by the gateway and checks what strict
// clients check (the chunk contract in ARCHITECTURE.md): every chunk has the same
// non-empty id, created and model and object chat.completion.chunk; the first delta of
// each choice, and only that one, carries role assistant; a tool call's first delta
// carries its index, id, type function, name and arguments, later ones neither id nor
// name; tool call indexes of a choice are 0, 1, 2... in order of appearance; each choice
// has exactly one finish_reason, one of stop, length, tool_calls, content_filter; usage as
// want.Usage says; nothing follows data: [DONE] or an error frame.
func CheckChunks(t testing.TB, body []byte, want Want) {
	t.Helper()
	type toolDelta struct {
		Index    *int    `json:"index"`
		ID       *string `json:"id"`
		Type     *string `json:"type"`
		Function *struct {
			Name      *string `json:"name"`
			Arguments *string `json:"arguments"`
		} `json:"function"`
	}
	type chunk struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		Model   string `json:"model"`
		Choices []struct {
			Index int `json:"index"`
			Delta struct {
				Role      *string     `json:"role"`
				ToolCalls []toolDelta `json:"tool_calls"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage json.RawMessage `json:"usage"`
		Error json.RawMessage `json:"error"`
	}
	var p sse.Parser
	var chunks []chunk
	done, failed := false, false
	err := p.Feed(body, func(_, data []byte) error {
		if done || failed {
			t.Errorf("frame after the end: %s", data)
		}
		if string(data) == "[DONE]" {
			done = true
			return nil
		}
		var c chunk
		if err := json.NewDecoder(bytes.NewReader(data)).Decode(&c); err != nil {
			t.Errorf("chunk is not JSON: %v: %s", err, data)
			return nil
		}
		if len(c.Error) > 0 && string(c.Error) != "null" {
			if !want.ErrorEnd {
				t.Errorf("stream carries an error frame: %s", data)
			}
			failed = true
			return nil
		}
		chunks = append(chunks, c)
		return nil
	})
	if err != nil || p.Pending() {
		t.Errorf("body is not complete SSE (err %v)", err)
	}
	if !done && !failed {
		t.Errorf("stream ends with neither data: [DONE] nor an error frame:\n%s", body)
	}
	finishes := map[int]int{}
	roles := map[int]bool{}
	calls := map[int]map[int]bool{} // choice -> tool call indexes seen
	usageChunks := 0
	for i, c := range chunks {
		first := chunks[0]
		if c.ID != first.ID || c.Created != first.Created || c.Model != first.Model || c.ID == "" || c.Model == "" || c.Created == 0 {
			t.Errorf("chunk %d: id/created/model %q/%d/%q not constant and set", i, c.ID, c.Created, c.Model)
		}
		if want.Model != "" && c.Model != want.Model {
			t.Errorf("chunk %d: model %q, want %q", i, c.Model, want.Model)
		}
		if c.Object != "chat.completion.chunk" {
			t.Errorf("chunk %d: object %q", i, c.Object)
		}
		hasUsage := len(c.Usage) > 0 && string(c.Usage) != "null"
		if hasUsage {
			usageChunks++
			if want.Usage == UsageNone {
				t.Errorf("chunk %d carries usage although the client did not ask", i)
			}
			if len(c.Choices) != 0 || i != len(chunks)-1 {
				t.Errorf("usage chunk %d is not the last chunk with choices []", i)
			}
		} else if len(c.Choices) == 0 && !want.EmptyChunks {
			t.Errorf("chunk %d: no choices and no usage", i)
		}
		for _, ch := range c.Choices {
			if !roles[ch.Index] {
				if ch.Delta.Role == nil || *ch.Delta.Role != "assistant" {
					t.Errorf("chunk %d: first delta of choice %d has no role assistant", i, ch.Index)
				}
				roles[ch.Index] = true
			} else if ch.Delta.Role != nil {
				t.Errorf("chunk %d: role repeated in choice %d", i, ch.Index)
			}
			if ch.FinishReason != nil {
				finishes[ch.Index]++
				switch *ch.FinishReason {
				case "stop", "length", "tool_calls", "content_filter":
				default:
					t.Errorf("chunk %d: finish_reason %q", i, *ch.FinishReason)
				}
			}
			seen := calls[ch.Index]
			if seen == nil {
				seen = map[int]bool{}
				calls[ch.Index] = seen
			}
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Index == nil {
					t.Errorf("chunk %d: tool call delta without index", i)
					continue
				}
				if !seen[*tc.Index] {
					if *tc.Index != len(seen) {
						t.Errorf("chunk %d: tool call index %d, want %d", i, *tc.Index, len(seen))
					}
					if tc.ID == nil || *tc.ID == "" || tc.Type == nil || *tc.Type != "function" || tc.Function == nil || tc.Function.Name == nil || tc.Function.Arguments == nil {
						t.Errorf("chunk %d: first delta of tool call %d lacks id, type, name or arguments", i, *tc.Index)
					}
					seen[*tc.Index] = true
				} else if tc.ID != nil || tc.Type != nil || (tc.Function != nil && tc.Function.Name != nil) {
					t.Errorf("chunk %d: later delta of tool call %d repeats id, type or name", i, *tc.Index)
				}
			}
		}
	}
	if failed {
		return
	}
	if len(roles) == 0 {
		t.Errorf("stream has no choice")
	}
	for ch := range roles {
		if finishes[ch] != 1 {
			t.Errorf("choice %d has %d finish_reason chunks, want 1", ch, finishes[ch])
		}
	}
	if want.Usage == UsageRequired && usageChunks != 1 {
		t.Errorf("%d usage chunks, want 1", usageChunks)
	}
}
