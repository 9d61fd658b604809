package proxy_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"go.yaml.in/yaml/v3"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/ledger"
	"github.com/agate-gateway/agate/proxy"
)

// TestLedger_ToolsAndAttemptTokens: a request whose tool loop calls a builtin tool twice
// and a webhook that fails, on a model whose backend is down (a 503, then its fallback
// answers, each turn), is one ledger record whose tools name each server tool with its
// source, calls, errors and time, and whose attempts carry the tokens each was charged
// (0 for the 503s) summing to the record's; GET /admin/v1/requests/{id} shows them, every
// member described by docs/admin-openapi.yaml.
func TestLedger_ToolsAndAttemptTokens(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		http.Error(w, "weather service down", http.StatusInternalServerError)
	}))
	t.Cleanup(hook.Close)
	// OpenAI's overloaded answer (its documented 503 body).
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(503)
		io.WriteString(w, `{"error":{"message":"The server is overloaded or not ready yet.","type":"server_error","param":null,"code":null}}`)
	}))
	t.Cleanup(down.Close)
	l, err := ledger.Open(context.Background(), ledger.Options{Type: "sqlite", DSN: sqliteLedgers.Fresh(t), FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close(context.Background()) })
	d := sha256.Sum256([]byte(adminToken))
	g := gatewaytest.StartYAML(t, fmt.Sprintf(`
backends:
  offline: {type: mock}
  down: {type: openai, base_url: %q, api_key: k, retries: {max: 0}}
models:
  flaky: {backend: down, upstream_model: gpt-4o, fallbacks: [scripted]}
  scripted:
    backend: offline
    script:
      - tool_calls: [{name: clock}, {name: weather, arguments: {city: Oslo}}, {name: clock}]
      - text: "Sunny, they say."
keys:
  agent: {key: sk-agent, models: ["*"], tools: [clock, weather]}
tools:
  clock: {type: builtin, name: time_now}
  weather:
    type: http
    url: %q
    description: Current weather for a city.
    parameters: {type: object, properties: {city: {type: string}}, required: [city]}
ledger: {type: sqlite}
admin:
  keys: {ops: {key_sha256: %s}}
`, down.URL+"/v1", hook.URL+"/weather", hex.EncodeToString(d[:])), gatewaytest.Options{Runtime: proxy.TestRuntime, Ledger: l, Tools: true})

	client := gatewaytest.OpenAI(g.V1(), "sk-agent")
	resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "flaky",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("weather in Oslo, and the time?")}})
	if err != nil {
		t.Fatal(err)
	}
	g.Server.Settle()
	if err := l.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	recs, _, err := l.Requests(context.Background(), ledger.RequestQuery{})
	if err != nil || len(recs) != 1 {
		t.Fatalf("records %+v, %v", recs, err)
	}
	status, one, raw := adminDo(t, g, adminToken, "GET", "/admin/v1/requests/"+strconv.FormatInt(recs[0].ID, 10), "")
	if status != 200 {
		t.Fatalf("GET /admin/v1/requests/%d: %d %s", recs[0].ID, status, raw)
	}

	type tool struct {
		Name, Source  string
		Count, Errors int
	}
	var tools []tool
	for _, x := range one["tools"].([]any) {
		m := x.(map[string]any)
		if ms, ok := m["duration_ms"].(float64); !ok || ms < 0 {
			t.Errorf("tool without a duration: %v", m)
		}
		tools = append(tools, tool{m["name"].(string), m["source"].(string), int(m["count"].(float64)), int(m["errors"].(float64))})
	}
	if diff := cmp.Diff([]tool{{"clock", "clock", 2, 0}, {"weather", "weather", 1, 1}}, tools); diff != "" {
		t.Errorf("tools (-want +got):\n%s\n%s", diff, raw)
	}
	if one["tools_omitted"] != 0.0 || one["tool_calls"] != 3.0 {
		t.Errorf("tools_omitted %v, tool_calls %v: %s", one["tools_omitted"], one["tool_calls"], raw)
	}

	type attempt struct {
		Model              string
		Status             int
		Prompt, Completion int64
	}
	var attempts []attempt
	var prompt, completion int64
	for _, x := range one["attempts"].([]any) {
		m := x.(map[string]any)
		a := attempt{m["model"].(string), int(m["status"].(float64)), int64(m["prompt_tokens"].(float64)), int64(m["completion_tokens"].(float64))}
		attempts = append(attempts, a)
		prompt, completion = prompt+a.Prompt, completion+a.Completion
	}
	// Each turn: the 503, then the fallback; the first answer is the 3 calls (the mock
	// counts a call a completion token), the second the answer's 3 words.
	if len(attempts) != 4 || attempts[0] != (attempt{"flaky", 503, 0, 0}) || attempts[2] != (attempt{"flaky", 503, 0, 0}) ||
		attempts[1].Model != "scripted" || attempts[1].Prompt == 0 || attempts[1].Completion != 3 ||
		attempts[3].Model != "scripted" || attempts[3].Prompt <= attempts[1].Prompt || attempts[3].Completion != 3 {
		t.Errorf("attempts %+v\n%s", attempts, raw)
	}
	if prompt != resp.Usage.PromptTokens || completion != resp.Usage.CompletionTokens ||
		one["prompt_tokens"] != float64(prompt) || one["completion_tokens"] != float64(completion) {
		t.Errorf("the attempts' tokens sum to %d/%d; the record says %v/%v, the client was told %d/%d",
			prompt, completion, one["prompt_tokens"], one["completion_tokens"], resp.Usage.PromptTokens, resp.Usage.CompletionTokens)
	}

	// Every member of the answer, of an attempt and of a tool is described, and every
	// described one is there.
	spec := readOpenAPISchemas(t)
	detail := spec.path("/admin/v1/requests/{id}")
	checkMembers(t, "the record", one, append(spec.props("Record"), detail...), "prompt", "completion")
	checkMembers(t, "an attempt", one["attempts"].([]any)[1].(map[string]any), spec.props("Attempt"))
	checkMembers(t, "a tool", one["tools"].([]any)[0].(map[string]any), spec.props("ToolUse"))
}

