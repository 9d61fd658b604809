package proxy

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agate-gateway/agate/config"
	"github.com/agate-gateway/agate/translate"
)

// TestCloudContextExceeded: a cloud backend's provider recognizes its dialect's refusal
// of a prompt over the context window (translate.ContextLimit), so context_fallbacks
// apply on azure and vertex backends as on the dialect's own (before, the cloud wrapper
// hid the dialect's method and no cloud refusal was one); other errors are not.
func TestCloudContextExceeded(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	fixture := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "fixtures", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	azure := azureProvider(config.Backend{Type: "azure", Azure: config.Azure{Auth: "api_key"}})
	azureResponses := azureProvider(config.Backend{Type: "azure", Azure: config.Azure{Auth: "api_key", API: "responses"}})
	vertex := func(publisher string) translate.Provider {
		return vertexProvider(config.Backend{Type: "vertex", Vertex: config.Vertex{Project: "p", Location: "us-east5", Publisher: publisher}})
	}
	for _, tt := range []struct {
		name     string
		provider translate.Provider
		status   int
		body     []byte
		want     bool
	}{
		{"azure chat context_length_exceeded", azure, 400, fixture("openai-chat/errors/400-context-length-exceeded.observed.json"), true},
		{"azure responses context_length_exceeded", azureResponses, 400, fixture("openai-chat/errors/400-context-length-exceeded.observed.json"), true},
		{"azure content filter", azure, 400, []byte(`{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy.","type":null,"param":"prompt","code":"content_filter","status":400}}`), false},
		{"claude on vertex 413 Prompt is too long", vertex("anthropic"), 413, []byte(`{"type":"error","error":{"type":"invalid_request_error","message":"Prompt is too long"},"request_id":"req_vrtx_011CX6sWnm678g4YPRps1ESQ"}`), true},
		{"claude on vertex prompt is too long", vertex("anthropic"), 400, fixture("anthropic/errors/400-prompt-too-long.observed.json"), true},
		{"claude on vertex overloaded", vertex("anthropic"), 529, []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`), false},
		{"gemini on vertex input token count", vertex("google"), 400, []byte(`{"error":{"code":400,"message":"The input token count exceeds the maximum number of tokens allowed 1048576.","status":"INVALID_ARGUMENT"}}`), true},
		{"gemini on vertex quota", vertex("google"), 429, []byte(`{"error":{"code":429,"message":"Resource exhausted. Please try again later.","status":"RESOURCE_EXHAUSTED"}}`), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.provider.DecodeError(tt.status, tt.body)
			if got := translate.ContextExceeded(tt.provider, e); got != tt.want {
				t.Fatalf("ContextExceeded(%+v) = %v, want %v", e, got, tt.want)
			}
		})
	}
}
