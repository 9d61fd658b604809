package responsesin

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/translate"
)

// TestForward: a forwarded stream's events get the client-facing model in the Response
// they carry and increasing sequence numbers; a terminal event keeps its Response, output
// and usage; an event that is not a JSON object is refused; Begin starts an attempt over.
func TestForward(t *testing.T) {
	type step struct {
		data, want string
		ok, ended  bool
		read       Forwarded
	}
	for _, tt := range []struct {
		name          string
		steps         []step
		final, output string
	}{{
		name: "completed",
		steps: []step{
			{data: `{"type":"response.created","sequence_number":0,"response":{"model":"up"}}`, ok: true,
				want: "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"model\":\"m\"}}\n\n"},
			{data: `{"type":"response.output_text.delta","sequence_number":0,"delta":"hi"}`, ok: true, read: Forwarded{DeltaBytes: 2},
				want: "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"delta\":\"hi\"}\n\n"},
			{data: `{"type":"response.completed","sequence_number":5,"response":{"model":"up","output":[1],"usage":{"input_tokens":3,"output_tokens":1}}}`,
				ok: true, ended: true, read: Forwarded{Usage: translate.Usage{PromptTokens: 3, CompletionTokens: 1}, HasUsage: true},
				want: "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":5,\"response\":{\"model\":\"m\",\"output\":[1],\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n"},
		},
		final: `{"model":"m","output":[1],"usage":{"input_tokens":3,"output_tokens":1}}`, output: `[1]`,
	}, {
		name: "error event ends it",
		steps: []step{
			{data: `{"type":"error","message":"x"}`, ok: true, ended: true,
				want: "event: error\ndata: {\"sequence_number\":0,\"type\":\"error\",\"message\":\"x\"}\n\n"},
		},
	}, {
		name:  "not an object",
		steps: []step{{data: `[1]`, want: ""}},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			f := &Forward{Model: []byte(`"m"`)}
			f.Begin()
			for _, s := range tt.steps {
				out, read, ok := f.Event(nil, []byte(s.data))
				if ok != s.ok || string(out) != s.want || read != s.read || f.Ended() != s.ended {
					t.Errorf("Event(%s) = %q, %+v, %v, ended %v; want %q, %+v, %v, ended %v", s.data, out, read, ok, f.Ended(), s.want, s.read, s.ok, s.ended)
				}
			}
			if diff := cmp.Diff(tt.final+"|"+tt.output, string(f.Final)+"|"+string(f.Output)); diff != "" {
				t.Errorf("Final|Output (-want +got):\n%s", diff)
			}
			f.Begin()
			if f.Ended() {
				t.Error("Begin left the stream ended")
			}
		})
	}
}
