package anthropic

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/translate"
)

// TestUsageSoFar_CurrentOnceMessageDelta: message_start's figures are reported but not
// current (its output count is a placeholder sent before any content, so the proxy
// estimates what follows); message_delta's cumulative output count makes them current.
func TestUsageSoFar_CurrentOnceMessageDelta(t *testing.T) {
	type state struct {
		Usage   translate.Usage
		Current bool
	}
	events := []struct{ typ, data string }{
		{"message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"usage":{"input_tokens":25,"output_tokens":1}}}`},
		{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
		{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi there"}}`},
		{"content_block_stop", `{"type":"content_block_stop","index":0}`},
		{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":3}}`},
	}
	want := []state{
		{translate.Usage{PromptTokens: 25, CompletionTokens: 1}, false},
		{translate.Usage{PromptTokens: 25, CompletionTokens: 1}, false},
		{translate.Usage{PromptTokens: 25, CompletionTokens: 1}, false},
		{translate.Usage{PromptTokens: 25, CompletionTokens: 1}, false},
		{translate.Usage{PromptTokens: 25, CompletionTokens: 3}, true},
	}
	dec := New().NewStreamDecoder(nil)
	ur := dec.(translate.UsageReporter)
	var got []state
	for _, ev := range events {
		if err := dec.Event([]byte(ev.typ), []byte(ev.data), func(*translate.Event) error { return nil }); err != nil {
			t.Fatalf("%s: %v", ev.typ, err)
		}
		u, current := ur.UsageSoFar()
		got = append(got, state{u, current})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("UsageSoFar after each event (-want +got):\n%s", diff)
	}
}
