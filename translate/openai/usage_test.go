package openai

import (
	"bytes"
	"net/http"
	"reflect"
	"slices"
	"testing"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/recorded"
)

// recordedCompletions are the recorded non-streamed chat completions, the seeds of the
// completion and usage fuzzers (the fixtures and the bench's answer).
func recordedCompletions(tb testing.TB) [][]byte {
	return recorded.Answers(tb, 3, "../../testdata/fixtures/openai-chat/json/*.mirascope.json", "testdata/bench-answer.json")
}

// TestUsageCompact holds the byte reader of OpenAI's usage layout to what it takes and
// what it leaves to the scanner: every row it takes reads as usageGeneral reads it; the
// rows it refuses are the layouts it must not guess at.
func TestUsageCompact(t *testing.T) {
	for _, c := range []struct {
		in   string
		want translate.Usage // when taken
		take bool
	}{
		{`{"prompt_tokens":412,"completion_tokens":187,"total_tokens":599,"prompt_tokens_details":{"cached_tokens":3,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":9,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`,
			translate.Usage{PromptTokens: 412, CompletionTokens: 187, CachedTokens: 3, ReasoningTokens: 9}, true},
		{`{"completion_tokens":78,"completion_tokens_details":{"accepted_prediction_tokens":0,"reasoning_tokens":64},"prompt_tokens":15,"prompt_tokens_details":{"audio_tokens":0,"cached_tokens":7},"total_tokens":93}`,
			translate.Usage{PromptTokens: 15, CompletionTokens: 78, CachedTokens: 7, ReasoningTokens: 64}, true},
		{`{}`, translate.Usage{}, true},
		// vLLM's: details null.
		{`{"prompt_tokens":1,"total_tokens":3,"completion_tokens":2,"prompt_tokens_details":null}`, translate.Usage{PromptTokens: 1, CompletionTokens: 2}, true},
		// The first of a name is read, in the usage and in its details.
		{`{"prompt_tokens":1,"prompt_tokens":2,"prompt_tokens_details":{"cached_tokens":4,"cached_tokens":5},"prompt_tokens_details":{"cached_tokens":6}}`,
			translate.Usage{PromptTokens: 1, CachedTokens: 4}, true},
		// An object where a count is, a count where an object is: 0, and the name is seen.
		{`{"prompt_tokens":{"a":1},"prompt_tokens":5,"completion_tokens_details":7,"completion_tokens_details":{"reasoning_tokens":8}}`, translate.Usage{}, true},
		{`{"prompt_tokens":null,"completion_tokens":0,"prompt_tokens_details":{"cached_tokens":null}}`, translate.Usage{}, true},
		{`{"prompt_tokens":999999999999999999}`, translate.Usage{PromptTokens: 999999999999999999}, true},
		// Left to the scanner.
		{`{"prompt_tokens":1000000000000000000}`, translate.Usage{}, false}, // 19 digits
		{`{"prompt_tokens":012}`, translate.Usage{}, false},
		{`{"prompt_tokens":-1}`, translate.Usage{}, false},
		{`{"prompt_tokens":1.5}`, translate.Usage{}, false},
		{`{"prompt_tokens":1e3}`, translate.Usage{}, false},
		{`{"prompt_tokens": 1}`, translate.Usage{}, false},
		{`{ "prompt_tokens":1}`, translate.Usage{}, false},
		{`{"prompt_tokens":1 }`, translate.Usage{}, false},
		{`{"Prompt_tokens":1,"prompt_tokens":2}`, translate.Usage{PromptTokens: 2}, true}, // another name
		{`{"a b-c.D~!":1,"prompt_tokens_details":{"x y":2,"cached_tokens":3}}`, translate.Usage{CachedTokens: 3}, true},
		{`{"prompt_tokens_\u0064etails":{"cached_tokens":3}}`, translate.Usage{}, false},
		{"{\"prompt_tokens\x00\":1}", translate.Usage{}, false},
		{"{\"prompt_tokens_d\xc3\xa9tails\":{\"cached_tokens\":3}}", translate.Usage{}, false},
		{"{\"x\x1f\":1}", translate.Usage{}, false},
		{`{"prompt_tokens":1,"completion_tokens_details":{"reasoning_tokens\"":1}}`, translate.Usage{}, false},
		{`{"prompt\u005ftokens":1}`, translate.Usage{}, false},
		{`{"cost":"0.1"}`, translate.Usage{}, false},
		{`{"is_byok":false}`, translate.Usage{}, false},
		{`{"a":[1]}`, translate.Usage{}, false},
		{`{"a":{"b":{"c":1}}}`, translate.Usage{}, false},
		{`{"prompt_tokens":1,}`, translate.Usage{}, false},
		{`{"prompt_tokens":1`, translate.Usage{}, false},
		{`{"prompt_tokens":nul}`, translate.Usage{}, false},
		{`{"prompt_tokens":nullx}`, translate.Usage{}, false},
	} {
		u, end, ok := usageCompact(c.in, 0)
		if ok != c.take {
			t.Errorf("usageCompact(%s) took it: %v, want %v", c.in, ok, c.take)
			continue
		}
		if !ok {
			continue
		}
		if u != c.want || end != len(c.in) {
			t.Errorf("usageCompact(%s) = %+v, end %d; want %+v, end %d", c.in, u, end, c.want, len(c.in))
		}
		sc := jsonx.NewScanner(c.in)
		var v jsonx.Value
		if g, ok := usageGeneral(&sc, &v); !ok || g != u || sc.Pos() != end {
			t.Errorf("usageGeneral(%s) = %+v, %v at %d; usageCompact %+v at %d", c.in, g, ok, sc.Pos(), u, end)
		}
	}
}

