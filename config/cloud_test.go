package config

import (
	"os"
	"strings"
	"testing"
)

// TestCloudBackends_Defaults: what an azure, a vertex and a bedrock backend are after Parse.
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
		{"bedrock gets its region's runtime endpoint", `type: bedrock
    bedrock: {region: eu-central-1, profile: prod}`, func(b Backend) bool {
			return b.BaseURL == "https://bedrock-runtime.eu-central-1.amazonaws.com" && b.Bedrock == Bedrock{Region: "eu-central-1", Profile: "prod"}
		}},
		{"bedrock keeps a configured base_url (a VPC endpoint)", `type: bedrock
    base_url: https://vpce-1.bedrock-runtime.us-east-1.vpce.amazonaws.com
    bedrock: {region: us-east-1}`, func(b Backend) bool {
			return b.BaseURL == "https://vpce-1.bedrock-runtime.us-east-1.vpce.amazonaws.com"
		}},
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
		{"type: bedrock", "backends.b.bedrock.region"},
		{"type: bedrock\n    bedrock: {region: 'us east 1'}", "backends.b.bedrock.region"},
		{"type: anthropic\n    base_url: https://r\n    bedrock: {region: us-east-1}", "backends.b.bedrock"},
	}
	for _, tt := range tests {
		_, err := Parse([]byte("backends:\n  b:\n    "+tt.yaml+"\nmodels:\n  m: {backend: b}\n"), nil)
		if err == nil || !strings.Contains(err.Error(), tt.key+":") {
			t.Errorf("%s: error %v, want one naming %s", tt.yaml, err, tt.key)
		}
	}
}

// TestLoad_ExampleCloudSections uncomments the cloud backends and models of
// config.example.yaml (the blocks after "# Cloud backends" and "# Cloud models") so that
// they cannot rot: they load, with an Azure key from the environment.
func TestLoad_ExampleCloudSections(t *testing.T) {
	data, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	inBlock := false
	for line := range strings.SplitSeq(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "  # Cloud backends") || strings.HasPrefix(line, "  # Cloud models"):
			inBlock = true
			out = append(out, "")
			continue
		case !strings.HasPrefix(line, "  #"):
			inBlock = false
		}
		if inBlock {
			line = "  " + strings.TrimPrefix(line, "  # ")
		}
		out = append(out, line)
	}
	got, err := Parse([]byte(strings.Join(out, "\n")), []string{"AZURE_OPENAI_API_KEY=k"})
	if err != nil {
		t.Fatalf("Parse(uncommented example): %v", err)
	}
	az, gem, cl, br := got.Backends["azure"], got.Backends["vertex-gemini"], got.Backends["vertex-claude"], got.Backends["bedrock"]
	if az.Azure.APIVersion != "2024-10-21" || az.Azure.Auth != "api_key" || gem.BaseURL != "https://aiplatform.googleapis.com" ||
		cl.BaseURL != "https://us-east5-aiplatform.googleapis.com" || cl.Vertex.Publisher != "anthropic" ||
		br.BaseURL != "https://bedrock-runtime.us-east-1.amazonaws.com" || br.Bedrock.Region != "us-east-1" || br.APIKey != "" {
		t.Errorf("cloud backends %+v\n%+v\n%+v\n%+v", az, gem, cl, br)
	}
	if got.Models["claude-vertex"].UpstreamModel != "claude-sonnet-4-5@20250929" || got.Models["gpt-4o-mini-azure"].Backend != "azure" ||
		got.Models["claude-bedrock"].Backend != "bedrock" {
		t.Errorf("cloud models %+v", got.Models)
	}
}
