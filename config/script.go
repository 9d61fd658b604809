package config

import "fmt"

// ScriptTurn is one canned answer of a mock model (Model.Script): text, or tool calls,
// never both.
type ScriptTurn struct {
	// Text is the answer, streamed word by word.
	Text string `koanf:"text"`
	// ToolCalls are the calls the model makes in this turn, in order.
	ToolCalls []ScriptToolCall `koanf:"tool_calls"`
}

// ScriptToolCall is one tool call of a ScriptTurn.
type ScriptToolCall struct {
	// Name is the tool's name as the request lists it. Required.
	Name string `koanf:"name"`
	// Arguments are the call's arguments; nil lets the mock fill them from the tool's
	// schema, as it does unscripted.
	Arguments map[string]any `koanf:"arguments"`
}

// validateScript checks models.<name>.script: only on a mock backend, each turn text or
// tool calls, each call named.
func (c *Config) validateScript(v *validator, p string, m Model) {
	if len(m.Script) == 0 {
		return
	}
	if b, ok := c.Backends[m.Backend]; ok && b.Type != "mock" {
		v.addf(p+".script", "only a model on a mock backend has a script (backend %q is %s)", m.Backend, b.Type)
	}
	for i, t := range m.Script {
		tp := fmt.Sprintf("%s.script[%d]", p, i)
		switch {
		case t.Text == "" && len(t.ToolCalls) == 0:
			v.addf(tp, "set text or tool_calls")
		case t.Text != "" && len(t.ToolCalls) > 0:
			v.addf(tp, "set text or tool_calls, not both")
		}
		for j, tc := range t.ToolCalls {
			if tc.Name == "" {
				v.addf(fmt.Sprintf("%s.tool_calls[%d].name", tp, j), "required")
			}
		}
	}
}
