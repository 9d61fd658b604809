package responses

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/internal/sse"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/goldentest"
)

// TestBuiltinItems_Recordings pins that the built-in tool items of real Responses answers
// (web search, code interpreter) come out as EventBuiltinItem, each the upstream's item
// byte for byte, in order, and never as client tool calls. The wanted items are read from
// the recording with gjson: the output_item.done items of a stream, the output of a body.
func TestBuiltinItems_Recordings(t *testing.T) {
	builtin := func(r gjson.Result) bool { return builtinItem(r.Get("type").Str) }
	tests := []struct {
		name    string
		fixture string
		stream  bool
	}{
		{"web search stream", "responses/vercel-chunks/openai-web-search-tool.1.chunks.txt", true},
		{"code interpreter stream", "responses/vercel-chunks/openai-code-interpreter-tool.1.chunks.txt", true},
		{"web search body", "responses/vercel-chunks/openai-web-search-tool.1.json", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := goldentest.ReadFixture(t, tt.fixture)
			var want []string
			if tt.stream {
				for _, line := range strings.Split(string(rec), "\n") {
					if ev := gjson.Parse(line); ev.Get("type").Str == "response.output_item.done" && builtin(ev.Get("item")) {
						want = append(want, ev.Get("item").Raw)
					}
				}
			} else {
				for _, it := range gjson.GetBytes(rec, "output").Array() {
					if builtin(it) {
						want = append(want, it.Raw)
					}
				}
			}
			if len(want) < 2 {
				t.Fatalf("the recording has %d built-in items; the test needs some", len(want))
			}
			var got []string
			calls := 0
			emit := func(ev *translate.Event) error {
				switch ev.Kind {
				case translate.EventBuiltinItem:
					if ev.Item.Dialect != translate.DialectResponses || ev.Item.Type != gjson.Get(ev.Item.Raw, "type").Str {
						t.Errorf("item %+v", ev.Item)
					}
					got = append(got, strings.Clone(ev.Item.Raw)) // it aliases the decoder's buffer
				case translate.EventToolCallStart:
					calls++
				}
				return nil
			}
			var err error
			if tt.stream {
				dec := newResponsesDecoder()
				var p sse.Parser
				err = p.Feed(goldentest.ReframeChunks(rec, true), func(typ, data []byte) error { return dec.Event(typ, data, emit) })
				if err == nil {
					err = dec.Close(emit)
				}
			} else {
				err = New().DecodeResponse(rec, emit)
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("built-in items (-want +got):\n%s", diff)
			}
			if calls != 0 {
				t.Errorf("%d client tool calls, want none", calls)
			}
		})
	}
}
