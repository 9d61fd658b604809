package openaichat

import (
	"strings"
	"testing"

	"github.com/agate-gateway/agate/translate"
)

// TestAssembler_ResetReuse pins that an Assembler reused through Reset assembles every
// response exactly as a fresh one does, whatever the response before it held, and that
// it writes into the text buffer it kept.
func TestAssembler_ResetReuse(t *testing.T) {
	responses := map[string][]translate.Event{
		"TwoChoicesWithToolCall": {
			{Kind: translate.EventStart, ID: "a", Model: "m"},
			{Kind: translate.EventTextDelta, Text: "first answer, long enough to be kept"},
			{Kind: translate.EventReasoningDelta, Text: "thinking"},
			{Kind: translate.EventToolCallStart, Index: 0, CallID: "call_1", Name: "get_weather"},
			{Kind: translate.EventToolCallArgsDelta, Index: 0, Text: `{"city":"Paris"}`},
			{Kind: translate.EventTextDelta, Choice: 1, Text: "second choice"},
			{Kind: translate.EventRefusalDelta, Choice: 1, Text: "no"},
			{Kind: translate.EventFinish, FinishReason: translate.FinishStop},
			{Kind: translate.EventFinish, Choice: 1, FinishReason: translate.FinishLength},
			{Kind: translate.EventUsage, Usage: translate.Usage{PromptTokens: 3, CompletionTokens: 4}},
		},
		"OneShortText": {
			{Kind: translate.EventTextDelta, Text: "hi"},
			{Kind: translate.EventFinish, FinishReason: translate.FinishStop},
		},
		"Empty": {},
		"ErrorOnly": {
			{Kind: translate.EventError, Err: &translate.UpstreamError{Status: 502, Message: "boom"}},
		},
	}
	assemble := func(a *Assembler, events []translate.Event) string {
		for i := range events {
			if err := a.Add(&events[i]); err != nil {
				t.Fatal(err)
			}
		}
		errMsg := ""
		if a.Err != nil {
			errMsg = a.Err.Message
		}
		a.Finish()
		return errMsg + string(a.AppendCompletion(nil, goldenID, goldenModel, goldenCreated))
	}
	order := []string{"TwoChoicesWithToolCall", "OneShortText", "TwoChoicesWithToolCall", "Empty", "ErrorOnly", "OneShortText", "TwoChoicesWithToolCall"}
	var reused Assembler
	for i, name := range order {
		want := assemble(new(Assembler), responses[name])
		if got := assemble(&reused, responses[name]); got != want {
			t.Errorf("response %d (%s) after Reset:\n got %s\nwant %s", i, name, got, want)
		}
		kept := reused.Choices[:cap(reused.Choices)]
		reused.Reset()
		if len(reused.Choices) != 0 || reused.Usage != (translate.Usage{}) || reused.Err != nil {
			t.Fatalf("after Reset: %+v", reused)
		}
		for j, c := range reused.Choices[:cap(reused.Choices)] {
			if len(c.ToolCalls) != 0 || c.FinishReason != "" || len(c.Text) != 0 || cap(c.Text) != cap(kept[j].Text) {
				t.Fatalf("choice %d after Reset: %+v (text capacity kept %d)", j, c, cap(kept[j].Text))
			}
		}
	}
}

// TestAssembler_ResetDropsLargeBuffers pins that a text buffer over 64 KiB is not kept.
func TestAssembler_ResetDropsLargeBuffers(t *testing.T) {
	var a Assembler
	if err := a.Add(&translate.Event{Kind: translate.EventTextDelta, Text: strings.Repeat("x", 65<<10)}); err != nil {
		t.Fatal(err)
	}
	a.Reset()
	if c := a.Choices[:1][0]; c.Text != nil {
		t.Errorf("a %d-byte text buffer was kept", cap(c.Text))
	}
}
