package proxy

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/config"
)

func TestMissingCredential(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	tests := []struct {
		name string
		b    config.Backend
		want bool
	}{
		{name: "anthropic without key", b: config.Backend{Type: "anthropic", BaseURL: "https://api.anthropic.com"}, want: true},
		{name: "anthropic with key", b: config.Backend{Type: "anthropic", BaseURL: "https://api.anthropic.com", APIKey: "k"}},
		{name: "blank key", b: config.Backend{Type: "anthropic", APIKey: " \t"}, want: true},
		{name: "key in x-api-key header", b: config.Backend{Type: "anthropic", Headers: map[string]string{"X-Api-Key": "k"}}},
		{name: "empty credential header", b: config.Backend{Type: "anthropic", Headers: map[string]string{"x-api-key": ""}}, want: true},
		{name: "other header only", b: config.Backend{Type: "anthropic", Headers: map[string]string{"X-Team": "search"}}, want: true},
		{name: "gemini without key", b: config.Backend{Type: "gemini", BaseURL: "https://generativelanguage.googleapis.com"}, want: true},
		{name: "gemini key in header", b: config.Backend{Type: "gemini", Headers: map[string]string{"x-goog-api-key": "k"}}},
		{name: "responses without key", b: config.Backend{Type: "responses", BaseURL: "http://127.0.0.1:8000/v1"}, want: true},
		{name: "openai api without key", b: config.Backend{Type: "openai", BaseURL: "https://api.openai.com/v1"}, want: true},
		{name: "openai api host in capitals with port", b: config.Backend{Type: "openai", BaseURL: "https://API.OpenAI.com:443/v1"}, want: true},
		{name: "openai api with authorization header", b: config.Backend{Type: "openai", BaseURL: "https://api.openai.com/v1", Headers: map[string]string{"Authorization": "Bearer k"}}},
		{name: "azure api-key header", b: config.Backend{Type: "openai", BaseURL: "https://x.openai.azure.com/openai/v1", Headers: map[string]string{"api-key": "k"}}},
		{name: "local openai-compatible server", b: config.Backend{Type: "openai", BaseURL: "http://127.0.0.1:11434/v1"}},
		{name: "mock", b: config.Backend{Type: "mock"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := missingCredential(tt.b); got != tt.want {
				t.Errorf("missingCredential(%+v) = %v, want %v", tt.b, got, tt.want)
			}
		})
	}
}

const noCredentialConfig = `
backends:
  offline: {type: mock}
  claude:  {type: anthropic, base_url: "{{UP}}", retries: {max: 0}}
  gem:     {type: gemini, base_url: "{{UP}}", api_key: gem-secret-value, retries: {max: 0}}
  local:   {type: openai, base_url: "{{UP}}/v1", retries: {max: 0}}
  oai:     {type: openai, base_url: "https://api.openai.com/v1"}
models:
  demo:   {backend: offline}
  sonnet: {backend: claude}
  flash:  {backend: gem, fallbacks: [sonnet]}
  llama:  {backend: local}
  gpt-4o: {backend: oai}
`

// TestNoCredential: a backend that needs an upstream credential and has none is reported
// once at start (without any secret), its models are not listed, and a request for one
// gets a 404 that says why, without reaching the upstream; nor is it used as a fallback.
func TestNoCredential(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(503)
		w.Write([]byte(`{"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}`))
	})
	g := startGateway(t, noCredentialConfig, map[string]string{"UP": up.Server.URL})
	client := g.client("")

	page, err := client.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, m := range page.Data {
		listed = append(listed, m.ID)
	}
	if diff := cmp.Diff([]string{"demo", "flash", "llama"}, listed); diff != "" {
		t.Errorf("/v1/models (-want +got):\n%s", diff)
	}

	tests := []struct {
		name, model, wantMsg string
	}{
		{name: "anthropic model", model: "sonnet", wantMsg: `the model "sonnet" is not available: the gateway has no api_key for its backend "claude"`},
		{name: "direct route", model: "claude/claude-opus-4-1", wantMsg: `the model "claude/claude-opus-4-1" is not available: the gateway has no api_key for its backend "claude"`},
		{name: "openai api model", model: "gpt-4o", wantMsg: `the model "gpt-4o" is not available: the gateway has no api_key for its backend "oai"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := client.Chat.Completions.New(context.Background(), userParams(tt.model, "hi"))
			e := sdkError(t, err)
			got := errorView{Status: e.StatusCode, Type: e.Type, Param: e.Param, Code: e.Code, Message: e.Message}
			want := errorView{Status: 404, Type: "invalid_request_error", Param: "model", Code: "model_not_found", Message: tt.wantMsg}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
	if n := len(up.calls()); n != 0 {
		t.Errorf("the upstream was called %d times for models without a credential", n)
	}

	// flash fails retryably; its fallback has no credential and is not tried.
	if _, err := client.Chat.Completions.New(context.Background(), userParams("flash", "hi")); sdkError(t, err).StatusCode != 503 {
		t.Errorf("flash: %v, want the gemini 503", err)
	}
	var paths []string
	for _, c := range up.calls() {
		paths = append(paths, c.Path)
	}
	if diff := cmp.Diff([]string{"/v1beta/models/flash:generateContent"}, paths); diff != "" {
		t.Errorf("upstream calls (-want +got):\n%s", diff)
	}

	// A reload with the same backends does not repeat the warnings.
	if err := g.srv.Apply(parseConfig(t, noCredentialConfig, map[string]string{"UP": up.Server.URL})); err != nil {
		t.Fatal(err)
	}
	var warnings []string
	for line := range strings.SplitSeq(g.logText(), "\n") {
		if strings.Contains(line, "backend has no api_key") {
			i := strings.Index(line, `"backend":`)
			warnings = append(warnings, line[i:])
		}
	}
	want := []string{
		`"backend":"claude","type":"anthropic","models":["sonnet"]}`,
		`"backend":"oai","type":"openai","models":["gpt-4o"]}`,
	}
	if diff := cmp.Diff(want, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s\nlogs:\n%s", diff, g.logText())
	}
	if strings.Contains(g.logText(), "gem-secret-value") {
		t.Errorf("the logs contain an upstream key:\n%s", g.logText())
	}
}
