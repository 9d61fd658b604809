package responsesin

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/spectest"
)

// codexNamespace is the multi-agent namespace tool Codex CLI 0.169 sends with every
// request (cut to two of its functions), as captured from `codex exec`.
const codexNamespace = `{"type":"namespace","name":"multi_agent_v1","description":"Tools for spawning and managing sub-agents.","tools":[
	{"type":"function","name":"spawn_agent","description":"Spawn a sub-agent.","strict":false,"parameters":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"],"additionalProperties":false}},
	{"type":"function","name":"close_agent","description":"Close an agent.","strict":false,"parameters":{"type":"object","properties":{"target":{"type":"string"}},"required":["target"],"additionalProperties":false}}]}`

// TestParse_NamespaceTools: the functions of a namespace tool go upstream as plain tools
// under their flat names, after the plain tools, and a function_call input item with a
// namespace names its function by the same flat name.
func TestParse_NamespaceTools(t *testing.T) {
	long := strings.Repeat("n", 40)
	tests := []struct {
		name      string
		body      string
		wantTools []string // Core.Tools names
		wantCalls []string // the tool call names of the core messages
		// untranslatable is the param of Untranslatable, "" for none.
		untranslatable string
	}{
		{
			name: "Codex's tools and a call of a namespaced function sent back",
			body: `{"model":"m","tools":[{"type":"function","name":"exec_command","parameters":{"type":"object"}},` + codexNamespace + `,
				{"type":"function","name":"update_goal"}],
				"input":[{"role":"user","content":"go"},
				{"type":"function_call","call_id":"c1","name":"spawn_agent","namespace":"multi_agent_v1","arguments":"{}"},
				{"type":"function_call_output","call_id":"c1","namespace":"multi_agent_v1","output":"spawned"},
				{"type":"function_call","call_id":"c2","name":"exec_command","arguments":"{}"},
				{"type":"function_call_output","call_id":"c2","output":"ok"}]}`,
			wantTools: []string{"exec_command", "update_goal", "multi_agent_v1__spawn_agent", "multi_agent_v1__close_agent"},
			wantCalls: []string{"multi_agent_v1__spawn_agent", "exec_command"},
		},
		{
			name: "tools after input: the call still takes the flat name",
			body: `{"model":"m","input":[{"type":"function_call","call_id":"c1","name":"close_agent","namespace":"multi_agent_v1","arguments":"{}"},
				{"type":"function_call_output","call_id":"c1","output":"x"}],"tools":[` + codexNamespace + `]}`,
			wantTools: []string{"multi_agent_v1__spawn_agent", "multi_agent_v1__close_agent"},
			wantCalls: []string{"multi_agent_v1__close_agent"},
		},
		{
			name: "a plain tool already named ns__f: the fallback name",
			body: `{"model":"m","input":[{"type":"function_call","call_id":"c1","name":"f","namespace":"ns","arguments":"{}"},
				{"type":"function_call_output","call_id":"c1","output":"x"}],
				"tools":[{"type":"function","name":"ns__f"},{"type":"namespace","name":"ns","description":"d","tools":[{"type":"function","name":"f"}]}]}`,
			wantTools: []string{"ns__f", fallbackFlatName("ns", "f")},
			wantCalls: []string{fallbackFlatName("ns", "f")},
		},
		{
			name: "names no upstream accepts: the fallback",
			body: `{"model":"m","input":"x","tools":[{"type":"namespace","name":"my.crm","description":"d","tools":[{"type":"function","name":"f"}]},
				{"type":"namespace","name":"` + long + `","description":"d","tools":[{"type":"function","name":"` + long + `"}]},
				{"type":"namespace","name":"9ns","description":"d","tools":[{"type":"function","name":"g"}]}]}`,
			wantTools: []string{fallbackFlatName("my.crm", "f"), fallbackFlatName(long, long), fallbackFlatName("9ns", "g")},
		},
		{
			name: "a call of a namespace the request no longer offers",
			body: `{"model":"m","input":[{"type":"function_call","call_id":"c1","name":"f","namespace":"gone","arguments":"{}"},
				{"type":"function_call_output","call_id":"c1","output":"x"}]}`,
			wantCalls: []string{"gone__f"},
		},
		{
			name: "a custom tool in a namespace is left to a responses backend",
			body: `{"model":"m","input":"x","tools":[{"type":"namespace","name":"ns","description":"d","tools":[
				{"type":"function","name":"f"},{"type":"custom","name":"g"}]}]}`,
			wantTools:      []string{"ns__f"},
			untranslatable: "tools[0].tools[1].type",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Parse([]byte(tt.body))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			var tools, calls []string
			for _, tool := range r.Core.Tools {
				tools = append(tools, tool.Name)
				if !validFlatName(tool.Name) {
					t.Errorf("tool name %q is not a valid upstream function name", tool.Name)
				}
			}
			for _, m := range r.Core.Messages {
				for _, c := range m.ToolCalls {
					calls = append(calls, c.Name)
				}
			}
			if diff := cmp.Diff(tt.wantTools, tools); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantCalls, calls); diff != "" {
				t.Errorf("tool calls (-want +got):\n%s", diff)
			}
			var pe *translate.ParamError
			switch {
			case tt.untranslatable == "" && r.Untranslatable != nil:
				t.Errorf("untranslatable %v, want none", r.Untranslatable)
			case tt.untranslatable != "" && (!errors.As(r.Untranslatable, &pe) || pe.Param != tt.untranslatable):
				t.Errorf("untranslatable %v, want param %s", r.Untranslatable, tt.untranslatable)
			}
		})
	}
}

