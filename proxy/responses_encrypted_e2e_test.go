package proxy_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/anthropic"
)

// recordedFixture reads a recording of testdata/fixtures (provenance in its SOURCES.md).
func recordedFixture(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "fixtures", rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// anthropicBlocks returns the thinking and redacted_thinking blocks of a recorded
// Anthropic answer as a request must send them back: {type, thinking, signature} or
// {type, data}.
func anthropicBlocks(t *testing.T, body []byte, stream bool) []map[string]string {
	t.Helper()
	var out []map[string]string
	emit := func(ev *translate.Event) error {
		if ev.Kind == translate.EventReasoningBlock {
			b := ev.Block
			if b.Type == "thinking" {
				out = append(out, map[string]string{"type": b.Type, "thinking": b.Thinking, "signature": b.Signature})
			} else {
				out = append(out, map[string]string{"type": b.Type, "data": b.Data})
			}
		}
		return nil
	}
	p := anthropic.New()
	if !stream {
		if err := p.DecodeResponse(body, emit); err != nil {
			t.Fatal(err)
		}
		return out
	}
	dec := p.NewStreamDecoder(&translate.Options{Stream: true})
	for _, ev := range strings.Split(string(body), "\n\n") {
		typ, data := "", ""
		for _, line := range strings.Split(ev, "\n") {
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				typ = v
			} else if v, ok := strings.CutPrefix(line, "data: "); ok {
				data = v
			}
		}
		if data != "" {
			if err := dec.Event([]byte(typ), []byte(data), emit); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := dec.Close(emit); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestResponses_EncryptedReasoningRoundTrip: a stateless openai-go Responses client
// (store: false, include reasoning.encrypted_content) on an Anthropic or Gemini backend
// gets the upstream's opaque state in its reasoning items' encrypted_content and plain
// call ids; sending the items back with its function call outputs, the next upstream
// request carries Claude's thinking blocks with their signatures, or Gemini's thought
// signature, exactly as recorded.
func TestResponses_EncryptedReasoningRoundTrip(t *testing.T) {
	t.Parallel() // its own gateway, fakes and servers (#54)
	tests := []struct {
		name, kind  string
		stream      bool
		contentType string
		turn1       func(t *testing.T) []byte
		// check inspects the upstream body of turn 2.
		check func(t *testing.T, turn1 []byte, body string)
	}{
		{name: "anthropic stream, thinking and redacted_thinking before tool_use", kind: "anthropic", stream: true, contentType: "text/event-stream",
			turn1: func(t *testing.T) []byte {
				return goldenSection(t, "anthropic", "stream-thinking-tool-use.txtar", "upstream.sse")
			},
			check: func(t *testing.T, turn1 []byte, body string) {
				checkAnthropicBlocks(t, anthropicBlocks(t, turn1, true), body)
			}},
		{name: "anthropic recorded body, thinking before tool_use", kind: "anthropic", contentType: "application/json",
			turn1: func(t *testing.T) []byte {
				return recordedFixture(t, "anthropic/vercel-chunks/issue-13430-thinking-tool-call.json")
			},
			check: func(t *testing.T, turn1 []byte, body string) {
				checkAnthropicBlocks(t, anthropicBlocks(t, turn1, false), body)
			}},
		{name: "gemini 3 recorded stream, thought signature on the call", kind: "gemini", stream: true, contentType: "text/event-stream",
			turn1: func(t *testing.T) []byte {
				return reframe(recordedFixture(t, "gemini/vercel-chunks/google-tool-call-gemini3.chunks.txt"), false)
			},
			check: func(t *testing.T, turn1 []byte, body string) {
				first, _, _ := strings.Cut(string(turn1), "\r\n")
				want := gjson.Get(strings.TrimPrefix(first, "data: "), "candidates.0.content.parts.0.thoughtSignature").Str
				if want == "" {
					t.Fatal("the recording has no thoughtSignature")
				}
				model := gjson.Get(body, "contents.1")
				if got := model.Get("parts.0.thoughtSignature").Str; model.Get("role").Str != "model" || got != want {
					t.Errorf("turn 2's functionCall signature = %.40q..., want %.40q...:\n%.1500s", got, want, body)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := startGatewayFor(t, tt.kind)
			turn1 := tt.turn1(t)
			g.up.push(replay{200, tt.contentType, turn1}, replay{200, tt.contentType, turn1})
			c := g.client()
			tool := responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{Name: "weather", Strict: openai.Bool(false),
				Parameters: map[string]any{"type": "object"}}}
			params := responses.ResponseNewParams{Model: "client-model", Input: textInput("use the tool"), Store: openai.Bool(false),
				Include:   []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent},
				Reasoning: responses.ReasoningParam{Effort: responses.ReasoningEffortHigh}, Tools: []responses.ToolUnionParam{tool}}
			var output []responses.ResponseOutputItemUnion
			if tt.stream {
				s := streamResponse(t, c, params)
				if s.err != nil || s.final == nil {
					t.Fatalf("turn 1: %v", s.err)
				}
				output = s.final.Output
			} else {
				resp, err := c.Responses.New(context.Background(), params)
				if err != nil {
					t.Fatalf("turn 1: %v", err)
				}
				output = resp.Output
			}
			input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("use the tool", responses.EasyInputMessageRoleUser)}
			sealed, calls := 0, 0
			for _, item := range output {
				switch item.Type {
				case "reasoning":
					r := item.AsReasoning()
					if !strings.HasPrefix(r.EncryptedContent, translate.SealedPrefix+tt.kind+".") {
						t.Errorf("reasoning item %s: encrypted_content %.40q does not name %s", r.ID, r.EncryptedContent, tt.kind)
						continue
					}
					sealed++
					var summary []responses.ResponseReasoningItemSummaryParam
					for _, p := range r.Summary {
						summary = append(summary, responses.ResponseReasoningItemSummaryParam{Text: p.Text})
					}
					in := responses.ResponseInputItemParamOfReasoning(r.ID, summary)
					in.OfReasoning.EncryptedContent = openai.String(r.EncryptedContent)
					input = append(input, in)
				case "message":
					input = append(input, responses.ResponseInputItemParamOfMessage(item.AsMessage().Content[0].Text, responses.EasyInputMessageRoleAssistant))
				case "function_call":
					fc := item.AsFunctionCall()
					if strings.Contains(fc.CallID, translate.CarrySep) {
						t.Errorf("call_id %q carries state; it rides in encrypted_content", fc.CallID)
					}
					input = append(input, responses.ResponseInputItemParamOfFunctionCall(fc.Arguments, fc.CallID, fc.Name))
					out := responses.ResponseInputItemParamOfFunctionCallOutput("sunny")
					out.OfFunctionCallOutput.CallID = openai.String(fc.CallID)
					input = append(input, out)
					calls++
				}
			}
			if sealed == 0 || calls == 0 {
				t.Fatalf("turn 1 has %d sealed reasoning items and %d function calls", sealed, calls)
			}
			params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: input}
			if tt.stream {
				if s := streamResponse(t, c, params); s.err != nil || s.final == nil {
					t.Fatalf("turn 2: %v", s.err)
				}
			} else if _, err := c.Responses.New(context.Background(), params); err != nil {
				t.Fatalf("turn 2: %v", err)
			}
			seen := g.up.seen()
			if len(seen) != 2 {
				t.Fatalf("upstream saw %d requests, want 2", len(seen))
			}
			body := seen[1].body
			tt.check(t, turn1, body)
			if strings.Contains(body, translate.CarrySep) || strings.Contains(body, translate.SealedPrefix) {
				t.Errorf("turn 2 leaks the gateway's encoding upstream:\n%.1500s", body)
			}
		})
	}
}

