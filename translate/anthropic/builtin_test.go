package anthropic

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/internal/sse"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/goldentest"
)

// TestBuiltinBlocks_WebSearchRecording pins that the server_tool_use and
// web_search_tool_result blocks of a real web search stream come out as EventBuiltinItem,
// in order, each the block the upstream sent with a server_tool_use's streamed input in
// place, and never as client tool calls; and that the same blocks of a whole Message do.
// The wanted blocks are rebuilt from the recording with gjson.
func TestBuiltinBlocks_WebSearchRecording(t *testing.T) {
	rec := goldentest.ReadFixture(t, "anthropic/stream/web-search-cache-read-create.mirascope.sse")
	var want []any
	var content []string // the blocks as a whole Message holds them
	inputs := map[int64]string{}
	starts := map[int64]gjson.Result{}
	for _, line := range strings.Split(string(rec), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		ev := gjson.Parse(data)
		i := ev.Get("index").Int()
		switch ev.Get("type").Str {
		case "content_block_start":
			starts[i] = ev.Get("content_block")
		case "content_block_delta":
			inputs[i] += ev.Get("delta.partial_json").Str
		case "content_block_stop":
			b := starts[i]
			if typ := b.Get("type").Str; typ != "server_tool_use" && typ != "web_search_tool_result" {
				continue
			}
			var v map[string]any
			if err := json.Unmarshal([]byte(b.Raw), &v); err != nil {
				t.Fatal(err)
			}
			if in := inputs[i]; in != "" {
				var input any
				if err := json.Unmarshal([]byte(in), &input); err != nil {
					t.Fatal(err)
				}
				v["input"] = input
			}
			want = append(want, v)
			raw, _ := json.Marshal(v)
			content = append(content, string(raw))
		}
	}
	if len(want) != 4 {
		t.Fatalf("the recording has %d built-in blocks, want 4", len(want))
	}
	collect := func(t *testing.T) (translate.Emit, func() []any) {
		var got []any
		calls := 0
		return func(ev *translate.Event) error {
				switch ev.Kind {
				case translate.EventBuiltinItem:
					var v any
					if err := json.Unmarshal([]byte(ev.Item.Raw), &v); err != nil {
						t.Errorf("item is not JSON: %v: %s", err, ev.Item.Raw)
					}
					if ev.Item.Dialect != translate.DialectAnthropic || ev.Item.Type != gjson.Get(ev.Item.Raw, "type").Str {
						t.Errorf("item %+v", ev.Item)
					}
					got = append(got, v)
				case translate.EventToolCallStart:
					calls++
				}
				return nil
			}, func() []any {
				if calls != 0 {
					t.Errorf("%d client tool calls, want none", calls)
				}
				return got
			}
	}

	t.Run("stream", func(t *testing.T) {
		emit, got := collect(t)
		dec := New().NewStreamDecoder(&translate.Options{})
		var p sse.Parser
		err := p.Feed(rec, func(typ, data []byte) error { return dec.Event(typ, data, emit) })
		if err == nil {
			err = dec.Close(emit)
		}
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got()); diff != "" {
			t.Errorf("built-in blocks (-want +got):\n%s", diff)
		}
	})
	t.Run("whole message", func(t *testing.T) {
		emit, got := collect(t)
		body := `{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[` + strings.Join(content, ",") +
			`,{"type":"text","text":"done"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`
		if err := New().DecodeResponse([]byte(body), emit); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got()); diff != "" {
			t.Errorf("built-in blocks (-want +got):\n%s", diff)
		}
	})
}
