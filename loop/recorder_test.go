package loop

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/tools"
	"github.com/agate-gateway/agate/translate"
)

// toolCalls is a ToolRecorder that keeps what it is told.
type toolCalls struct{ got []string }

func (c *toolCalls) ToolCall(d *tools.Definition, failed bool, took time.Duration) {
	s := d.Name
	if failed {
		s += " failed"
	}
	if took < 0 {
		s += " negative time"
	}
	c.got = append(c.got, s)
}

// TestLoop_Recorder: the Recorder hears of every server tool call of every turn, in the
// order the model made them (concurrent calls too), failures marked, the calls over the
// per-turn limit as failures; never of a client's tool call.
func TestLoop_Recorder(t *testing.T) {
	m := &scriptedModel{turns: [][]translate.Event{
		turn(call(0, "c1", "weather", `{"city":"a"}`), call(1, "c2", "clock", `{}`), call(2, "c3", "weather", `{"city":"b"}`),
			call(3, "c4", "clock", `{}`), finish("tool_calls", 1, 1)),
		turn(call(0, "c5", "write", `{}`), finish("tool_calls", 1, 1)),
		turn(call(0, "c6", "client_side", `{}`), finish("tool_calls", 1, 1)),
	}}
	ft := &fakeTools{results: map[string]tools.Result{"weather": {Content: "w"}, "clock": {Content: "c"}, "write": {Content: "disk full", IsError: true}}}
	rec := &toolCalls{}
	req := baseRequest()
	req.Tools = []translate.Tool{{Name: "client_side", Parameters: `{"type":"object"}`}}
	l := &Loop{Model: m, Tools: ft, Definitions: defs, MaxCallsPerTurn: 3, Recorder: rec}
	if err := l.Run(context.Background(), req, &recorder{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"weather", "clock", "weather", "clock failed", "write failed"} // the 4th call: over the limit of 3
	if diff := cmp.Diff(want, rec.got); diff != "" {
		t.Errorf("recorded calls (-want +got):\n%s", diff)
	}
}