// checkAnthropicBlocks checks that the assistant turn of an Anthropic request body opens
// with want, field for field.
func checkAnthropicBlocks(t *testing.T, want []map[string]string, body string) {
	t.Helper()
	if len(want) == 0 {
		t.Fatal("the recording has no thinking blocks")
	}
	var req struct {
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	for _, m := range req.Messages {
		if m.Role != "assistant" {
			continue
		}
		var got []map[string]string
		for _, c := range m.Content {
			var b map[string]any
			json.Unmarshal(c, &b)
			if b["type"] != "thinking" && b["type"] != "redacted_thinking" {
				break
			}
			s := map[string]string{}
			for k, v := range b {
				s[k], _ = v.(string)
			}
			got = append(got, s)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("turn 2's thinking blocks (-recorded +sent):\n%s", diff)
		}
		return
	}
	t.Errorf("turn 2 has no assistant message:\n%.1500s", body)
}

// TestResponses_SealedItemsToResponsesBackend: a conversation begun on an Anthropic model
// with encrypted content included goes on on a responses-backend model: the reasoning
// items Agate sealed for Claude, which OpenAI could not read, are not forwarded (the
// request is translated instead of passed through), and the rest of the conversation is.
func TestResponses_SealedItemsToResponsesBackend(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	g := startProviderGateway(t)
	turn1 := recordedFixture(t, "anthropic/vercel-chunks/issue-13430-thinking-tool-call.json")
	answer := gatewaytest.RenderStream("responses", gatewaytest.Turn{Text: "done"}, 1)
	g.up.push(replay{200, "application/json", turn1})
	c := g.client()
	include := []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent}
	resp, err := c.Responses.New(context.Background(), responses.ResponseNewParams{Model: "client-model", Input: textInput("check"),
		Store: openai.Bool(false), Include: include, Reasoning: responses.ReasoningParam{Effort: responses.ReasoningEffortHigh}})
	if err != nil {
		t.Fatalf("turn 1: %v", err)
	}
	input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("check", responses.EasyInputMessageRoleUser)}
	for _, item := range resp.Output {
		switch item.Type {
		case "reasoning":
			r := item.AsReasoning()
			in := responses.ResponseInputItemParamOfReasoning(r.ID, nil)
			in.OfReasoning.EncryptedContent = openai.String(r.EncryptedContent)
			input = append(input, in)
		case "function_call":
			fc := item.AsFunctionCall()
			input = append(input, responses.ResponseInputItemParamOfFunctionCall(fc.Arguments, fc.CallID, fc.Name))
			out := responses.ResponseInputItemParamOfFunctionCallOutput("no errors")
			out.OfFunctionCallOutput.CallID = openai.String(fc.CallID)
			input = append(input, out)
		}
	}
	g.up.push(replay{200, "text/event-stream", []byte(answer)})
	s := streamResponse(t, c, responses.ResponseNewParams{Model: "responses-model", Store: openai.Bool(false), Include: include,
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}})
	if s.err != nil || s.final == nil || s.final.OutputText() != "done" {
		t.Fatalf("turn 2 on the responses backend: %v %+v", s.err, s.final)
	}
	seen := g.up.seen()
	if len(seen) != 1 {
		t.Fatalf("upstream saw %d requests, want 1", len(seen))
	}
	body := seen[0].body
	if strings.Contains(body, translate.SealedPrefix) || !strings.Contains(body, `"function_call_output"`) || !strings.Contains(body, "toolu_017R7ACrx7NF7sLDDtvdQ1u9") {
		t.Errorf("turn 2 upstream body:\n%.1500s", body)
	}
}
