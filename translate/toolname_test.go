package translate_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/messagesin"
	"github.com/agate-gateway/agate/translate/openaichat"
	"github.com/agate-gateway/agate/translate/responsesin"
)

// TestToolNames_OneRuleForEveryClientDialect: the chat, Responses and Messages parsers
// accept and refuse the same function tool names (translate.CheckToolName: 1 to 64 bytes
// of a-z, A-Z, 0-9, _ and -, no name twice), and name the offending field in their own
// terms. Issue 45 item 13: the Responses parser took " " (its FuzzParse found it).
func TestToolNames_OneRuleForEveryClientDialect(t *testing.T) {
	parsers := []struct {
		dialect string
		body    func(tools []string) string
		param   string // the first tool's name, %d for its index
		parse   func([]byte) error
	}{
		{"chat", func(names []string) string {
			return `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[` + list(names, `{"type":"function","function":{"name":%s}}`) + `]}`
		}, "tools[%d].function.name", func(b []byte) error { _, err := openaichat.ParseRequest(b); return err }},
		{"responses", func(names []string) string {
			return `{"model":"m","input":"hi","tools":[` + list(names, `{"type":"function","name":%s}`) + `]}`
		}, "tools[%d].name", func(b []byte) error { _, err := responsesin.Parse(b); return err }},
		{"messages", func(names []string) string {
			return `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"tools":[` + list(names, `{"name":%s,"input_schema":{"type":"object"}}`) + `]}`
		}, "tools[%d].name", func(b []byte) error { _, err := messagesin.Parse(b); return err }},
	}
	for _, tt := range []struct {
		name  string
		tools []string
		bad   int // the index of the refused name, -1 when all are accepted
	}{
		{"plain", []string{`"get_weather"`, `"Read-File_2"`}, -1},
		{"64 bytes", []string{`"` + strings.Repeat("a", 64) + `"`}, -1},
		{"a space", []string{`" "`}, 0},
		{"empty", []string{`""`}, 0},
		{"65 bytes", []string{`"` + strings.Repeat("a", 65) + `"`}, 0},
		{"a dot", []string{`"ok"`, `"fs.read"`}, 1},
		{"non-ASCII", []string{`"caf\u00e9"`}, 0},
		{"twice", []string{`"f"`, `"g"`, `"f"`}, 2},
	} {
		for _, p := range parsers {
			t.Run(tt.name+"/"+p.dialect, func(t *testing.T) {
				body := p.body(tt.tools)
				err := p.parse([]byte(body))
				if tt.bad < 0 {
					if err != nil {
						t.Fatalf("%s refused: %v", body, err)
					}
					return
				}
				var pe *translate.ParamError
				if !errors.As(err, &pe) {
					t.Fatalf("%s accepted (err %v), want a ParamError", body, err)
				}
				if want := strings.Replace(p.param, "%d", string(rune('0'+tt.bad)), 1); pe.Param != want {
					t.Errorf("param %q (%s), want %q", pe.Param, pe.Message, want)
				}
			})
		}
	}
}

// list writes one element of format per name (%s: the name's JSON), comma-separated.
func list(names []string, format string) string {
	els := make([]string, len(names))
	for i, n := range names {
		els[i] = strings.Replace(format, "%s", n, 1)
	}
	return strings.Join(els, ",")
}
