package translate_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// TestTurn: a turn's events become the assistant message the next request carries, its
// finish reason (normalised for tool calls), its last usage and its first error.
func TestTurn(t *testing.T) {
	boom := &translate.UpstreamError{Status: 500, Message: "first"}
	tests := []struct {
		name       string
		events     []translate.Event
		wantMsg    translate.Message
		wantFinish string
		wantUsage  translate.Usage
		wantErr    *translate.UpstreamError
	}{
		{
			name:       "no events",
			wantMsg:    translate.Message{Role: translate.RoleAssistant},
			wantFinish: translate.FinishStop,
		},
		{
			name: "text, reasoning and refusal",
			events: []translate.Event{
				{Kind: translate.EventStart, ID: "r1", Model: "m"},
				{Kind: translate.EventReasoningDelta, Text: "think"},
				{Kind: translate.EventTextDelta, Text: "Hel"},
				{Kind: translate.EventRefusalDelta, Text: "no"},
				{Kind: translate.EventReasoningDelta, Text: "ing"},
				{Kind: translate.EventTextDelta, Text: "lo"},
				{Kind: translate.EventUsage, Usage: translate.Usage{PromptTokens: 1}},
				{Kind: translate.EventUsage, Usage: translate.Usage{PromptTokens: 3, CompletionTokens: 2}},
				{Kind: translate.EventFinish, FinishReason: translate.FinishLength},
				{Kind: translate.EventFinish, FinishReason: translate.FinishStop},
			},
			wantMsg: translate.Message{Role: translate.RoleAssistant, Reasoning: "thinking", Refusal: "no",
				Content: []translate.Part{{Type: translate.PartText, Text: "Hello"}}},
			wantFinish: translate.FinishLength,
			wantUsage:  translate.Usage{PromptTokens: 3, CompletionTokens: 2},
		},
		{
			name: "tool calls by index, stop becomes tool_calls",
			events: []translate.Event{
				{Kind: translate.EventToolCallStart, Index: 4, CallID: "c1", Name: "a"},
				{Kind: translate.EventToolCallStart, Index: 7, CallID: "c2", Name: "b"},
				{Kind: translate.EventToolCallArgsDelta, Index: 7, Text: `{"x"`},
				{Kind: translate.EventToolCallArgsDelta, Index: 4, Text: ` `},
				{Kind: translate.EventToolCallArgsDelta, Index: 7, Text: `:1}`},
				{Kind: translate.EventToolCallArgsDelta, Index: 9, Text: `lost`},
				{Kind: translate.EventToolCallEnd, Index: 4},
				{Kind: translate.EventToolCallEnd, Index: 7},
				{Kind: translate.EventFinish, FinishReason: translate.FinishStop},
			},
			wantMsg: translate.Message{Role: translate.RoleAssistant, ToolCalls: []translate.ToolCall{
				{ID: "c1", Name: "a", Arguments: " " + translate.NoArguments},
				{ID: "c2", Name: "b", Arguments: `{"x":1}`},
			}},
			wantFinish: translate.FinishToolCalls,
		},
		{
			name: "tool call without finish",
			events: []translate.Event{
				{Kind: translate.EventToolCallStart, Index: 0, CallID: "c1", Name: "a"},
			},
			wantMsg: translate.Message{Role: translate.RoleAssistant, ToolCalls: []translate.ToolCall{
				{ID: "c1", Name: "a", Arguments: translate.NoArguments},
			}},
			wantFinish: translate.FinishToolCalls,
		},
		{
			name: "tool call cut by length keeps length",
			events: []translate.Event{
				{Kind: translate.EventToolCallStart, Index: 0, CallID: "c1", Name: "a"},
				{Kind: translate.EventToolCallArgsDelta, Index: 0, Text: `{"x":`},
				{Kind: translate.EventFinish, FinishReason: translate.FinishLength},
			},
			wantMsg: translate.Message{Role: translate.RoleAssistant, ToolCalls: []translate.ToolCall{
				{ID: "c1", Name: "a", Arguments: `{"x":`},
			}},
			wantFinish: translate.FinishLength,
		},
		{
			name: "other choices ignored, usage and errors kept",
			events: []translate.Event{
				{Kind: translate.EventTextDelta, Choice: 1, Text: "other"},
				{Kind: translate.EventToolCallStart, Choice: 1, Index: 0, CallID: "c9", Name: "z"},
				{Kind: translate.EventFinish, Choice: 1, FinishReason: translate.FinishContentFilter},
				{Kind: translate.EventTextDelta, Text: "mine"},
				{Kind: translate.EventError, Choice: 1, Err: boom},
				{Kind: translate.EventError, Err: &translate.UpstreamError{Status: 502, Message: "second"}},
				{Kind: translate.EventUsage, Choice: 1, Usage: translate.Usage{CompletionTokens: 5}},
			},
			wantMsg: translate.Message{Role: translate.RoleAssistant,
				Content: []translate.Part{{Type: translate.PartText, Text: "mine"}}},
			wantFinish: translate.FinishStop,
			wantUsage:  translate.Usage{CompletionTokens: 5},
			wantErr:    boom,
		},
		{
			name: "unknown finish reason kept",
			events: []translate.Event{
				{Kind: translate.EventFinish, FinishReason: "function_call"},
			},
			wantMsg:    translate.Message{Role: translate.RoleAssistant},
			wantFinish: "function_call",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var turn translate.Turn
			for i := range tt.events {
				turn.Add(&tt.events[i])
			}
			if diff := cmp.Diff(tt.wantMsg, turn.Message()); diff != "" {
				t.Errorf("Message (-want +got):\n%s", diff)
			}
			if got := turn.FinishReason(); got != tt.wantFinish {
				t.Errorf("FinishReason = %q, want %q", got, tt.wantFinish)
			}
			if diff := cmp.Diff(tt.wantUsage, turn.Usage()); diff != "" {
				t.Errorf("Usage (-want +got):\n%s", diff)
			}
			if got := turn.Err(); got != tt.wantErr {
				t.Errorf("Err = %v, want %v", got, tt.wantErr)
			}
		})
	}
}

// TestTurn_CopiesWhatItKeeps: the events' strings may alias a decoder's buffer, which the
// decoder reuses after the callback; the turn's message must not change with it.
func TestTurn_CopiesWhatItKeeps(t *testing.T) {
	buf := []byte("call_1 lookup {} pause")
	view := func(i, j int) string { return jsonx.View(buf[i:j]) }
	var turn translate.Turn
	for _, ev := range []translate.Event{
		{Kind: translate.EventToolCallStart, CallID: view(0, 6), Name: view(7, 13)},
		{Kind: translate.EventToolCallArgsDelta, Text: view(14, 16)},
		{Kind: translate.EventFinish, FinishReason: view(17, 22)},
	} {
		turn.Add(&ev)
	}
	for i := range buf {
		buf[i] = 'X'
	}
	want := translate.Message{Role: translate.RoleAssistant, ToolCalls: []translate.ToolCall{{ID: "call_1", Name: "lookup", Arguments: "{}"}}}
	if diff := cmp.Diff(want, turn.Message()); diff != "" {
		t.Errorf("Message (-want +got):\n%s", diff)
	}
	if got := turn.FinishReason(); got != "pause" {
		t.Errorf("FinishReason = %q", got)
	}
}
