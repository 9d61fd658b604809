package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/agate-gateway/agate/internal/gatewaytest"
	"github.com/agate-gateway/agate/proxy"
)

// TestMock_DrivesARealToolLoop: offline, the mock backend runs a tool loop whose tool has
// required arguments: unscripted it fills them from the tool's schema (the webhook gets a
// city, not {}), and a model's script says which calls and answers each turn makes. The
// client, the official SDK, sees one answer.
func TestMock_DrivesARealToolLoop(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	var mu sync.Mutex
	var got []map[string]any
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var args map[string]any
		if err := json.Unmarshal(body, &args); err != nil || args["city"] == nil {
			http.Error(w, "missing city", http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, args)
		mu.Unlock()
		fmt.Fprintf(w, "sunny in %v", args["city"])
	}))
	t.Cleanup(hook.Close)
	g := gatewaytest.StartYAML(t, fmt.Sprintf(`backends:
  offline: {type: mock}
models:
  demo: {backend: offline}
  scripted:
    backend: offline
    script:
      - tool_calls: [{name: weather, arguments: {city: Oslo}}, {name: weather}]
      - text: "Both are sunny."
keys:
  agent: {key: sk-agent, models: ["*"], tools: [weather]}
tools:
  weather:
    type: http
    url: %q
    description: Current weather for a city.
    parameters: {type: object, properties: {city: {type: string, examples: [Paris]}, unit: {type: string}}, required: [city]}
`, hook.URL+"/weather"), gatewaytest.Options{Runtime: proxy.TestRuntime, Tools: true})
	client := gatewaytest.OpenAI(g.V1(), "sk-agent")
	tests := []struct {
		model, prompt, want string
		cities              []string
	}{
		{model: "demo", prompt: "what is the weather", want: "Tool results: sunny in Paris", cities: []string{"Paris"}},
		{model: "scripted", prompt: "weather in two cities?", want: "Both are sunny.", cities: []string{"Oslo", "Paris"}},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			mu.Lock()
			got = nil
			mu.Unlock()
			resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
				Model: tt.model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(tt.prompt)}})
			if err != nil {
				t.Fatal(err)
			}
			if c := resp.Choices[0]; c.Message.Content != tt.want || c.FinishReason != "stop" || len(c.Message.ToolCalls) != 0 {
				t.Errorf("answer %q (finish %q, %d tool calls), want %q", c.Message.Content, c.FinishReason, len(c.Message.ToolCalls), tt.want)
			}
			mu.Lock()
			defer mu.Unlock()
			var cities []string
			for _, a := range got {
				cities = append(cities, fmt.Sprint(a["city"]))
			}
			if strings.Join(cities, ",") != strings.Join(tt.cities, ",") && strings.Join(cities, ",") != reverse(tt.cities) {
				t.Errorf("the tool was called for %v, want %v", cities, tt.cities)
			}
		})
	}
}

// reverse joins ss in reverse order (concurrent calls of one turn finish in any order).
func reverse(ss []string) string {
	r := make([]string, len(ss))
	for i, s := range ss {
		r[len(ss)-1-i] = s
	}
	return strings.Join(r, ",")
}
