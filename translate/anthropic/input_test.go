package anthropic

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate/openaichat"
)

// inputGeneral is the tool_use input's general path (anthropicWriter.assistant): lit
// decoded, the value trimmed, a JSON object that jsonx.Valid accepts. It returns the
// bytes the writer appends for a valid object and whether lit's value is one.
func inputGeneral(lit string) ([]byte, bool) {
	d := jsonx.AppendDecoded(nil, lit)
	args := strings.TrimSpace(string(d))
	if args == "" || args[0] != '{' || !jsonx.Valid(args) {
		return nil, false
	}
	return []byte(args), true
}

// checkInputLiteral holds appendInputLiteral to the general path for lit, the contents
// of a checked JSON string literal or (as messagesin's lazy parse leaves a tool_use
// input) raw JSON without a backslash: when it takes lit, the same bytes after dst's and
// an object the general path accepts; when it does not, dst as it was.
func checkInputLiteral(t *testing.T, lit string) (taken bool) {
	t.Helper()
	if !jsonx.Valid(`"`+lit+`"`) && strings.IndexByte(lit, '\\') >= 0 {
		t.Fatalf("neither a checked literal nor raw JSON without escapes: %q", lit)
	}
	pre := []byte("pre")
	got, ok := appendInputLiteral(bytes.Clone(pre), lit)
	want, valid := inputGeneral(lit)
	switch {
	case ok && !valid:
		t.Fatalf("appendInputLiteral took %q, which the general path refuses", lit)
	case ok && !bytes.Equal(got, append(bytes.Clone(pre), want...)):
		t.Fatalf("appendInputLiteral(%q) = %q, want pre%q", lit, got, want)
	case !ok && !bytes.Equal(got, pre):
		t.Fatalf("appendInputLiteral(%q) refused it but left %q", lit, got)
	}
	return ok
}

// literalOf returns the contents of s as a JSON string literal, escaped as
// encoding/json escapes it (html: <, > and & as \u escapes too).
func literalOf(s string, html bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(s); err != nil {
		panic(err)
	}
	return strings.TrimSuffix(b.String(), "\n")[1 : b.Len()-2]
}

