package translate_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/anthropic"
	"github.com/agate-gateway/agate/translate/gemini"
	"github.com/agate-gateway/agate/translate/openai"
	"github.com/agate-gateway/agate/translate/responses"
)

// TestContextExceeded: each provider recognizes its upstream's own "over the context
// window" answer (bodies observed from the real APIs: testdata/fixtures/SOURCES.md; Claude
// on Vertex AI's 413 as anthropics/anthropic-sdk-python#1028 quotes it, Gemini on Vertex
// AI's 400 as warpdotdev/warp#15662 does), and no other error.
func TestContextExceeded(t *testing.T) {
	fixture := func(path string) string {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "fixtures", path))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	tests := []struct {
		name     string
		provider translate.Provider
		status   int
		body     string
		want     bool
	}{
		{"openai context_length_exceeded", openai.New(), 400, fixture("openai-chat/errors/400-context-length-exceeded.observed.json"), true},
		{"openai other 400", openai.New(), 400, `{"error":{"message":"Invalid value for 'temperature'","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}`, false},
		{"openai 500", openai.New(), 500, `{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}`, false},
		{"responses context_length_exceeded", responses.New(), 400, fixture("openai-chat/errors/400-context-length-exceeded.observed.json"), true},
		{"anthropic prompt is too long", anthropic.New(), 400, fixture("anthropic/errors/400-prompt-too-long.observed.json"), true},
		{"anthropic other invalid request", anthropic.New(), 400, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}`, false},
		{"claude on vertex 413 Prompt is too long", anthropic.New(), 413, `{"type":"error","error":{"type":"invalid_request_error","message":"Prompt is too long"},"request_id":"req_vrtx_011CX6sWnm678g4YPRps1ESQ"}`, true},
		{"anthropic 413 request_too_large", anthropic.New(), 413, `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}`, false},
		{"gemini on vertex input token count", gemini.New(), 400, `{"error":{"code":400,"message":"The input token count exceeds the maximum number of tokens allowed 1048576.","status":"INVALID_ARGUMENT"}}`, true},
		{"anthropic 401", anthropic.New(), 401, fixture("anthropic/errors/401-auth.mirascope.json"), false},
		{"gemini input token count", gemini.New(), 400, fixture("gemini/errors/400-input-token-count.observed.json"), true},
		{"gemini api key invalid", gemini.New(), 400, fixture("gemini/errors/400-api-key-invalid.mirascope.json"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.provider.DecodeError(tt.status, []byte(tt.body))
			if got := translate.ContextExceeded(tt.provider, e); got != tt.want {
				t.Fatalf("ContextExceeded(%+v) = %v, want %v", e, got, tt.want)
			}
			if tt.want && e.Retryable {
				t.Fatalf("a context error is retryable: %+v", e)
			}
		})
	}
}
