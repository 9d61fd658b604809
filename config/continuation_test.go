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
