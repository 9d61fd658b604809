package messagesin_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/anthropic"
	"github.com/agate-gateway/agate/translate/gemini"
	"github.com/agate-gateway/agate/translate/messagesin"
	"github.com/agate-gateway/agate/translate/openai"
	"github.com/agate-gateway/agate/translate/responses"
)

// lazyBodies are the lazy parse's specification cases: the recordings (Claude Code's
// request, scenario d's histories) and bodies whose text, ids, types and tool inputs
// carry escapes.
func lazyBodies(t testing.TB) [][]byte {
	bodies := [][]byte{
		[]byte(claudeCodeRequest),
		[]byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"caf\u00e9 \"quoted\"\n<b>"}]}`),
		[]byte(`{"model":"m","max_tokens":5,"system":[{"type":"te\u0078t","text":"be \"brief\""}],"messages":[` +
			`{"role":"u\u0073er","content":[{"type":"text","text":"line\none \\ two \ud83d\ude00"},{"type":"t\u0065xt","text":"plain"}]},` +
			`{"role":"assistant","content":[{"type":"text","text":"calling \"f\""},{"type":"tool_use","id":"toolu_\u0031","name":"f\u0066","input":{"code":"print(\"hi\")\n","n":1}},` +
			`{"type":"tool_use","id":"toolu_2","name":"g","input":{"q":"plain"}},{"type":"thinking","thinking":"hm\u006d","signature":"s\/ig"}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_\u0031","content":"{\"ok\":true}","is_error":true},` +
			`{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"a\tb"},{"type":"document","title":"T\u00edtulo","source":{"type":"text","data":"d\"oc"}}]},` +
			`{"type":"text","text":"and\u2028then"}]}]}`),
		[]byte(`{"model":"m","max_tokens":5,"messages":[{"role":"system","content":"mid \"system\""},{"role":"user","content":[{"type":"text","text":"a","text":"b\n"}]}]}`),
		// not compact: the passthrough's body is walked (PassBody)
		[]byte("{\"model\": \"m\", \"max_tokens\":5,\n \"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}\n"),
		[]byte(`{"m\u006fdel":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}] }`),
	}
	for _, kb := range []int{10, 100} {
		body, err := os.ReadFile(filepath.Join("testdata", fmt.Sprintf("history-%dk.json", kb)))
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, body)
	}
	return bodies
}

// TestParseLazy: a lazy parse (ParsePass) makes the same checks with the same errors, its
// request decodes (Decode) to the one ParseOwned reads, every upstream encoder that is a
// translate.LiteralReader writes the same bytes from it, and its PassBody makes the
// passthrough's body AppendPassBody makes.
func TestParseLazy(t *testing.T) {
	for i, body := range lazyBodies(t) {
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkLazy(t, body) })
	}
}

// FuzzParseLazy is TestParseLazy's property for any body.
func FuzzParseLazy(f *testing.F) {
	for _, body := range lazyBodies(f) {
		f.Add(body)
	}
	f.Fuzz(checkLazy)
}

func checkLazy(t *testing.T, body []byte) {
	eager, err := messagesin.ParseOwned(bytes.Clone(body), translate.DefaultMaxInflated)
	lazy, pass, lerr := messagesin.ParsePass(bytes.Clone(body), translate.DefaultMaxInflated)
	if fmt.Sprint(err) != fmt.Sprint(lerr) {
		t.Fatalf("ParsePass(%q): error %v, ParseOwned's %v", body, lerr, err)
	}
	if err != nil {
		return
	}
	if got, want := pass.Append([]byte("x"), body, "up\"-model"), messagesin.AppendPassBody([]byte("x"), body, "up\"-model"); !bytes.Equal(got, want) {
		t.Fatalf("PassBody.Append of %q = %s, AppendPassBody's %s", body, got, want)
	}
	for _, p := range []translate.Provider{openai.New(), anthropic.New(), gemini.New(), responses.New()} {
		if _, ok := p.(translate.LiteralReader); !ok {
			t.Fatalf("%T is not a LiteralReader", p)
		}
		opts := &translate.Options{UpstreamModel: "up", DropUnsupported: true}
		want, werr := p.AppendRequest(nil, eager, opts)
		got, gerr := p.AppendRequest(nil, lazy, opts)
		if string(got) != string(want) || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("%T from the lazy request of %q:\n%s (%v)\nnot\n%s (%v)", p, body, got, gerr, want, werr)
		}
	}
	messagesin.Decode(lazy)
	if lazy.Literals != "" {
		t.Fatalf("Decode left Literals set")
	}
	if !reflect.DeepEqual(lazy, eager) {
		t.Fatalf("ParseLazy(%q) decoded = %+v, ParseOwned's %+v", body, lazy, eager)
	}
}
