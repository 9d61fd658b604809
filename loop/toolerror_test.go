package loop

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/tools"
	"github.com/agate-gateway/agate/translate"
)

// TestLoop_ToolResultsFlagErrors pins that the tool message the model gets back for a
// failed server tool call carries translate.Message.ToolError and the tool's own error
// text, so each upstream encoder can mark it its own way; a successful result is not
// flagged.
func TestLoop_ToolResultsFlagErrors(t *testing.T) {
	type result struct {
		ID, Text string
		Error    bool
	}
	tests := []struct {
		name  string
		calls [][]translate.Event
		tools map[string]tools.Result
		want  []result
	}{
		{
			name:  "tool failure",
			calls: [][]translate.Event{call(0, "c1", "write", `{}`)},
			tools: map[string]tools.Result{"write": {Content: "disk full", IsError: true}},
			want:  []result{{"c1", "disk full {}", true}},
		},
		{
			name:  "success",
			calls: [][]translate.Event{call(0, "c1", "weather", `{"city":"Oslo"}`)},
			tools: map[string]tools.Result{"weather": {Content: "sunny"}},
			want:  []result{{"c1", `sunny {"city":"Oslo"}`, false}},
		},
		{
			name:  "one of two calls fails",
			calls: [][]translate.Event{call(0, "c1", "weather", `{}`), call(1, "c2", "clock", `{}`)},
			tools: map[string]tools.Result{"weather": {Content: "sunny"}, "clock": {Content: "clock broken", IsError: true}},
			want:  []result{{"c1", "sunny {}", false}, {"c2", "clock broken {}", true}},
		},
		{
			name:  "the executor's unknown-tool error",
			calls: [][]translate.Event{call(0, "c1", "clock", `{}`)},
			tools: map[string]tools.Result{},
			want:  []result{{"c1", "unknown tool clock", true}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first := []any{}
			for _, c := range tt.calls {
				first = append(first, c)
			}
			first = append(first, finish("tool_calls", 1, 1))
			m := &scriptedModel{turns: [][]translate.Event{turn(first...), turn(text("ok"), finish("stop", 1, 1))}}
			l := &Loop{Model: m, Tools: &fakeTools{results: tt.tools}, Definitions: defs}
			if err := l.Run(context.Background(), baseRequest(), &recorder{}); err != nil {
				t.Fatal(err)
			}
			var got []result
			for _, msg := range m.seen[1].Messages[2:] {
				if msg.Role != translate.RoleTool {
					t.Fatalf("message role %q after the assistant turn, want tool", msg.Role)
				}
				got = append(got, result{msg.ToolCallID, msg.Text(), msg.ToolError})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("tool messages (-want +got):\n%s", diff)
			}
		})
	}
}
