package config

import "testing"

// TestContinuation_Values: models.<name>.continuation is one of prefill, restart, off, or
// unset; unset means the backend type's default.
func TestContinuation_Values(t *testing.T) {
	for _, tt := range []struct{ value, want string }{
		{"", ""}, {"prefill", ""}, {"restart", ""}, {"off", ""},
		{"resume", `config: models.demo.continuation: "resume" is not one of prefill, restart, off`},
	} {
		c := validConfig()
		setModel(c, "demo", func(m *Model) { m.Continuation = tt.value })
		got := ""
		if err := c.Validate(); err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("continuation %q: Validate() = %q; want %q", tt.value, got, tt.want)
		}
	}
	for _, tt := range []struct{ typ, set, want string }{
		{"anthropic", "", ContinuationPrefill},
		{"gemini", "", ContinuationPrefill},
		{"openai", "", ContinuationRestart},
		{"responses", "", ContinuationRestart},
		{"azure", "", ContinuationRestart}, // Azure OpenAI: chat completions or Responses
		{"bedrock", "", ContinuationOff},
		{"mock", "", ContinuationOff},
		{"openai", "prefill", ContinuationPrefill}, // a server that continues a partial assistant message
		{"anthropic", "off", ContinuationOff},
	} {
		if got := ContinuationOf(tt.typ, tt.set); got != tt.want {
			t.Errorf("ContinuationOf(%q, %q) = %q; want %q", tt.typ, tt.set, got, tt.want)
		}
	}
}

// TestContinuation_CloudDefaults: a model on vertex or bedrock takes the default of the
// dialect that serves it: prefill for Claude (rawPredict, InvokeModel) and for Gemini on
// Vertex, restart for Bedrock's Converse (what a final assistant message means there is
// each model's).
func TestContinuation_CloudDefaults(t *testing.T) {
	for _, tt := range []struct {
		typ, publisher string
		claude         bool
		dialect, want  string
	}{
		{"vertex", "anthropic", false, "anthropic", ContinuationPrefill},
		{"vertex", "google", false, "gemini", ContinuationPrefill},
		{"vertex", "", false, "gemini", ContinuationPrefill},
		{"bedrock", "", true, "anthropic", ContinuationPrefill},
		{"bedrock", "", false, "converse", ContinuationRestart},
		{"azure", "", false, "azure", ContinuationRestart},
		{"anthropic", "", false, "anthropic", ContinuationPrefill},
	} {
		d := ContinuationDialect(tt.typ, tt.publisher, tt.claude)
		if got := ContinuationOf(d, ""); d != tt.dialect || got != tt.want {
			t.Errorf("%s (publisher %q, claude %v): dialect %q, continuation %q; want %q, %q", tt.typ, tt.publisher, tt.claude, d, got, tt.dialect, tt.want)
		}
	}
}

// TestContinuation_PrefillRefused: continuation: prefill on a backend whose API never
// continues a partial assistant message (responses, azure), as the model's backend or
// one of its deployments', is an error naming the key, the backend and its type; on an
// openai backend (vLLM and the like may continue one) it is the operator's choice.
func TestContinuation_PrefillRefused(t *testing.T) {
	for _, tt := range []struct {
		typ, deployment, want string
	}{
		{"openai", "", ""},
		{"anthropic", "", ""},
		{"gemini", "", ""},
		{"responses", "", `config: models.demo.continuation: prefill is not possible on backend "up" of type responses: the Responses API does not continue a partial assistant message; use restart`},
		{"azure", "", `config: models.demo.continuation: prefill is not possible on backend "up" of type azure: Azure OpenAI's APIs do not continue a partial assistant message; use restart`},
		{"openai", "az", `config: models.demo.continuation: prefill is not possible on backend "az" of type azure: Azure OpenAI's APIs do not continue a partial assistant message; use restart`},
	} {
		c := validConfig()
		c.Backends["up"] = Backend{Type: tt.typ, BaseURL: "https://up.example.com"}
		c.Backends["az"] = Backend{Type: "azure", BaseURL: "https://res.openai.azure.com", Azure: Azure{Auth: "api_key"}, APIKey: "k"}
		setModel(c, "demo", func(m *Model) {
			m.Backend, m.Continuation, m.UpstreamModel, m.Script = "up", ContinuationPrefill, "m", nil
			if tt.deployment != "" {
				m.Backend, m.Deployments = "", []Deployment{{Backend: "up"}, {Backend: tt.deployment}}
			}
		})
		got := ""
		if err := c.Validate(); err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%s (deployment %q): Validate() = %q; want %q", tt.typ, tt.deployment, got, tt.want)
		}
	}
}