// historyArguments returns the tool call arguments of scenario d's histories as the lazy
// parse leaves them (escaped).
func historyArguments(t testing.TB) []string {
	var args []string
	for _, f := range []string{"history-10k.json", "history-100k.json"} {
		body, err := os.ReadFile(filepath.Join("..", "openaichat", "testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		req, err := openaichat.ParseRequestLazy(body)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range req.Messages {
			for _, tc := range m.ToolCalls {
				args = append(args, tc.Arguments)
			}
		}
	}
	return args
}

// TestInputLiteral: the cases the fast path takes and those it leaves to the general
// path, valid or not; and every tool call of scenario d's histories is taken.
func TestInputLiteral(t *testing.T) {
	for _, tt := range []struct {
		value string
		taken bool
	}{
		{`{}`, true},
		{`{ }`, true},
		{`{"a":1}`, true},
		{`{"a": [1, -2.5e+3, 0, true, false, null, "x", {}, [], {"b": [[]]}]}`, true},
		{`{"sql":"SELECT day, count(*) FROM t WHERE city = 'Paris'","timeout_s":10}`, true},
		{`{"é":"ü 中"}`, true},
		{` {"a":1}`, false},      // whitespace around: the general path trims it
		{`{"a":1} `, false},      //
		{"{\n\"a\":1}", false},   // an escape other than \"
		{`{"a":"x\"y"}`, false},  // an escape inside a string
		{`{"a":"<b>"}`, true},    // (html escaping is off in this table)
		{`{"a":1,}`, false},      // invalid
		{`{"a" 1}`, false},       //
		{`{"a":01}`, false},      //
		{`{"a":1.}`, false},      //
		{`{"a":-}`, false},       //
		{`{"a":tru}`, false},     //
		{`{"a":1}{}`, false},     //
		{`{"a":1}]`, false},      //
		{`{"a":[1}`, false},      //
		{`{"a":{"b":1]}`, false}, //
		{`[1]`, false},           // not an object
		{`"x"`, false},           //
		{`{1:2}`, false},         //
		{strings.Repeat(`{"a":`, 40) + `1` + strings.Repeat(`}`, 40), false}, // deeper than the fast path goes
	} {
		if taken := checkInputLiteral(t, literalOf(tt.value, false)); taken != tt.taken {
			t.Errorf("%s: taken %v, want %v", tt.value, taken, tt.taken)
		}
	}
	for _, tt := range []struct {
		lit   string
		taken bool
	}{
		{`{\"a\":\"\u003cb\u003e \u0026 \u00e9\u4e2d\"}`, true}, // encoding/json's and Python's \u escapes
		{`{\"a\":\"\u0022\"}`, false},                           // a quote in the value's string
		{`{\"a\":\"\u005c\"}`, false},                           // a backslash
		{`{\"a\":\"\u000a\"}`, false},                           // a control character: invalid
		{`{\"a\":\"\ud83d\ude00\"}`, false},                     // a surrogate pair
		{`{\"a\":\"\\n\"}`, false},                              // an escape of the value's own
		{`{\"a\":\"x\/y\"}`, false},                             //
		{`{\u0022a\":1}`, false},                                // a \u escape outside a string
		{`{"a":1}`, false},                                      // raw JSON, not a checked literal's contents
	} {
		if taken := checkInputLiteral(t, tt.lit); taken != tt.taken {
			t.Errorf("%s: taken %v, want %v", tt.lit, taken, tt.taken)
		}
	}
	args := historyArguments(t)
	if len(args) < 100 {
		t.Fatalf("only %d tool calls in the histories", len(args))
	}
	for _, a := range args {
		if !checkInputLiteral(t, a) {
			t.Errorf("the fast path leaves scenario d's arguments %q to the general path", a)
		}
	}
}

// FuzzInputLiteralMatchesGeneral holds appendInputLiteral to the general path for any
// string value escaped as a JSON string literal, with and without encoding/json's HTML
// escapes, and for any checked literal as it comes.
func FuzzInputLiteralMatchesGeneral(f *testing.F) {
	for _, a := range historyArguments(f)[:8] {
		f.Add(jsonx.AppendDecoded(nil, a))
	}
	for _, s := range []string{`{}`, `{"a":[1,-2.5e+3,true,null,{"b":"c"}]}`, `{\"a\":\"\u003cb\u003e\"}`, `{\"a\":\"\ud83d\ude00\"}`, ` {"a":1}`, `{"a":"x\"y"}`, `{"a":1,}`, `{"a":01}`, `[1]`, `{"é":"\u2028"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		checkInputLiteral(t, literalOf(string(value), false))
		checkInputLiteral(t, literalOf(string(value), true))
		if jsonx.Valid(`"`+string(value)+`"`) || !bytes.ContainsRune(value, '\\') { // value itself as the literal
			checkInputLiteral(t, string(value))
		}
	})
}

// BenchmarkInputLiteral writes the two tool calls' arguments of a scenario d turn as
// tool_use inputs, by the fast path and by the general path.
func BenchmarkInputLiteral(b *testing.B) {
	args := historyArguments(b)[:2]
	dst := make([]byte, 0, 1024)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			dst = dst[:0]
			for _, a := range args {
				var ok bool
				if dst, ok = appendInputLiteral(dst, a); !ok {
					b.Fatal("not taken")
				}
			}
		}
	})
	b.Run("general", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			dst = dst[:0]
			for _, a := range args {
				at := len(dst)
				dst = jsonx.AppendDecoded(dst, a)
				if args := strings.TrimSpace(jsonx.View(dst[at:])); args == "" || args[0] != '{' || !jsonx.Valid(args) {
					b.Fatal("invalid")
				}
			}
		}
	})
}
