package responsesin

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
	"github.com/agate-gateway/agate/translate/internal/recorded"
)

// readAnswerByMembers is ReadAnswer as it was before its one-pass reader (#55): the
// scanner's RootMembers, then the usage walked again. The fuzz targets hold ReadAnswer to
// it.
func readAnswerByMembers(body []byte) (u Upstream, kind Body, model translate.Span) {
	sc := jsonx.NewScanner(jsonx.View(body))
	var v [6]jsonx.Value
	root, ok := sc.RootMembers([]string{"object", "error", "output", "usage", "id", "model"}, v[:])
	switch {
	case !ok:
		return Upstream{}, BodyNotJSON, model
	case root.Kind != jsonx.Object || v[0].Str != "response":
		if v[1].Kind == jsonx.Object {
			return Upstream{}, BodyError, model
		}
		return Upstream{}, BodyOther, model
	}
	if m := v[5]; m.At > 0 && m.Kind == jsonx.String {
		model = translate.Span{Start: m.At, End: m.At + len(m.Raw)}
	}
	return Upstream{Response: root.Raw, Output: v[2].Raw, ID: v[4].Str, Usage: readUsage(&sc, v[3])}, BodyResponse, model
}

// answerSeeds are the recorded Responses answers and the bench's.
func answerSeeds(t testing.TB) [][]byte {
	return recorded.Answers(t, 4, "../../testdata/fixtures/responses/json/*.json", "testdata/bench-answer.json")
}

// usageSeeds are usage objects in and beside the compact layout: whitespace, escapes,
// floats, negatives, repeats, nesting, details that are not objects.
var usageSeeds = []string{
	`{"input_tokens":412,"input_tokens_details":{"cached_tokens":0},"output_tokens":187,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":599}`,
	`{}`,
	`{"input_tokens":null,"output_tokens":7,"input_tokens":9}`,
	`{"input_tokens":{"a":1},"input_tokens_details":5,"output_tokens_details":{"reasoning_tokens":3,"reasoning_tokens":4}}`,
	`{"input_tokens": 5}`,
	"{\n  \"input_tokens\" : 5 ,\r\n\t\"input_tokens_details\": { \"cached_tokens\": 2 } \n}",
	`{"input_tokens":5.0,"output_tokens":-1}`,
	`{"input\u005ftokens":5}`,
	`{"input_tokens":0012}`,
	`{"input_tokens":1234567890123456789}`,
	`{"input_tokens_details":{"cached_tokens":{"x":1}}}`,
	`{"input_tokens_details":{"cached_tokens":2},"input_tokens_details":{"cached_tokens":3}}`,
	`{"x":"y"}`,
	`{"input_tokens":5,}`,
	`{"input_tokens":5`,
}

// TestReadAnswer_Compact: the bench's answer and the recorded ones read as the member
// loop reads them, their usage by bytes.
func TestReadAnswer_Compact(t *testing.T) {
	for _, body := range answerSeeds(t) {
		u, kind, model := ReadAnswer(body)
		wu, wkind, wmodel := readAnswerByMembers(body)
		if diff := cmp.Diff(wu, u); diff != "" || kind != wkind || model != wmodel {
			t.Errorf("ReadAnswer(%.60s…) = kind %d, model %v, want %d, %v; (-want +got):\n%s", body, kind, model, wkind, wmodel, diff)
		}
		if kind != BodyResponse || u.Usage.PromptTokens == 0 {
			t.Errorf("ReadAnswer(%.60s…): kind %d, usage %+v", body, kind, u.Usage)
		}
		sc := jsonx.NewScanner(jsonx.View(body))
		var v [1]jsonx.Value
		sc.RootMembers([]string{"usage"}, v[:])
		if _, _, ok := usageCompact(string(body), v[0].At); !ok {
			t.Errorf("usageCompact refused the usage of %.60s…: %s", body, v[0].Raw)
		}
	}
	want := translate.Usage{PromptTokens: 412, CompletionTokens: 187}
	if u, _, _ := ReadAnswer(answerSeeds(t)[len(answerSeeds(t))-1]); u.Usage != want {
		t.Errorf("bench answer's usage %+v, want %+v", u.Usage, want)
	}
}

