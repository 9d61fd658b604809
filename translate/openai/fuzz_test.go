package openai

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/goldentest"
	"github.com/agate-gateway/agate/translate/openaichat"
)

// passthroughAttacks are bodies that once reached an upstream as another request than the
// one the gateway authorized: a case-variant or repeated model, repeated stream options.
var passthroughAttacks = []string{
	`{"model":"cheap-a","MODEL":"gpt-4o","messages":[{"role":"user","content":"x"}]}`,
	`{"model":"X","model":"cheap-a","messages":[{"role":"user","content":"x"}]}`,
	`{"model":"cheap-a","stream":true,"stream_options":{"include_usage":true},"stream_options":{"include_usage":false},"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"cheap-a","stream":true,"stream_options":{"include_usage":true,"INCLUDE_USAGE":false},"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"cheap-a","stream":true,"Stream":false,"messages":[{"role":"user","content":"x"}]}`,
	`{"mod\u0065l":"cheap-a","messages":[{"role":"user","content":"x"}]}`,
	`{"model":"cheap-a","stream":true,"stream_options":null,"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"cheap-a","stream":true,"stream_options":{},"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"cheap-a","stream":null,"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"cheap-a","stream":false,"stream_options":{"include_usage":false},"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"cheap-a","stream":true,"stream_options":{"include_usage":true,"x":{"include_usage":false}},"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"cheap-a","ſtream":false,"stream":true,"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"cheap-a","x":{"model":"gpt-4o"},"messages":[{"role":"user","content":"x","model":"gpt-4o"}]}`,
}

// FuzzPassthroughForwardsAuthorized is the differential check of the OpenAI passthrough:
// whenever ParseRequest accepts a body, the bytes AppendRequest forwards decode to the
// upstream model the gateway chose and to the stream settings it metered, under every
// reading of repeated names an upstream may use: first wins or last wins, names matched
// exactly or ignoring case, and Go's encoding/json itself.
func FuzzPassthroughForwardsAuthorized(f *testing.F) {
	for _, s := range goldentest.RequestSeeds(f) {
		f.Add(s)
	}
	for _, s := range passthroughAttacks {
		f.Add([]byte(s))
	}
	const upstreamModel = "upstream-model"
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := openaichat.ParseRequest(body)
		if err != nil {
			return
		}
		out, err := New().AppendRequest(nil, req, &translate.Options{UpstreamModel: upstreamModel, Stream: req.Stream})
		if err != nil {
			t.Fatalf("AppendRequest: %v\nbody %q", err, body)
		}
		top, ok := jsonMembers(out)
		if !ok {
			t.Fatalf("forwarded body is not a JSON object: %q\nfrom %q", out, body)
		}
		for _, d := range memberDecoders {
			model, _ := d.get(top, "model")
			if s, ok := jsonStr(model); !ok || s != upstreamModel {
				t.Fatalf("%s decoder reads model %s, want %q\nforwarded %q\nfrom %q", d.name, model, upstreamModel, out, body)
			}
			stream, _ := d.get(top, "stream")
			if got := string(stream) == "true"; got != req.Stream {
				t.Fatalf("%s decoder reads stream %s, want %t\nforwarded %q", d.name, stream, req.Stream, out)
			}
			usage := false
			if so, ok := d.get(top, "stream_options"); ok && string(so) != "null" {
				inner, ok := jsonMembers(so)
				if !ok {
					t.Fatalf("%s decoder reads stream_options %s\nforwarded %q", d.name, so, out)
				}
				iu, _ := d.get(inner, "include_usage")
				usage = string(iu) == "true"
			}
			if usage != req.Stream { // streams always ask for usage, to count tokens
				t.Fatalf("%s decoder reads include_usage %t for stream %t\nforwarded %q", d.name, usage, req.Stream, out)
			}
		}
		var goView struct {
			Model         string `json:"model"`
			Stream        bool   `json:"stream"`
			StreamOptions *struct {
				IncludeUsage bool `json:"include_usage"`
			} `json:"stream_options"`
		}
		if err := json.Unmarshal(out, &goView); err != nil {
			t.Fatalf("encoding/json: %v\nforwarded %q", err, out)
		}
		usage := goView.StreamOptions != nil && goView.StreamOptions.IncludeUsage
		if goView.Model != upstreamModel || goView.Stream != req.Stream || usage != req.Stream {
			t.Fatalf("encoding/json reads %+v (include_usage %t), want model %q stream %t\nforwarded %q", goView, usage, upstreamModel, req.Stream, out)
		}
	})
}

