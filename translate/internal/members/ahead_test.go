package members

import (
	"strings"
	"testing"
)

// TestModelAhead: the last "model" member's string, found from the end of the body;
// no guess when that member's value is not a plain string or the text is cut.
func TestModelAhead(t *testing.T) {
	for _, c := range []struct {
		body, want string
		ok         bool
	}{
		{`{"input":[{"role":"user","content":"x"}],"max_output_tokens":5,"model":"gpt-4o","store":false,"tools":[]}`, "gpt-4o", true},
		{`{"messages":[], "model" : "claude" ,"stream":true}`, "claude", true},
		{"{\"messages\":[],\"model\":\n\t\"m\"}", "m", true},
		{`{"model":"a","tools":[{"input_schema":{"model":"b"}}]}`, "b", true}, // a guess, wrong
		{`{"model":"a","tools":[{"input_schema":{"model":{"type":"string"}}}]}`, "", false},
		{`{"messages":[],"model":"m\u0065"}`, "", false},
		{`{"messages":[],"model":5}`, "", false},
		{`{"messages":[],"model":"m`, "", false},
		{`{"messages":[],"model"`, "", false},
		{`{"messages":[{"content":"say \"model\": \"x\""}]}`, "", false},
		{`{"messages":[]}`, "", false},
	} {
		if got, ok := ModelAhead(c.body); got != c.want || ok != c.ok {
			t.Errorf("ModelAhead(%s) = %q, %v; want %q, %v", c.body, got, ok, c.want, c.ok)
		}
	}
}

// FuzzLastKey holds lastKey's skipping search to strings.LastIndex on any body; seeded
// with TestModelAhead's bodies and the bench's request bodies' tails, where the key sits.
func FuzzLastKey(f *testing.F) {
	for _, s := range []string{
		`{"input":[{"role":"user","content":"x"}],"max_output_tokens":5,"model":"gpt-4o","store":false,"tools":[]}`,
		`{"model":"a","tools":[{"input_schema":{"model":"b"}}]}`,
		`"model"`, `"mode"model"`, `""model"`, `"model"model"`, `model"`, `"modelmodel"`, `"mod"model"l"`, ``, `"`,
		`],"model":"MODEL","stream":false,"system":"You are an operations assistant.","temperature":0.2,"tools":[{"description":"Get the current weather","name":"get_weather"}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		if got, want := lastKey(body), strings.LastIndex(body, `"model"`); got != want {
			t.Fatalf("lastKey(%q) = %d, strings.LastIndex's %d", body, got, want)
		}
	})
}

// TestModelAsk: each model asked about once; a guess first, then the model read if it
// is another; nothing asked without Passes.
func TestModelAsk(t *testing.T) {
	var asked []string
	a := ModelAsk{Passes: func(m string) bool { asked = append(asked, m); return m == "pass" }}
	if !a.Ahead(`{"messages":[],"model":"pass"}`) || !a.Model("pass") || !a.Ahead(`{"model":"other"}`) {
		t.Fatal("a model that passes was refused")
	}
	if a.Model("other") {
		t.Fatal("a model that does not pass was accepted")
	}
	if want := []string{"pass", "other"}; len(asked) != 2 || asked[0] != want[0] || asked[1] != want[1] {
		t.Fatalf("asked %q, want %q", asked, want)
	}
	var none ModelAsk
	if !none.Ahead(`{"model":"m"}`) || !none.Model("m") {
		t.Fatal("a ModelAsk without Passes refused")
	}
}