// FuzzUsageCompactMatchesGeneral holds usageCompact to the scanner's reader it is a
// shortcut of: on any input it takes, the input is a JSON object there, and usageGeneral
// reads the same usage and ends at the same offset. Seeded with the usage objects of the
// recordings, the first-member rows and usageSeeds.
func FuzzUsageCompactMatchesGeneral(f *testing.F) {
	for _, b := range recordedCompletions(f) {
		if i := bytes.Index(b, []byte(`"usage":`)); i >= 0 {
			f.Add(b[i+len(`"usage":`):])
		}
	}
	for _, s := range usageSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"prompt_tokens":{"a":1},"prompt_tokens":5,"completion_tokens_details":7,"completion_tokens_details":{"reasoning_tokens":8}}`))
	f.Add([]byte(`{"prompt_tokens":null,"prompt_tokens_details":{"cached_tokens":null,"cached_tokens":3}},"x":1`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := string(data)
		if len(s) == 0 || s[0] != '{' {
			return
		}
		u, end, ok := usageCompact(s, 0)
		if !ok {
			return
		}
		if !jsonx.Valid(s[:end]) {
			t.Fatalf("usageCompact took %q, which is not JSON", s[:end])
		}
		sc := jsonx.NewScanner(s)
		var v jsonx.Value
		g, gok := usageGeneral(&sc, &v)
		if !gok || g != u || sc.Pos() != end || v.Raw != s[:end] {
			t.Fatalf("on %q\nusageCompact %+v end %d\nusageGeneral %+v ok %v end %d", s, u, end, g, gok, sc.Pos())
		}
	})
}

// TestCompactMember is the rule by which RewriteCompletion copies a member with the run
// of the body's bytes around it: only a member appendMember would copy as written.
func TestCompactMember(t *testing.T) {
	for _, c := range []struct {
		in   string // a delimiter, then the member "k"
		k    string
		want bool
	}{
		{`,"k":1`, "k", true},
		{`{"k":"v"`, "k", true},
		{`,"k": 1`, "k", false},
		{`, "k":1`, "k", false},
		{`,"k" :1`, "k", false},
		{`,"\u006b":1`, "k", false},
		{`,"kk":1`, "k", false},
	} {
		sc := jsonx.NewScanner(c.in)
		sc.Seek(1)
		if sc.Peek() != '"' {
			t.Fatalf("bad row %q", c.in)
		}
		// where the value starts: after the colon and any whitespace
		at := bytes.IndexByte([]byte(c.in), ':') + 1
		for c.in[at] == ' ' {
			at++
		}
		if got := compactMember(c.in, 0, c.k, at); got != c.want {
			t.Errorf("compactMember(%q, %q) = %v, want %v", c.in, c.k, got, c.want)
		}
	}
}

// rewriteByMember is RewriteCompletion as it was before it copied runs (513da79): each
// member appended by appendMember, the usage read by the scanner's member loop. The
// oracle of FuzzRewriteCompletionMatchesByMember.
func rewriteByMember(dst []byte, backend string, body []byte, model string) ([]byte, translate.Usage, error) {
	sc := jsonx.NewScanner(jsonx.View(body))
	if sc.Peek() != '{' {
		if !jsonx.Valid(jsonx.View(body)) {
			return nil, translate.Usage{}, passthroughNotJSON(backend, "answered with a body that is not JSON", body)
		}
		return nil, translate.Usage{}, passthroughNotJSON(backend, "answered with a body that is not a JSON object", body)
	}
	var errv, choices, usage, v jsonx.Value
	var u translate.Usage
	out := slices.Grow(dst, len(body)+len(model)+24)
	out = append(out, `{"model":`...)
	out = jsonx.AppendString(out, model)
	for n, end := 0, 0; sc.NextField(&n); end = sc.Pos() {
		k := sc.Key()
		var ok bool
		if k == "usage" && usage.Kind == jsonx.Missing {
			u, ok = usageGeneral(&sc, &v)
			usage = v
		} else {
			ok = sc.ValueRaw(&v)
		}
		if !ok {
			break
		}
		switch {
		case k == "error" && errv.Kind == jsonx.Missing:
			errv = v
		case k == "choices" && choices.Kind == jsonx.Missing:
			choices = v
		}
		if !shadows(k, "model") {
			out = appendMember(out, sc.Input()[end:], k, v.Raw)
		}
	}
	if sc.Failed() || !sc.AtEnd() {
		return nil, translate.Usage{}, passthroughNotJSON(backend, "answered with a body that is not JSON", body)
	}
	if errv.Exists() {
		return nil, translate.Usage{}, New().DecodeError(http.StatusBadGateway, body)
	}
	if choices.Kind != jsonx.Array {
		return nil, translate.Usage{}, passthroughNotJSON(backend, "answered with a JSON object that is not a chat completion (no choices)", nil)
	}
	return append(out, '}'), u, nil
}

// FuzzRewriteCompletionMatchesByMember holds RewriteCompletion, which copies the members
// written compactly in runs and reads OpenAI's usage layout by bytes, to the member-by-
// member rewrite it replaced: on any body the same bytes out, the same usage and the same
// error. Seeded with the recorded completions, each also with whitespace, a model member
// in the middle and at the end, and a repeated usage.
func FuzzRewriteCompletionMatchesByMember(f *testing.F) {
	for _, b := range recordedCompletions(f) {
		f.Add(b)
		f.Add(bytes.ReplaceAll(b, []byte(`,"`), []byte(`, "`)))
		f.Add(bytes.Replace(b, []byte(`"choices":`), []byte(`"MODEL":"x","choices":`), 1))
		f.Add(append(bytes.TrimSuffix(bytes.TrimSpace(b), []byte("}")), `,"model":"y","usage":{"prompt_tokens":1}}`+"\n"...))
	}
	f.Add([]byte(`{"error":{"message":"nope"}}`))
	f.Add([]byte(`{"choices":[],"MODEL":"x","usage":{"prompt_tokens":1}}`))
	f.Add([]byte(`{"model":"a","choices":[]}`))
	f.Add([]byte(`{"choices":[]`))
	f.Add([]byte(`{"\\\":":1,"a\u0062":2, "c" :3,"choices":[]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		got, gu, gerr := RewriteCompletion([]byte("kept"), "up", body, "client-model")
		want, wu, werr := rewriteByMember([]byte("kept"), "up", body, "client-model")
		if !bytes.Equal(got, want) || gu != wu || !reflect.DeepEqual(gerr, werr) {
			t.Fatalf("on %q\nruns      %q %+v %v\nby member %q %+v %v", body, got, gu, gerr, want, wu, werr)
		}
	})
}
