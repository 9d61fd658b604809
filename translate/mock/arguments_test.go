package mock

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/translate"
)

// TestArguments: the mock fills a tool's arguments from its schema: the required
// properties (all when none is required), each with its const, default, example(s) or
// enum's first, else a value of its type and format; nested objects and arrays follow
// the same rules; anything it cannot read gives {}.
func TestArguments(t *testing.T) {
	tests := []struct{ name, schema, want string }{
		{"none", "", `{}`},
		{"not JSON", `{"type":`, `{}`},
		{"not an object schema", `{"type":"string"}`, `{}`},
		{"a required string", `{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string"}},"required":["city"]}`, `{"city":"example"}`},
		{"every property when none is required", `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"boolean"},"c":{"type":"number","minimum":2.5}}}`, `{"a":1,"b":true,"c":2.5}`},
		{"chosen values, first wins", `{"properties":{"u":{"type":"string","enum":["celsius","fahrenheit"]},"d":{"type":"integer","default":7},"e":{"examples":["Paris","Oslo"]},"k":{"const":"x"}}}`, `{"u":"celsius","d":7,"e":"Paris","k":"x"}`},
		{"formats", `{"properties":{"when":{"type":"string","format":"date-time"},"day":{"type":"string","format":"date"},"to":{"type":"string","format":"email"},"at":{"type":"string","format":"uri"}}}`, `{"when":"2026-01-01T00:00:00Z","day":"2026-01-01","to":"user@example.com","at":"https://example.com"}`},
		{"nested", `{"type":"object","properties":{"q":{"type":"object","properties":{"ids":{"type":"array","items":{"type":"integer"}}},"required":["ids"]}},"required":["q"]}`, `{"q":{"ids":[1]}}`},
		{"a type list takes its first non-null", `{"properties":{"n":{"type":["null","integer"]}}}`, `{"n":1}`},
		{"escaped names stay escaped", `{"properties":{"a\"b":{"type":"boolean"}}}`, `{"a\"b":true}`},
		{"boolean schemas are left out", `{"properties":{"any":true,"x":{"type":"null"}}}`, `{"x":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Arguments(tt.schema)
			if got != tt.want {
				t.Errorf("Arguments(%s) = %s, want %s", tt.schema, got, tt.want)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("%s is not JSON", got)
			}
		})
	}
}

// TestArguments_DeepSchemaIsBounded: a schema nested past maxSchemaDepth is cut, not
// followed.
func TestArguments_DeepSchemaIsBounded(t *testing.T) {
	schema := `{"type":"string"}`
	for range 50 {
		schema = `{"type":"object","properties":{"n":` + schema + `}}`
	}
	got := Arguments(schema)
	if !json.Valid([]byte(got)) || len(got) > 100 {
		t.Errorf("Arguments of a 50-deep schema = %s", got)
	}
}

// FuzzArguments: whatever the schema, Arguments returns a JSON object.
func FuzzArguments(f *testing.F) {
	for _, s := range []string{`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`, `{"properties":{"a":{"enum":[1,2]}}}`, `{`, `[]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, schema string) {
		got := Arguments(schema)
		if !json.Valid([]byte(got)) || got[0] != '{' {
			t.Fatalf("Arguments(%q) = %q", schema, got)
		}
	})
}

// TestScripted: a scripted mock answers turn i (the assistant messages so far) with
// script[i], tool calls with their arguments or arguments from the tool's schema, and past
// the script's end as an unscripted mock.
func TestScripted(t *testing.T) {
	p := Scripted([]Turn{
		{ToolCalls: []ToolCall{{Name: "weather"}, {Name: "weather", Arguments: `{"city":"Oslo"}`}}},
		{Text: "Sunny in both."},
	})
	tools := []translate.Tool{{Name: "weather", Parameters: `{"type":"object","properties":{"city":{"type":"string","examples":["Paris"]}},"required":["city"]}`}}
	assistant := translate.Message{Role: translate.RoleAssistant}
	tests := []struct {
		name string
		msgs []translate.Message
		want []translate.Event
	}{
		{name: "turn 0 calls the tools", msgs: []translate.Message{text(translate.RoleUser, "weather?")},
			want: []translate.Event{
				{Kind: translate.EventStart, ID: "mock-1", Model: "m"},
				{Kind: translate.EventToolCallStart, CallID: "call_mock_weather", Name: "weather"},
				{Kind: translate.EventToolCallArgsDelta, Text: `{"city":"Paris"}`},
				{Kind: translate.EventToolCallEnd},
				{Kind: translate.EventToolCallStart, Index: 1, CallID: "call_mock_weather_1", Name: "weather"},
				{Kind: translate.EventToolCallArgsDelta, Index: 1, Text: `{"city":"Oslo"}`},
				{Kind: translate.EventToolCallEnd, Index: 1},
				{Kind: translate.EventUsage, Usage: translate.Usage{PromptTokens: 1, CompletionTokens: 2}},
				{Kind: translate.EventFinish, FinishReason: translate.FinishToolCalls},
			}},
		{name: "turn 1 answers", msgs: []translate.Message{text(translate.RoleUser, "weather?"), assistant, text(translate.RoleTool, "sun"), text(translate.RoleTool, "sun")},
			want: []translate.Event{
				{Kind: translate.EventStart, ID: "mock-1", Model: "m"},
				{Kind: translate.EventTextDelta, Text: "Sunny"},
				{Kind: translate.EventTextDelta, Text: " in"},
				{Kind: translate.EventTextDelta, Text: " both."},
				{Kind: translate.EventUsage, Usage: translate.Usage{PromptTokens: 3, CompletionTokens: 3}},
				{Kind: translate.EventFinish, FinishReason: translate.FinishStop},
			}},
		{name: "past the end it echoes", msgs: []translate.Message{text(translate.RoleUser, "a"), assistant, assistant, text(translate.RoleUser, "bye")},
			want: []translate.Event{
				{Kind: translate.EventStart, ID: "mock-1", Model: "m"},
				{Kind: translate.EventTextDelta, Text: "bye"},
				{Kind: translate.EventUsage, Usage: translate.Usage{PromptTokens: 2, CompletionTokens: 1}},
				{Kind: translate.EventFinish, FinishReason: translate.FinishStop},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []translate.Event
			err := p.Answer(context.Background(), &translate.Request{Tools: tools, Messages: tt.msgs}, "m", func(ev *translate.Event) error {
				got = append(got, *ev)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("events (-want +got):\n%s", d)
			}
		})
	}
}
