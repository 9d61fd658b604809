package mock

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/translate"
)

func text(role, s string) translate.Message {
	return translate.Message{Role: role, Content: []translate.Part{{Type: translate.PartText, Text: s}}}
}

// TestAnswer: the mock echoes the last user message word by word, calls a tool the
// message names unless tool_choice is none, answers tool results with them; usage counts
// words.
func TestAnswer(t *testing.T) {
	weather := []translate.Tool{{Name: "get_weather"}, {Name: "get_time"}}
	tests := []struct {
		name string
		req  translate.Request
		want []translate.Event
	}{
		{name: "echo", req: translate.Request{Messages: []translate.Message{text(translate.RoleSystem, "be brief"), text(translate.RoleUser, "hello  mock world")}},
			want: []translate.Event{
				{Kind: translate.EventStart, ID: "mock-1", Model: "m"},
				{Kind: translate.EventTextDelta, Text: "hello"},
				{Kind: translate.EventTextDelta, Text: " mock"},
				{Kind: translate.EventTextDelta, Text: " world"},
				{Kind: translate.EventUsage, Usage: translate.Usage{PromptTokens: 5, CompletionTokens: 3}},
				{Kind: translate.EventFinish, FinishReason: translate.FinishStop},
			}},
		{name: "a named tool is called", req: translate.Request{Tools: weather, Messages: []translate.Message{text(translate.RoleUser, "use get_time please")}},
			want: []translate.Event{
				{Kind: translate.EventStart, ID: "mock-1", Model: "m"},
				{Kind: translate.EventToolCallStart, CallID: "call_mock_get_time", Name: "get_time"},
				{Kind: translate.EventToolCallArgsDelta, Text: "{}"},
				{Kind: translate.EventToolCallEnd},
				{Kind: translate.EventUsage, Usage: translate.Usage{PromptTokens: 3, CompletionTokens: 1}},
				{Kind: translate.EventFinish, FinishReason: translate.FinishToolCalls},
			}},
		{name: "tool_choice none echoes", req: translate.Request{Tools: weather, ToolChoice: translate.ToolChoice{Mode: translate.ToolChoiceNone},
			Messages: []translate.Message{text(translate.RoleUser, "get_time")}},
			want: []translate.Event{
				{Kind: translate.EventStart, ID: "mock-1", Model: "m"},
				{Kind: translate.EventTextDelta, Text: "get_time"},
				{Kind: translate.EventUsage, Usage: translate.Usage{PromptTokens: 1, CompletionTokens: 1}},
				{Kind: translate.EventFinish, FinishReason: translate.FinishStop},
			}},
		{name: "tool results", req: translate.Request{Messages: []translate.Message{text(translate.RoleUser, "go"), text(translate.RoleTool, "sunny"), text(translate.RoleTool, "noon")}},
			want: []translate.Event{
				{Kind: translate.EventStart, ID: "mock-1", Model: "m"},
				{Kind: translate.EventTextDelta, Text: "Tool"},
				{Kind: translate.EventTextDelta, Text: " results:"},
				{Kind: translate.EventTextDelta, Text: " noon"},
				{Kind: translate.EventTextDelta, Text: " sunny"},
				{Kind: translate.EventUsage, Usage: translate.Usage{PromptTokens: 3, CompletionTokens: 4}},
				{Kind: translate.EventFinish, FinishReason: translate.FinishStop},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []translate.Event
			err := New().Answer(context.Background(), &tt.req, "m", func(ev *translate.Event) error {
				got = append(got, *ev)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAnswer_Stops: Answer returns the first error emit returns, and ctx's once it ended.
func TestAnswer_Stops(t *testing.T) {
	req := &translate.Request{Messages: []translate.Message{text(translate.RoleUser, "a b c")}}
	stop := errors.New("stop")
	n := 0
	err := New().Answer(context.Background(), req, "m", func(*translate.Event) error {
		if n++; n == 2 {
			return stop
		}
		return nil
	})
	if err != stop || n != 2 {
		t.Errorf("Answer = %v after %d events, want stop after 2", err, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := New().Answer(ctx, req, "m", func(*translate.Event) error { return nil }); err != context.Canceled {
		t.Errorf("Answer with an ended context = %v", err)
	}
}