// TestParse_NamespaceToolDetails: a namespaced function keeps its description, schema
// and strictness, and the Response echoes the namespace tool as sent.
func TestParse_NamespaceToolDetails(t *testing.T) {
	r := mustParse(t, `{"model":"m","input":"x","tools":[`+codexNamespace+`]}`)
	want := translate.Tool{Name: "multi_agent_v1__close_agent", Description: "Close an agent.", Strict: ptr(false),
		Parameters: `{"type":"object","properties":{"target":{"type":"string"}},"required":["target"],"additionalProperties":false}`}
	if diff := cmp.Diff(want, r.Core.Tools[1]); diff != "" {
		t.Errorf("tool (-want +got):\n%s", diff)
	}
	var echo struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(append(append([]byte{'{'}, r.echo...), '}'), &echo); err != nil || len(echo.Tools) != 1 {
		t.Fatalf("echo %s: %v", r.echo, err)
	}
	var gotNS, wantNS any
	json.Unmarshal(echo.Tools[0], &gotNS)
	json.Unmarshal([]byte(codexNamespace), &wantNS)
	if diff := cmp.Diff(wantNS, gotNS); diff != "" {
		t.Errorf("echoed tool (-want +got):\n%s", diff)
	}
}

// TestParse_NamespaceErrors: malformed namespace tools and namespaced calls are 400s
// naming the field.
func TestParse_NamespaceErrors(t *testing.T) {
	tests := []struct{ name, body, param string }{
		{"namespace without name", `{"model":"m","input":"x","tools":[{"type":"namespace","description":"d","tools":[{"type":"function","name":"f"}]}]}`, "tools[0].name"},
		{"namespace tools not an array", `{"model":"m","input":"x","tools":[{"type":"namespace","name":"ns","description":"d","tools":{}}]}`, "tools[0].tools"},
		{"function without name", `{"model":"m","input":"x","tools":[{"type":"namespace","name":"ns","description":"d","tools":[{"type":"function"}]}]}`, "tools[0].tools[0].name"},
		{"function twice", `{"model":"m","input":"x","tools":[{"type":"namespace","name":"ns","description":"d","tools":[{"type":"function","name":"f"},{"type":"function","name":"f"}]}]}`, "tools[0].tools[1].name"},
		{"duplicate key in a namespace", `{"model":"m","input":"x","tools":[{"type":"namespace","name":"a","name":"b","description":"d","tools":[]}]}`, "tools[0].name"},
		{"call namespace not a string", `{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","namespace":1,"arguments":"{}"}]}`, "input[0].namespace"},
		{"call namespace empty", `{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","namespace":"","arguments":"{}"}]}`, "input[0].namespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.body))
			var pe *translate.ParamError
			if !errors.As(err, &pe) || pe.Param != tt.param {
				t.Errorf("error %v, want a ParamError naming %s", err, tt.param)
			}
		})
	}
}

// TestFlatName: flat names are valid upstream function names, at most 64 bytes,
// deterministic, and different pairs get different names.
func TestFlatName(t *testing.T) {
	tests := []struct{ ns, name, want string }{
		{"multi_agent_v1", "spawn_agent", "multi_agent_v1__spawn_agent"},
		{"crm", "get-customer", "crm__get-customer"},
		{"_x", "y", "_x__y"},
		{"my.crm", "f", "my_crm__f_" + fallbackFlatName("my.crm", "f")[10:]},
		{"9ns", "g", "_9ns__g_" + fallbackFlatName("9ns", "g")[8:]},
	}
	for _, tt := range tests {
		t.Run(tt.ns+"/"+tt.name, func(t *testing.T) {
			got := FlatName(tt.ns, tt.name)
			if got != tt.want || got != FlatName(tt.ns, tt.name) {
				t.Errorf("FlatName(%q, %q) = %q, want %q", tt.ns, tt.name, got, tt.want)
			}
		})
	}
	long := strings.Repeat("é", 60)
	seen := map[string]string{}
	for _, pair := range [][2]string{{long, "a"}, {long, "b"}, {"a", long}, {"a.b", "c"}, {"a_b", "c"}, {"a b", "c"}, {"", "x"}} {
		for _, f := range []string{FlatName(pair[0], pair[1]), fallbackFlatName(pair[0], pair[1])} {
			if !validFlatName(f) {
				t.Errorf("flat name %q of %q is not a valid upstream function name", f, pair)
			}
		}
		f := fallbackFlatName(pair[0], pair[1])
		if prev, dup := seen[f]; dup {
			t.Errorf("%q and %q share the fallback %q", prev, pair, f)
		}
		seen[f] = pair[0] + "\x00" + pair[1]
	}
}