// jsonMember is one member of a JSON object, its name decoded and its value raw.
type jsonMember struct {
	name  string
	value json.RawMessage
}

// jsonMembers returns the members of the JSON object data in order, repeats included, as
// encoding/json's tokenizer reads them; ok is false if data is not one JSON object.
func jsonMembers(data []byte) (ms []jsonMember, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		ms = append(ms, jsonMember{name: tok.(string), value: v})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, false
	}
	_, err := dec.Token()
	return ms, err != nil // nothing may follow
}

// memberDecoder is one way a JSON library picks the value of a name among an object's
// members.
type memberDecoder struct {
	name       string
	last, fold bool
}

var memberDecoders = []memberDecoder{
	{name: "first-wins"},
	{name: "last-wins", last: true},
	{name: "first-wins case-insensitive", fold: true},
	{name: "last-wins case-insensitive", last: true, fold: true},
}

func (d memberDecoder) get(ms []jsonMember, name string) (json.RawMessage, bool) {
	var v json.RawMessage
	found := false
	for _, m := range ms {
		if m.name == name || d.fold && strings.EqualFold(m.name, name) {
			if !found || d.last {
				v = m.value
			}
			found = true
		}
	}
	return v, found
}

func jsonStr(raw json.RawMessage) (string, bool) {
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err == nil
}

// FuzzSplicedMatchesRewritten checks the one-pass rewrite of a parsed body (Request.Spans)
// against the member-by-member rewrite it replaced: for every body ParseRequest accepts,
// stream or not, both forward the same JSON value.
func FuzzSplicedMatchesRewritten(f *testing.F) {
	for _, s := range goldentest.RequestSeeds(f) {
		f.Add(s, false)
		f.Add(s, true)
	}
	for _, s := range passthroughAttacks {
		f.Add([]byte(s), true)
	}
	f.Add([]byte("{\"model\" : \"m\" ,\n \"stream\" : true , \"stream_options\" : { \"include_usage\" : false , \"x\" : 1 } ,\"messages\":[]}\n"), true)
	f.Fuzz(func(t *testing.T, body []byte, stream bool) {
		req, err := openaichat.ParseRequest(body)
		if err != nil || req.Spans.Model.End == 0 {
			return
		}
		opts := &translate.Options{UpstreamModel: "up\"model", Stream: stream}
		spliced, err := New().AppendRequest(nil, req, opts)
		if err != nil {
			t.Fatalf("spliced: %v\nbody %q", err, body)
		}
		unlocated := *req
		unlocated.Spans = translate.BodySpans{}
		rewritten, err := New().AppendRequest(nil, &unlocated, opts)
		if err != nil {
			t.Fatalf("rewritten: %v\nbody %q", err, body)
		}
		var a, b any
		if err := json.Unmarshal(spliced, &a); err != nil {
			t.Fatalf("spliced body is not JSON: %v\n%q\nfrom %q", err, spliced, body)
		}
		if err := json.Unmarshal(rewritten, &b); err != nil {
			t.Fatalf("rewritten body is not JSON: %v\n%q", err, rewritten)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("spliced and rewritten bodies differ\nspliced   %s\nrewritten %s\nfrom %q", spliced, rewritten, body)
		}
	})
}

// FuzzRewriteCompletion holds openai.RewriteCompletion, the passthrough's reader of an
// upstream's non-streamed answer, to its contract on any body: it never panics; what it
// accepts is a JSON object whose first member is the client's model, with the usage it
// reports, appended after dst's bytes; and the result never aliases body, which the
// gateway reuses for the next answer. Seeded from the recorded completions.
func FuzzRewriteCompletion(f *testing.F) {
	for _, name := range []string{"text", "parallel-tool-calls", "max-tokens-length"} {
		b, err := os.ReadFile("../../testdata/fixtures/openai-chat/json/" + name + ".mirascope.json")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"error":{"message":"nope"}}`))
	f.Add([]byte(`{"choices":[],"MODEL":"x","usage":{"prompt_tokens":1}}`))
	f.Add([]byte(`{"choices":[]`)) // unterminated: read in one pass, it must still fail
	// Names copied as written, written from an escape, and with whitespace around them.
	f.Add([]byte(`{"\\\":":1,"a\u0062":2, "c" :3,"choices":[]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		dst := append(make([]byte, 0, 64), "kept"...)
		out, _, err := RewriteCompletion(dst, "up", body, "client-model")
		if err != nil {
			return
		}
		if !json.Valid(body) {
			t.Fatalf("a body that is not JSON was accepted: %.200q", body)
		}
		if !bytes.HasPrefix(out, []byte(`kept{"model":"client-model"`)) {
			t.Fatalf("the completion does not follow dst with the client's model first: %.200s", out)
		}
		got := append([]byte(nil), out...)
		for i := range body {
			body[i] = '#'
		}
		if !bytes.Equal(out, got) {
			t.Fatal("the completion changed when body was overwritten: it aliases body")
		}
		var v map[string]any
		if err := json.Unmarshal(out[len("kept"):], &v); err != nil {
			t.Fatalf("the completion is not a JSON object: %v: %.200s", err, out)
		}
	})
}

