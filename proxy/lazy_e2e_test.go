package proxy

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/agate-gateway/agate/tools"
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

// TestChat_RequestStringsLiveUntilTheResponseIsWritten pins the lifetime the zero-copy
// parse relies on (handleChat): a chat request's strings alias fasthttp's request body
// buffer, which must stay unchanged until the response is written, and the request itself
// lives in a recycled Scratch, which must not be given back before; however many requests
// pass through the gateway meanwhile. A tool loop reads its request again after a slow
// server tool: the second upstream request must carry the client's messages exactly,
// while requests of the same sizes run on other connections all along.
func TestChat_RequestStringsLiveUntilTheResponseIsWritten(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "complete", true: "stream"}[stream], func(t *testing.T) {
			testRequestLifetime(t, stream)
		})
	}
}

// testRequestLifetime is TestChat_RequestStringsLiveUntilTheResponseIsWritten for one
// shape of answer: a stream's tool loop runs on after the handler returned.
func testRequestLifetime(t *testing.T, stream bool) {
	// The tool loop streams from the upstream; the first turn calls secret_retrieval_tool.
	loopUp := newUpstream(t, replaySSE(fixtureJSON(t, "anthropic/stream/parallel-tool-use.mirascope.sse")),
		replaySSE(fixtureJSON(t, "anthropic/stream/text-basic.mirascope.sse")))
	otherUp := newUpstream(t, replayJSON(200, fixtureJSON(t, "anthropic/json/text.mirascope.json")))
	g := startGatewayWith(t, `
backends:
  loop: {type: anthropic, base_url: "{{LOOP}}", api_key: k, retries: {max: 0}}
  other: {type: anthropic, base_url: "{{OTHER}}", api_key: k, retries: {max: 0}}
models:
  m: {backend: loop, upstream_model: up-model}
  n: {backend: other, upstream_model: up-model}
keys:
  agent: {key: agent-key, models: [m], tools: [secret]}
  plain: {key: plain-key, models: [n]}
tools:
  secret: {type: builtin, name: time_now}
`, map[string]string{"LOOP": loopUp.URL, "OTHER": otherUp.URL}, gatewayOptions{tools: slowSecretTools{}})
	// The user's text has escapes: a translated request decodes it into the scratch too.
	const system, user = "You keep secrets for the user.", `Retrieve the secrets for the passwords \"mellon\" and \"radiance\".`
	decodedUser := strings.ReplaceAll(user, `\"`, `"`)
	done := make(chan struct{})
	var others sync.WaitGroup
	for range 4 {
		others.Add(1)
		go func() {
			defer others.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				r := g.chat("plain-key", `{"model":"n","messages":[{"role":"system","content":"`+strings.Repeat("x", len(system))+
					`"},{"role":"user","content":"`+strings.Repeat(`\"yyy\"`, len(user)/7)+`"}]}`)
				if r.status != 200 {
					t.Errorf("other request: status %d: %s", r.status, r.body)
					return
				}
			}
		}()
	}
	r := g.chat("agent-key", `{"model":"m","stream":`+strconv.FormatBool(stream)+`,"messages":[{"role":"system","content":"`+system+`"},{"role":"user","content":"`+user+`"}]}`)
	close(done)
	others.Wait()
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	calls := loopUp.calls()
	if len(calls) != 2 {
		t.Fatalf("%d upstream requests for the tool loop, want 2", len(calls))
	}
	if n := len(otherUp.calls()); n < 4 {
		t.Fatalf("only %d other requests ran while the tool ran", n)
	}
	second := calls[1].Body
	if got := gjson.GetBytes(second, "system").String(); !strings.Contains(got, system) {
		t.Errorf("second turn's system is %q, want %q", got, system)
	}
	if got := gjson.GetBytes(second, "messages.0.content.0.text").String(); got != decodedUser {
		t.Errorf("second turn's first message is %s, want the user's %q", got, decodedUser)
	}
}

// slowSecretTools serves the recorded call of secret_retrieval_tool, slowly, so that other
// requests pass through the gateway while it runs.
type slowSecretTools struct{}

func (slowSecretTools) Call(context.Context, string, []byte) tools.Result {
	time.Sleep(300 * time.Millisecond)
	return tools.Result{Content: "the secret"}
}
func (slowSecretTools) Resolve([]string) ([]tools.Definition, error) {
	return []tools.Definition{{Name: "secret_retrieval_tool", Source: "secret", Tool: "secret", Description: "retrieves a secret",
		Parameters: []byte(`{"type":"object","properties":{"password":{"type":"string"}}}`)}}, nil
}
func (slowSecretTools) Ready() error    { return nil }
func (slowSecretTools) Degraded() error { return nil }

// fixtureJSON reads a recording of testdata/fixtures (provenance in its SOURCES.md).
func fixtureJSON(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "fixtures", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