// openAPISchemas is what docs/admin-openapi.yaml says of the request detail.
type openAPISchemas struct {
	doc struct {
		Paths      map[string]map[string]any `yaml:"paths"`
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `yaml:"properties"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
}

func readOpenAPISchemas(t *testing.T) *openAPISchemas {
	data, err := os.ReadFile("../docs/admin-openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var s openAPISchemas
	if err := yaml.Unmarshal(data, &s.doc); err != nil {
		t.Fatal(err)
	}
	return &s
}

// props are the property names of the component schema name.
func (s *openAPISchemas) props(name string) []string {
	var out []string
	for p := range s.doc.Components.Schemas[name].Properties {
		out = append(out, p)
	}
	return out
}

// path is the property names the 200 answer of GET path adds to its allOf's $refs.
func (s *openAPISchemas) path(path string) []string {
	var out []string
	get, _ := s.doc.Paths[path]["get"].(map[string]any)
	ok, _ := get["responses"].(map[string]any)["200"].(map[string]any)
	schema, _ := ok["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)
	all, _ := schema["allOf"].([]any)
	for _, x := range all {
		props, _ := x.(map[string]any)["properties"].(map[string]any)
		for p := range props {
			out = append(out, p)
		}
	}
	return out
}

// checkMembers: obj's members are described's, less the optional ones obj may lack.
func checkMembers(t *testing.T, what string, obj map[string]any, described []string, optional ...string) {
	t.Helper()
	var got, want []string
	for k := range obj {
		got = append(got, k)
	}
	skip := map[string]bool{}
	for _, o := range optional {
		if _, ok := obj[o]; !ok {
			skip[o] = true
		}
	}
	for _, d := range described {
		if !skip[d] {
			want = append(want, d)
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s's members (-described +served):\n%s", what, diff)
	}
}
