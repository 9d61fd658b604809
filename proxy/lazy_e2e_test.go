package proxy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestChat_EscapedStringsReachEveryUpstream: message strings with JSON escapes (a JSON
// tool result, tool call arguments, newlines and quotes in text, a surrogate pair) reach
// each upstream with their decoded values, whether the request is translated (the lazy
// parse decodes them first) or forwarded as it is (the passthrough sends the client's
// bytes, escapes as written).
func TestChat_EscapedStringsReachEveryUpstream(t *testing.T) {
	const messages = `[{"role":"system","content":"Be \"brief\".\nAlways."},` +
		`{"role":"user","content":[{"type":"text","text":"Weather in Paris? \ud83d\ude00"}]},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"unit\":\"celsius\"}"}}]},` +
		`{"role":"tool","tool_call_id":"call_1","content":"{\"temp_c\":21,\"sky\":\"partly\\/cloudy\"}"}]`
	decoded := []string{"Be \"brief\".\nAlways.", "Weather in Paris? \U0001F600", `{"temp_c":21,"sky":"partly\/cloudy"}`}
	tools := `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`
	body := `{"model":"m","messages":` + messages + `,"tools":` + tools + `}`
	// Each upstream answers with its recorded text completion.
	for _, tt := range []struct{ kind, base, answer string }{
		{"anthropic", "", "anthropic/json/text.mirascope.json"},
		{"gemini", "", "gemini/json/text.mirascope.json"},
		{"responses", "/v1", "responses/json/text.mirascope.json"},
		{"openai", "/v1", ""},
	} {
		t.Run(tt.kind, func(t *testing.T) {
			answer := completionJSON("up-model", "sunny")
			if tt.answer != "" {
				var err error
				if answer, err = os.ReadFile(filepath.Join("..", "testdata", "fixtures", tt.answer)); err != nil {
					t.Fatal(err)
				}
			}
			up := newUpstream(t, replayJSON(200, answer))
			g := startGateway(t, `
backends:
  up: {type: `+tt.kind+`, base_url: "{{UP}}", api_key: k, retries: {max: 0}}
models:
  m: {backend: up, upstream_model: up-model}
`, map[string]string{"UP": up.URL + tt.base})
			if r := g.chat("", body); r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			calls := up.calls()
			if len(calls) != 1 {
				t.Fatalf("%d upstream requests, want 1", len(calls))
			}
			sent := []string{string(calls[0].Body)}
			strs := jsonStrings(t, sent[0])
			for _, want := range decoded {
				if !strs[want] {
					t.Errorf("the upstream body has no string %q:\n%s", want, sent[0])
				}
			}
			if args := `{"city":"Paris","unit":"celsius"}`; !strs[args] && !strings.Contains(sent[0], `"city":"Paris"`) {
				t.Errorf("the upstream body lacks the tool call's arguments %s:\n%s", args, sent[0])
			}
			if tt.kind == "openai" && !strings.Contains(sent[0], `"messages":`+messages) {
				t.Errorf("the passthrough did not forward the messages as the client wrote them:\n%s", sent[0])
			}
		})
	}
}

// jsonStrings returns every string value in the JSON text s.
func jsonStrings(t *testing.T, s string) map[string]bool {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("upstream body is not JSON: %v\n%s", err, s)
	}
	out := map[string]bool{}
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			out[v] = true
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}
