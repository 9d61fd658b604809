package responsesin

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
	"github.com/agate-gateway/agate/translate/openai"
	"github.com/agate-gateway/agate/translate/responses"
)

// lazyBodies are the lazy parse's specification cases: the first pass's (headBodies:
// scenario d's histories and a case at each check), the bench's request bodies
// (proxy/testdata/bench/apis, written by the bench's load generator), and bodies whose
// text, arguments, outputs, ids, types and refusals carry escapes.
func lazyBodies(t testing.TB) [][]byte {
	bodies := headBodies(t)
	for _, name := range []string{"responses-small.json", "responses-10kb.json"} {
		body, err := os.ReadFile(filepath.Join("..", "..", "proxy", "testdata", "bench", "apis", name))
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, body)
	}
	for _, b := range []string{
		`{"model":"m","input":"caf\u00e9 \"quoted\"\n<b>"}`,
		`{"model":"m","instructions":"be \"brief\"","input":[{"role":"u\u0073er","content":"line\none \\ two \ud83d\ude00 \u2028"},` +
			`{"type":"m\u0065ssage","role":"assistant","content":[{"type":"output_text","text":"calling \"f\""},{"type":"refusal","refusal":"n\u006f \"way\""},{"type":"refusal","refusal":"\tnever"}]},` +
			`{"type":"function_call","call_id":"c\u0031","name":"f\u0066","arguments":"{\"code\":\"print(\\\"hi\\\")\\n\",\"n\":1}"},` +
			`{"type":"function_call","call_id":"c2","name":"g","arguments":"{\"q\":\"plain\"}"},` +
			`{"type":"function_call_output","call_id":"c\u0031","output":"{\"ok\":true}\n<&>"},` +
			`{"type":"function_call_output","call_id":"c2","output":[{"type":"input_text","text":"a\tb"},{"type":"input_text","text":"\/c"}]},` +
			`{"type":"reasoning","summary":[{"type":"summary_text","text":"th\u0069nk \"hard\""}]},` +
			`{"role":"assistant","content":"done\r\n"},{"role":"user","content":[{"type":"input_text","text":"and\u2029then"},{"type":"input_image","image_url":"https:\/\/x\/i.png"}]}],` +
			`"tools":[{"type":"function","name":"ff","parameters":{"type":"object"}},{"type":"function","name":"g"}]}`,
		`{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"not \"json\""}]}`,
		`{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"[1,\"\\u0041\"]"},{"role":"user","content":"x"}]}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"a\n","text":"b"}]}]}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":5}]}]}`,
		`{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":"\"x\"","output":"y"}]}`,
	} {
		bodies = append(bodies, []byte(b))
	}
	return bodies
}

// TestParseLazy: a lazy parse makes the same checks with the same errors as ParseWithin,
// every upstream encoder that is a translate.LiteralReader writes the same bytes from its
// request, Decode makes it ParseWithin's request, and ParseHeadLazy's complete request is
// ParseLazy's (its incomplete one ParseHead's).
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
	eager, err := ParseWithin(bytes.Clone(body), translate.DefaultMaxInflated)
	lazy, lerr := ParseLazy(bytes.Clone(body), translate.DefaultMaxInflated)
	if fmt.Sprint(err) != fmt.Sprint(lerr) {
		t.Fatalf("ParseLazy(%q): error %v, ParseWithin's %v", body, lerr, err)
	}
	head, complete, herr := ParseHeadLazy(bytes.Clone(body), translate.DefaultMaxInflated, func(string) bool { return false })
	if fmt.Sprint(herr) != fmt.Sprint(err) || err == nil && !complete {
		t.Fatalf("ParseHeadLazy(%q) for a translated model: complete %v, error %v; ParseWithin's error %v", body, complete, herr, err)
	}
	if err != nil {
		return
	}
	if lazy.Core.Literals != lazy.Body || head.Core.Literals != head.Body {
		t.Fatalf("ParseLazy(%q): Literals is not the body", body)
	}
	for _, p := range []translate.Provider{openai.New(), anthropic.New(), gemini.New(), responses.New()} {
		if _, ok := p.(translate.LiteralReader); !ok {
			t.Fatalf("%T is not a LiteralReader", p)
		}
		opts := &translate.Options{UpstreamModel: "up", DropUnsupported: true}
		want, werr := p.AppendRequest(nil, eager.Core, opts)
		got, gerr := p.AppendRequest(nil, lazy.Core, opts)
		if string(got) != string(want) || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("%T from the lazy request of %q:\n%s (%v)\nnot\n%s (%v)", p, body, got, gerr, want, werr)
		}
	}
	for _, r := range []*Request{lazy, head} {
		Decode(r)
		if r.Core.Literals != "" {
			t.Fatalf("Decode left Literals set")
		}
		if !reflect.DeepEqual(r, eager) {
			t.Fatalf("ParseLazy(%q) decoded = %+v %+v, ParseWithin's %+v %+v", body, r, r.Core, eager, eager.Core)
		}
	}
	// The first pass's incomplete request builds to ParseLazy's.
	if r, complete, _ := ParseHeadLazy(bytes.Clone(body), translate.DefaultMaxInflated, nil); !complete {
		if err := Build(r); err != nil || r.Core.Literals != r.Body {
			t.Fatalf("ParseHeadLazy(%q) built lazily: %v, Literals %.40q", body, err, r.Core.Literals)
		}
		if Decode(r); !reflect.DeepEqual(r, eager) {
			t.Fatalf("ParseHeadLazy(%q) built and decoded = %+v, ParseWithin's %+v", body, r, eager)
		}
	}
}
