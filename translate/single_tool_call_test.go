package translate_test

import (
	"encoding/json"
	"testing"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/gemini"
	"github.com/agate-gateway/agate/translate/internal/goldentest"
	"github.com/agate-gateway/agate/translate/openaichat"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/internal/sse"
	"github.com/agate-gateway/agate/translate/internal/spectest"
)

// TestFirstToolCallOnly pins the filter on event sequences: per choice, the first tool
// call's events pass, later calls' start, argument and end events do not, and nothing
// else is touched.
func TestFirstToolCallOnly(t *testing.T) {
	start := func(choice, index int, name string) translate.Event {
		return translate.Event{Kind: translate.EventToolCallStart, Choice: choice, Index: index, CallID: name, Name: name}
	}
	args := func(choice, index int, s string) translate.Event {
		return translate.Event{Kind: translate.EventToolCallArgsDelta, Choice: choice, Index: index, Text: s}
	}
	end := func(choice, index int) translate.Event {
		return translate.Event{Kind: translate.EventToolCallEnd, Choice: choice, Index: index}
	}
	text := translate.Event{Kind: translate.EventTextDelta, Text: "hi"}
	fin := translate.Event{Kind: translate.EventFinish, FinishReason: translate.FinishToolCalls}
	tests := []struct {
		name string
		in   []translate.Event
		want []translate.Event
	}{
		{"one call passes", []translate.Event{text, start(0, 0, "a"), args(0, 0, "{}"), end(0, 0), fin},
			[]translate.Event{text, start(0, 0, "a"), args(0, 0, "{}"), end(0, 0), fin}},
		{"later calls dropped", []translate.Event{start(0, 0, "a"), args(0, 0, "{}"), end(0, 0), start(0, 1, "b"), args(0, 1, "{}"), end(0, 1), text, fin},
			[]translate.Event{start(0, 0, "a"), args(0, 0, "{}"), end(0, 0), text, fin}},
		{"interleaved arguments", []translate.Event{start(0, 3, "a"), start(0, 7, "b"), args(0, 7, "{"), args(0, 3, "{"), end(0, 7), end(0, 3)},
			[]translate.Event{start(0, 3, "a"), args(0, 3, "{"), end(0, 3)}},
		{"each choice keeps its first", []translate.Event{start(1, 5, "x"), start(0, 5, "a"), start(0, 6, "b"), start(1, 6, "y"), end(0, 6), end(1, 5)},
			[]translate.Event{start(1, 5, "x"), start(0, 5, "a"), end(1, 5)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []translate.Event
			emit := translate.FirstToolCallOnly(func(ev *translate.Event) error { got = append(got, *ev); return nil })
			for i := range tt.in {
				if err := emit(&tt.in[i]); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGeminiParallelToolCallsFalse serves parallel_tool_calls: false on Gemini with the
// recorded parallel function calls, streamed and not: the request is accepted (Gemini has
// no such field, so none is sent), the client gets only the first call, with the turn's
// thought signature, and the history it sends back yields a valid Gemini request with
// that one call and its response.
func TestGeminiParallelToolCallsFalse(t *testing.T) {
	schema := spectest.Schema(t, "gemini/generate-content.json", "#/components/schemas/GenerateContentRequest")
	const tools = `"tools":[{"type":"function","function":{"name":"secret_retrieval_tool","parameters":{"type":"object","properties":{"password":{"type":"string"}}}}}]`
	turn1, err := openaichat.ParseRequest([]byte(`{"model":"m","messages":[{"role":"user","content":"Retrieve the secrets for mellon and radiance."}],` + tools + `,"parallel_tool_calls":false}`))
	if err != nil {
		t.Fatal(err)
	}
	body, err := gemini.New().AppendRequest(nil, turn1, &translate.Options{UpstreamModel: "gemini-2.5-flash"})
	if err != nil {
		t.Fatalf("AppendRequest: %v", err)
	}
	if err := spectest.Validate(schema, body); err != nil {
		t.Errorf("turn 1 body does not satisfy GenerateContentRequest: %v\n%s", err, body)
	}

	decode := map[string]func(t *testing.T, emit translate.Emit) error{
		"stream": func(t *testing.T, emit translate.Emit) error {
			dec := gemini.New().NewStreamDecoder(&translate.Options{})
			var p sse.Parser
			up := goldentest.ReadFixture(t, "gemini/stream/parallel-function-calls.mirascope.sse")
			if err := p.Feed(up, func(typ, data []byte) error { return dec.Event(typ, data, emit) }); err != nil {
				return err
			}
			return dec.Close(emit)
		},
		"non-stream": func(t *testing.T, emit translate.Emit) error {
			return gemini.New().DecodeResponse(goldentest.ReadFixture(t, "gemini/json/parallel-function-calls.mirascope.json"), emit)
		},
	}
	for name, run := range decode {
		t.Run(name, func(t *testing.T) {
			var all, one openaichat.Assembler
			if err := run(t, all.Add); err != nil {
				t.Fatal(err)
			}
			if err := run(t, translate.FirstToolCallOnly(one.Add)); err != nil {
				t.Fatal(err)
			}
			all.Finish()
			one.Finish()
			if n := len(all.Choices[0].ToolCalls); n != 2 {
				t.Fatalf("the recording has %d calls, want 2", n)
			}
			got := one.Choices[0]
			if diff := cmp.Diff(all.Choices[0].ToolCalls[:1], got.ToolCalls); diff != "" {
				t.Errorf("tool calls (-first of all +got):\n%s", diff)
			}
			if got.FinishReason != translate.FinishToolCalls {
				t.Errorf("finish_reason = %q, want tool_calls", got.FinishReason)
			}
			if diff := cmp.Diff(all.Usage, one.Usage); diff != "" {
				t.Errorf("usage changed (-all +one):\n%s", diff)
			}

			// Turn 2: the history as the client saw it, one call and its result.
			turn2 := turn1.Clone()
			turn2.Messages = append(turn2.Messages, one.Message(0), translate.Message{Role: translate.RoleTool,
				ToolCallID: got.ToolCalls[0].ID, Content: []translate.Part{{Type: translate.PartText, Text: "Welcome!"}}})
			body, err := gemini.New().AppendRequest(nil, turn2, &translate.Options{UpstreamModel: "gemini-2.5-flash"})
			if err != nil {
				t.Fatalf("turn 2 AppendRequest: %v", err)
			}
			if err := spectest.Validate(schema, body); err != nil {
				t.Errorf("turn 2 body does not satisfy GenerateContentRequest: %v\n%s", err, body)
			}
			model := gjson.GetBytes(body, "contents.1")
			var parts []map[string]any
			if err := json.Unmarshal([]byte(model.Get("parts").Raw), &parts); err != nil {
				t.Fatal(err)
			}
			if model.Get("role").Str != "model" || len(parts) != 1 || parts[0]["functionCall"] == nil || parts[0]["thoughtSignature"] == nil {
				t.Errorf("turn 2 model turn = %s, want the one function call with its thought signature", model.Raw)
			}
			if args := model.Get("parts.0.functionCall.args.password").Str; args != "mellon" {
				t.Errorf("turn 2 call arguments password = %q, want the first call's (mellon)", args)
			}
			if n := len(gjson.GetBytes(body, "contents.2.parts").Array()); n != 1 || !gjson.GetBytes(body, "contents.2.parts.0.functionResponse").Exists() {
				t.Errorf("turn 2 user turn = %s, want one functionResponse", gjson.GetBytes(body, "contents.2").Raw)
			}
		})
	}
}
