package openai

import (
	"bytes"
	"testing"

	"github.com/agate-gateway/agate/translate"
)

// FuzzEditedDirectMatchesSjson holds appendEditedDirect to the sjson rewrite it saves
// (appendRewritten): for any body, upstream model, stream flag and tool choice, when it
// writes the request it writes the bytes sjson's path writes. Seeded with the bodies the
// Messages and Responses parsers write (the settings of the bench's requests and of the
// recorded ones) and bodies it must leave to sjson.
func FuzzEditedDirectMatchesSjson(f *testing.F) {
	for _, s := range []string{
		`{"model":"claude-bench","max_completion_tokens":1024,"temperature":0.7}`,
		`{"model":"m","parallel_tool_calls":false,"max_completion_tokens":5,"top_p":0.5,"response_format":{"type":"json_schema","json_schema":{"name":"s","schema":{"type":"object"},"strict":true}},"reasoning_effort":"low","user":"u","prompt_cache_key":"k","stream":true}`,
		`{"model":"m","stream":false}`, `{"model":"m","stream":true}`, `{"model":"m"}`, `{}`, `{"max_tokens":1}`,
		`{"model":"m","model":"n"}`, `{"model": "m"}`, `{"model":"m","user":"a b"}`, `{"model":"m","user":"a\"b"}`,
		`{"model":"m","messages":[]}`, `{"model":"m","tools":0}`, `{"model":"m","stream_options":{}}`, `{"model":"m","tool_choice":"auto"}`,
		`{"model":5}`, `{"model":"m"`, `["model"]`,
	} {
		for _, mode := range []string{"", "auto", "required", "function"} {
			f.Add(s, "up-model", true, mode, "f")
			f.Add(s, "up<model>", false, mode, "f\"n")
		}
	}
	f.Add(`{"model":"m"}`, "up", false, "auto\"", "")
	f.Fuzz(func(t *testing.T, body, model string, stream bool, mode, name string) {
		yes := true
		req := &translate.Request{
			Body: body, Edited: true,
			Messages: []translate.Message{
				{Role: translate.RoleSystem, Content: []translate.Part{{Type: translate.PartText, Text: "be brief"}}},
				{Role: translate.RoleUser, Content: []translate.Part{{Type: translate.PartText, Text: "what's \"up\"?\n"}}},
				{Role: translate.RoleAssistant, ToolCalls: []translate.ToolCall{{ID: "c1", Name: "f", Arguments: `{"x":1}`}}},
				{Role: translate.RoleTool, ToolCallID: "c1", Content: []translate.Part{{Type: translate.PartText, Text: "<ok>"}}},
			},
			Tools:      []translate.Tool{{Name: "f", Description: "d", Parameters: `{"type":"object"}`, Strict: &yes}, {Builtin: &translate.Item{Type: "web_search"}}},
			ToolChoice: translate.ToolChoice{Mode: mode, Name: name},
		}
		opts := &translate.Options{UpstreamModel: model, Stream: stream}
		got, ok := appendEditedDirect([]byte("x"), req, opts)
		if !ok {
			if string(got) != "x" {
				t.Fatalf("appendEditedDirect wrote %q and gave up", got)
			}
			return
		}
		want, err := appendRewritten([]byte("x"), req, opts)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("body %q model %q stream %v choice %q %q:\n%s\nsjson's (%v):\n%s", body, model, stream, mode, name, got, err, want)
		}
	})
}

// TestEditedDirect_Taken: the bodies the Messages and Responses parsers write, streamed
// or not, are written without sjson.
func TestEditedDirect_Taken(t *testing.T) {
	for _, c := range []struct {
		body   string
		stream bool
	}{
		{`{"model":"m","max_completion_tokens":1024,"temperature":0.7}`, false},
		{`{"model":"m","max_completion_tokens":1024,"temperature":0.7}`, true},
		{`{"model":"m","user":"u","stream":true}`, true},
	} {
		req := &translate.Request{Body: c.body, Edited: true, ToolChoice: translate.ToolChoice{Mode: "auto"}}
		if _, ok := appendEditedDirect(nil, req, &translate.Options{UpstreamModel: "up", Stream: c.stream}); !ok {
			t.Errorf("%s (stream %v) left to sjson", c.body, c.stream)
		}
	}
}