// FuzzFlatName: every flat name is a valid upstream function name.
func FuzzFlatName(f *testing.F) {
	f.Add("multi_agent_v1", "spawn_agent")
	f.Add("my.crm", "f")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, ns, name string) {
		if got := FlatName(ns, name); !validFlatName(got) {
			t.Fatalf("FlatName(%q, %q) = %q", ns, name, got)
		}
		if got := fallbackFlatName(ns, name); !validFlatName(got) {
			t.Fatalf("fallbackFlatName(%q, %q) = %q", ns, name, got)
		}
	})
}

// TestEncoder_NamespacedCall: the upstream's call of a flat name reaches the client as a
// function_call item with the function's name and namespace, streamed and in the
// Response; a call of a plain tool has no namespace.
func TestEncoder_NamespacedCall(t *testing.T) {
	eventSchema, responseSchema := schemas(t)
	req := mustParse(t, `{"model":"m","input":"hi","stream":true,"tools":[{"type":"function","name":"exec_command"},`+codexNamespace+`]}`)
	enc := NewEncoder(req, EncoderOptions{ID: "resp_x", Model: "m", Created: 1, Stream: true})
	evs := []translate.Event{
		{Kind: translate.EventStart, ID: "up", Model: "up-model"},
		{Kind: translate.EventToolCallStart, Index: 0, CallID: "call_a", Name: "multi_agent_v1__spawn_agent"},
		{Kind: translate.EventToolCallArgsDelta, Index: 0, Text: `{"message":"hi"}`},
		{Kind: translate.EventToolCallEnd, Index: 0},
		{Kind: translate.EventToolCallStart, Index: 1, CallID: "call_b", Name: "exec_command"},
		{Kind: translate.EventToolCallArgsDelta, Index: 1, Text: `{}`},
		{Kind: translate.EventFinish, FinishReason: translate.FinishToolCalls},
	}
	var out []byte
	for i := range evs {
		out = enc.Encode(out, &evs[i])
	}
	out = enc.Finish(out, 2)
	checkStream(t, out)
	type call struct {
		Type      string  `json:"type"`
		Name      string  `json:"name"`
		Namespace *string `json:"namespace"`
		CallID    string  `json:"call_id"`
	}
	ns := "multi_agent_v1"
	want := []call{{"function_call", "spawn_agent", &ns, "call_a"}, {"function_call", "exec_command", nil, "call_b"}}
	var streamed []call
	for _, f := range frames(t, out) {
		if err := eventSchema.validate(f.data); err != nil {
			t.Errorf("%s does not satisfy the schema: %v\n%s", f.typ, err, f.data)
		}
		switch f.typ {
		case "response.output_item.done":
			var ev struct{ Item call }
			json.Unmarshal([]byte(f.data), &ev)
			streamed = append(streamed, ev.Item)
		case "response.function_call_arguments.done":
			var ev struct{ Name string }
			json.Unmarshal([]byte(f.data), &ev)
			if ev.Name == "multi_agent_v1__spawn_agent" {
				t.Errorf("function_call_arguments.done names the flat name: %s", f.data)
			}
		}
	}
	if diff := cmp.Diff(want, streamed); diff != "" {
		t.Errorf("streamed items (-want +got):\n%s", diff)
	}
	resp := enc.AppendResponse(nil)
	if err := spectest.Validate(responseSchema, resp); err != nil {
		t.Errorf("Response does not satisfy the schema: %v\n%s", err, resp)
	}
	var got struct{ Output []call }
	if err := json.Unmarshal(resp, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got.Output); diff != "" {
		t.Errorf("Response output (-want +got):\n%s", diff)
	}
	// The items sent back on the next turn name the flat name upstream again.
	next := mustParse(t, `{"model":"m","tools":[`+codexNamespace+`],"input":`+string(enc.AppendOutput(nil))+`}`)
	if n := next.Core.Messages[0].ToolCalls[0].Name; n != "multi_agent_v1__spawn_agent" {
		t.Errorf("the item sent back goes upstream as %q", n)
	}
}
