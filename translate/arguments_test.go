package translate_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/internal/sse"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/anthropic"
	"github.com/agate-gateway/agate/translate/gemini"
	"github.com/agate-gateway/agate/translate/internal/goldentest"
)

// decodeStream feeds a recorded upstream stream through p's stream decoder to emit.
func decodeStream(t *testing.T, p translate.Provider, upstream []byte, emit translate.Emit) {
	t.Helper()
	dec := p.NewStreamDecoder(&translate.Options{Stream: true})
	var ps sse.Parser
	if err := ps.Feed(upstream, func(typ, data []byte) error { return dec.Event(typ, data, emit) }); err != nil {
		t.Fatal(err)
	}
	if err := dec.Close(emit); err != nil {
		t.Fatal(err)
	}
}

// sseData returns the data lines of an SSE body.
func sseData(body []byte) []string {
	var out []string
	for _, line := range strings.Split(string(body), "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok && d != "[DONE]" {
			out = append(out, d)
		}
	}
	return out
}

// TestNoArguments_EveryClientAPI pins the one rule for a tool call streamed with no
// arguments (recorded: an Anthropic tool_use with input {} and an empty input_json_delta;
// Gemini functionCalls without args): every client API gets translate.NoArguments, "{}",
// as OpenAI streams the call of a function without parameters. Chat: the streamed deltas
// and the assembled message; Responses: the argument deltas, function_call_arguments.done,
// the function_call item (output_item.done, the terminal response, a non-streamed
// response); Messages: the tool_use input of the streamed blocks and of the whole Message.
func TestNoArguments_EveryClientAPI(t *testing.T) {
	upstreams := []struct {
		name     string
		provider translate.Provider
		stream   []byte
		calls    []string // the names of the calls without arguments
	}{
		{"anthropic recorded", anthropic.New(), goldentest.ReadFixture(t, "anthropic/stream/tool-no-args-exact-bytes.llm-anthropic.sse"), []string{"pelican_name_generator"}},
		{"anthropic vercel", anthropic.New(), goldentest.ReframeChunks(goldentest.ReadFixture(t, "anthropic/vercel-chunks/anthropic-tool-no-args.chunks.txt"), true), []string{"updateIssueList"}},
		{"gemini vercel", gemini.New(), goldentest.ReframeChunks(goldentest.ReadFixture(t, "gemini/vercel-chunks/google-stream-no-args-tool-call.chunks.txt"), false), []string{"read_theme"}},
	}
	for _, up := range upstreams {
		t.Run(up.name, func(t *testing.T) {
			noArgs := func(name string) bool {
				for _, c := range up.calls {
					if c == name {
						return true
					}
				}
				return false
			}
			o := encodeEveryClient(t, func(emit translate.Emit) { decodeStream(t, up.provider, up.stream, emit) })

			// got collects, per call without arguments, what each client API shows.
			type shown struct{ where, args string }
			var got []shown
			add := func(where, name, args string) {
				if noArgs(name) {
					got = append(got, shown{where, args})
				}
			}
			// Chat, streamed: the concatenated argument deltas of each call.
			names, args := map[int64]string{}, map[int64]string{}
			for _, d := range sseData(o.chatOut) {
				for _, tc := range gjson.Get(d, "choices.0.delta.tool_calls").Array() {
					i := tc.Get("index").Int()
					if n := tc.Get("function.name"); n.Exists() {
						names[i] = n.String()
					}
					args[i] += tc.Get("function.arguments").String()
				}
			}
			for i, n := range names {
				add("chat stream", n, args[i])
			}
			// Chat, whole.
			for _, tc := range o.chatWhole.Choices[0].ToolCalls {
				add("chat whole", tc.Name, tc.Arguments)
			}
			// Responses, streamed: the deltas, the done event, the item done, the terminal response.
			itemName, deltas := map[string]string{}, map[string]string{}
			for _, d := range sseData(o.respOut) {
				switch ev := gjson.Parse(d); ev.Get("type").String() {
				case "response.output_item.added":
					itemName[ev.Get("item.id").String()] = ev.Get("item.name").String()
				case "response.function_call_arguments.delta":
					deltas[ev.Get("item_id").String()] += ev.Get("delta").String()
				case "response.function_call_arguments.done":
					id := ev.Get("item_id").String()
					add("responses deltas", itemName[id], deltas[id])
					add("responses arguments.done", ev.Get("name").String(), ev.Get("arguments").String())
				case "response.output_item.done":
					if ev.Get("item.type").String() == "function_call" {
						add("responses output_item.done", ev.Get("item.name").String(), ev.Get("item.arguments").String())
					}
				case "response.completed":
					for _, it := range ev.Get("response.output").Array() {
						if it.Get("type").String() == "function_call" {
							add("responses completed", it.Get("name").String(), it.Get("arguments").String())
						}
					}
				}
			}
			// Responses, whole.
			for _, it := range gjson.ParseBytes(o.respWhole.AppendResponse(nil)).Get("output").Array() {
				if it.Get("type").String() == "function_call" {
					add("responses whole", it.Get("name").String(), it.Get("arguments").String())
				}
			}
			// Messages, streamed: content_block_start's input, completed by its deltas.
			blockName, blockInput, blockJSON := map[int64]string{}, map[int64]string{}, map[int64]string{}
			for _, d := range sseData(o.msgsOut) {
				switch ev := gjson.Parse(d); ev.Get("type").String() {
				case "content_block_start":
					if ev.Get("content_block.type").String() == "tool_use" {
						i := ev.Get("index").Int()
						blockName[i], blockInput[i] = ev.Get("content_block.name").String(), ev.Get("content_block.input").Raw
					}
				case "content_block_delta":
					if ev.Get("delta.type").String() == "input_json_delta" {
						blockJSON[ev.Get("index").Int()] += ev.Get("delta.partial_json").String()
					}
				}
			}
			for i, n := range blockName {
				// As the Anthropic SDKs read a block: the deltas' JSON when there is any,
				// else the input of content_block_start.
				in := blockInput[i]
				if blockJSON[i] != "" {
					in = blockJSON[i]
				}
				add("messages stream", n, in)
			}
			// Messages, whole.
			for _, b := range gjson.ParseBytes(o.msgsWhole.AppendMessage(nil, "msg_1", "m")).Get("content").Array() {
				if b.Get("type").String() == "tool_use" {
					add("messages whole", b.Get("name").String(), b.Get("input").Raw)
				}
			}

			var want []shown
			for _, where := range []string{"chat stream", "chat whole", "responses deltas", "responses arguments.done",
				"responses output_item.done", "responses completed", "responses whole", "messages stream", "messages whole"} {
				for range up.calls {
					want = append(want, shown{where, translate.NoArguments})
				}
			}
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(shown{})); diff != "" {
				t.Errorf("arguments of a call without arguments (-want +got):\n%s", diff)
			}
			for _, d := range sseData(o.respOut) {
				if !json.Valid([]byte(d)) {
					t.Errorf("not JSON: %s", d)
				}
			}
		})
	}
}

// TestArguments pins the rule's edge cases: only empty or JSON-whitespace text is no
// arguments.
func TestArguments(t *testing.T) {
	for in, want := range map[string]string{"": "{}", " \n\t\r": "{}", "{}": "{}", `{"a":1}`: `{"a":1}`, "null": "null", " {} ": " {} "} {
		if got := translate.Arguments(in); got != want {
			t.Errorf("Arguments(%q) = %q, want %q", in, got, want)
		}
	}
}