// usageSeeds are usage objects that test the first-member rule and the kinds usageAt
// must read as openAIUsage does.
var usageSeeds = []string{
	`{"prompt_tokens":412,"completion_tokens":187,"total_tokens":599,"prompt_tokens_details":{"cached_tokens":3,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":9}}`,
	`{"prompt_tokens":1,"prompt_tokens":2,"completion_tokens":"3","prompt_tokens_details":{"cached_tokens":4,"cached_tokens":5},"prompt_tokens_details":{"cached_tokens":6}}`,
	`{"prompt_tokens_details":null,"completion_tokens_details":[{"reasoning_tokens":1}],"completion_tokens":1e3}`,
	`{"completion_tokens_details":{"x":{"reasoning_tokens":7},"reasoning_tokens":-2.5}}`,
	`{"prompt_tokens":12345678901234567890,"prompt_tokens_details":{"cached_tokens":1,}}`,
	`{"prompt_tokens":1`, `[1,2]`, `"usage"`, `null`, `{}`, ` {"prompt_tokens" : 7 } `,
}

// FuzzUsageAtMatchesTwoPass holds usageAt, the passthrough's one-pass reader of a usage
// object, to the two passes it replaces: ValueRaw to check and keep the value, then
// openAIUsage over what it kept. On any input both accept or refuse alike, keep the same
// value and report the same usage.
func FuzzUsageAtMatchesTwoPass(f *testing.F) {
	for _, s := range usageSeeds {
		f.Add([]byte(s))
	}
	for _, name := range []string{"text", "parallel-tool-calls", "max-tokens-length"} {
		b, err := os.ReadFile("../../testdata/fixtures/openai-chat/json/" + name + ".mirascope.json")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b) // the whole completion, an object with a usage member among others
		if i := bytes.Index(b, []byte(`"usage":`)); i >= 0 {
			f.Add(b[i+len(`"usage":`):]) // from its usage object to the end
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		one := jsonx.NewScanner(string(data))
		var v1 jsonx.Value
		u1, ok1 := usageAt(&one, &v1)

		two := jsonx.NewScanner(string(data))
		var v2 jsonx.Value
		ok2 := two.ValueRaw(&v2)
		var u2 translate.Usage
		if ok2 && v2.Kind == jsonx.Object {
			end := two.Pos()
			u2 = openAIUsage(&two, v2)
			two.Seek(end)
		}
		if ok1 != ok2 {
			t.Fatalf("usageAt ok=%v, ValueRaw ok=%v on %q", ok1, ok2, data)
		}
		if !ok1 {
			return
		}
		if v1 != v2 || u1 != u2 || one.Pos() != two.Pos() {
			t.Fatalf("on %q\nusageAt   %+v %+v at %d\ntwo passes %+v %+v at %d", data, v1, u1, one.Pos(), v2, u2, two.Pos())
		}
	})
}

// FuzzShadows holds shadows to its definition, strings.EqualFold against each name, for
// any key: the first-byte shortcut must never decide otherwise. Seeded with the chunk and
// completion members of the recordings and keys that fold through U+017F and U+212A.
func FuzzShadows(f *testing.F) {
	for _, k := range []string{"id", "object", "created", "model", "choices", "usage", "system_fingerprint",
		"service_tier", "obfuscation", "MODEL", "\u017fage", "u\u017fage", "\u212a", "\xff", ""} {
		f.Add(k)
	}
	names := []string{"id", "object", "created", "model", "choices", "usage", "s", "k"}
	f.Fuzz(func(t *testing.T, k string) {
		want := false
		for _, n := range names {
			want = want || strings.EqualFold(k, n)
		}
		if got := shadows(k, names...); got != want {
			t.Fatalf("shadows(%q) = %v, want %v", k, got, want)
		}
	})
}
