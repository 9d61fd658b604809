package config

import (
	"strings"
	"testing"
)

// TestCloudBackends_Defaults: what an azure and a vertex backend are after Parse.
func TestCloudBackends_Defaults(t *testing.T) {
	tests := []struct {
		name, yaml string
		check      func(Backend) bool
	}{
		{"azure with api_key authenticates with it, chat on the v1 surface", `type: azure
    base_url: https://r.openai.azure.com
    api_key: k`, func(b Backend) bool {
			return b.Azure == Azure{API: "chat", Auth: "api_key", Credential: "default", Scope: DefaultAzureScope}
		}},
		{"azure without api_key uses entra", `type: azure
    base_url: https://r.openai.azure.com`, func(b Backend) bool { return b.Azure.Auth == "entra" }},
		{"an unquoted api_version (a YAML date) is kept as written", `type: azure
    base_url: https://r.openai.azure.com
    azure: {api_version: 2024-10-21}`, func(b Backend) bool { return b.Azure.APIVersion == "2024-10-21" }},
		{"vertex in a region gets the regional endpoint and publisher google", `type: vertex
    vertex: {project: p, location: us-east5}`, func(b Backend) bool {
			return b.BaseURL == "https://us-east5-aiplatform.googleapis.com" && b.Vertex.Publisher == "google"
		}},
		{"vertex global gets the global endpoint", `type: vertex
    vertex: {project: p, location: global, publisher: anthropic}`, func(b Backend) bool {
			return b.BaseURL == "https://aiplatform.googleapis.com"
		}},
		{"a configured base_url is kept", `type: vertex
    base_url: https://private.example
    vertex: {project: p, location: global}`, func(b Backend) bool { return b.BaseURL == "https://private.example" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte("backends:\n  b:\n    "+tt.yaml+"\nmodels:\n  m: {backend: b}\n"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if b := cfg.Backends["b"]; !tt.check(b) {
				t.Errorf("backend %+v", b)
			}
		})
	}
}

// TestCloudBackends_Invalid: each mistake is an error naming its key.
func TestCloudBackends_Invalid(t *testing.T) {
	tests := []struct{ yaml, key string }{
		{"type: azure\n    base_url: https://r\n    azure: {api: embeddings}", "backends.b.azure.api"},
		{"type: azure\n    base_url: https://r\n    azure: {auth: password}", "backends.b.azure.auth"},
		{"type: azure\n    base_url: https://r\n    azure: {credential: cli}", "backends.b.azure.credential"},
		{"type: azure\n    base_url: https://r\n    azure: {api_version: '1&x=2'}", "backends.b.azure.api_version"},
		{"type: azure\n    base_url: https://r\n    azure: {authority_host: login}", "backends.b.azure.authority_host"},
		{"type: openai\n    base_url: https://r\n    azure: {api: chat}", "backends.b.azure"},
		{"type: vertex\n    vertex: {location: global}", "backends.b.vertex.project"},
		{"type: vertex\n    vertex: {project: p}", "backends.b.vertex.location"},
		{"type: vertex\n    vertex: {project: p, location: global, publisher: meta}", "backends.b.vertex.publisher"},
		{"type: gemini\n    base_url: https://r\n    vertex: {project: p}", "backends.b.vertex"},
	}
	for _, tt := range tests {
		_, err := Parse([]byte("backends:\n  b:\n    "+tt.yaml+"\nmodels:\n  m: {backend: b}\n"), nil)
		if err == nil || !strings.Contains(err.Error(), tt.key+":") {
			t.Errorf("%s: error %v, want one naming %s", tt.yaml, err, tt.key)
		}
	}
}