// TestUsageCompact: what usageCompact takes, and what it leaves to the scanner.
func TestUsageCompact(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want translate.Usage
		ok   bool
	}{
		{usageSeeds[0], translate.Usage{PromptTokens: 412, CompletionTokens: 187}, true},
		{`{}`, translate.Usage{}, true},
		{`{"input_tokens":null,"output_tokens":7,"input_tokens":9}`, translate.Usage{CompletionTokens: 7}, true},
		{`{"input_tokens":{"a":1},"input_tokens_details":5,"output_tokens_details":{"reasoning_tokens":3,"reasoning_tokens":4}}`, translate.Usage{ReasoningTokens: 3}, true},
		{`{"input_tokens": 5}`, translate.Usage{PromptTokens: 5}, true},
		{"{\n  \"input_tokens\" : 5 ,\r\n\t\"input_tokens_details\": { \"cached_tokens\": 2 } \n}", translate.Usage{PromptTokens: 5, CachedTokens: 2}, true},
		{`{"input_tokens":5 5}`, translate.Usage{}, false},
		{"{\"input_tokens\":5\f}", translate.Usage{}, false},
		{`{"input_tokens":5.0}`, translate.Usage{}, false},
		{`{"output_tokens":-1}`, translate.Usage{}, false},
		{`{"input\u005ftokens":5}`, translate.Usage{}, false},
		{`{"input_tokens":0012}`, translate.Usage{}, false},
		{`{"input_tokens_details":{"cached_tokens":{"x":1}}}`, translate.Usage{}, false},
		{`{"x":"y"}`, translate.Usage{}, false},
		{`{"input_tokens":5,}`, translate.Usage{}, false},
	} {
		u, end, ok := usageCompact(tt.in, 0)
		if ok != tt.ok || u != tt.want || (ok && end != len(tt.in)) {
			t.Errorf("usageCompact(%s) = %+v, %d, %v; want %+v, %d, %v", tt.in, u, end, ok, tt.want, len(tt.in), tt.ok)
		}
	}
}

// FuzzReadAnswerMatchesByMembers: ReadAnswer reads what the member-by-member reader
// (RootMembers and the usage walked again) reads of any body: the same kind, Upstream
// and model span.
func FuzzReadAnswerMatchesByMembers(f *testing.F) {
	for _, b := range answerSeeds(f) {
		f.Add(b)
	}
	for _, u := range usageSeeds {
		f.Add([]byte(`{"object":"response","id":"r\u0031","model":"m","output":[],"usage":` + u + `}`))
	}
	for _, s := range []string{`{"error":{"message":"x"}}`, `{"object":"list"}`, `[{"error":{}}]`, `{"object":`, ` {"object":"response"} `, `"x"`, `{"object":"respons\u0065","model":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		u, kind, model := ReadAnswer(body)
		wu, wkind, wmodel := readAnswerByMembers(body)
		if diff := cmp.Diff(wu, u); diff != "" || kind != wkind || model != wmodel {
			t.Fatalf("ReadAnswer(%q) = kind %d, model %v, want %d, %v; (-want +got):\n%s", body, kind, model, wkind, wmodel, diff)
		}
	})
}

// FuzzUsageCompactMatchesScanner: whatever usageCompact accepts is a JSON object that
// the scanner reads to the same end, with readUsage's usage.
func FuzzUsageCompactMatchesScanner(f *testing.F) {
	for _, u := range usageSeeds {
		f.Add(u)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" || s[0] != '{' {
			return // usageCompact's input starts at an object's '{'
		}
		u, end, ok := usageCompact(s, 0)
		if !ok {
			return
		}
		sc := jsonx.NewScanner(jsonx.View([]byte(s)))
		var v jsonx.Value
		if !sc.Value(&v) || v.Kind != jsonx.Object || sc.Pos() != end {
			t.Fatalf("usageCompact(%q) took %d bytes; the scanner: %v, kind %v, end %d", s, end, v.Kind, v.Kind, sc.Pos())
		}
		if want := readUsage(&sc, v); u != want {
			t.Fatalf("usageCompact(%q) = %+v, readUsage %+v", s, u, want)
		}
	})
}
