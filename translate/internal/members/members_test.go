package members

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agate-gateway/agate/internal/jsonx"
	"github.com/agate-gateway/agate/translate"
)

// model is the rule as the package doc states it, read the slow way: a name seen before in
// the object is a duplicate; a name that equals one of known ignoring case, and is not
// that name, is the wrong case of it (the first such name of the list).
type model struct{ seen []string }

func (m *model) member(k string, known []string) (code, field string) {
	for _, v := range m.seen {
		if v == k {
			return translate.CodeDuplicateKey, ""
		}
	}
	m.seen = append(m.seen, k)
	for _, f := range known {
		if k != f && strings.EqualFold(k, f) {
			return translate.CodeKeyCase, f
		}
	}
	return "", ""
}

func TestSet_Member(t *testing.T) {
	names := NewNames("role content tool_calls name")
	tests := []struct {
		name      string
		keys      []string
		wantAt    int // the member whose name is refused; -1: none
		wantCode  string
		wantField string
		wantIndex []int // Member's i for each name up to the refused one
	}{
		{name: "known names once each", keys: []string{"role", "content", "name", "tool_calls"},
			wantAt: -1, wantIndex: []int{0, 1, 3, 2}},
		{name: "unknown names pass", keys: []string{"role", "x_vendor", "Other"},
			wantAt: -1, wantIndex: []int{0, -1, -1}},
		{name: "a known name twice", keys: []string{"role", "content", "role"},
			wantAt: 2, wantCode: translate.CodeDuplicateKey, wantIndex: []int{0, 1, 0}},
		{name: "an unknown name twice", keys: []string{"x", "role", "x"},
			wantAt: 2, wantCode: translate.CodeDuplicateKey, wantIndex: []int{-1, 0, -1}},
		{name: "a known name in another case", keys: []string{"role", "Content"},
			wantAt: 1, wantCode: translate.CodeKeyCase, wantField: "content", wantIndex: []int{0, -1}},
		{name: "the case variant after the name itself", keys: []string{"name", "NAME"},
			wantAt: 1, wantCode: translate.CodeKeyCase, wantField: "name", wantIndex: []int{3, -1}},
		{name: "a non-ASCII name that folds onto no name of the list passes", keys: []string{"\u212Aey", "x"},
			wantAt: -1, wantIndex: []int{-1, -1}},
		{name: "LONG S folds onto s: a case variant of tool_calls", keys: []string{"tool_call\u017F"},
			wantAt: 0, wantCode: translate.CodeKeyCase, wantField: "tool_calls", wantIndex: []int{-1}},
		{name: "past twelve unknown names the set goes on", keys: append(strings.Fields("a b c d e f g h i j k l m n o"), "c"),
			wantAt: 15, wantCode: translate.CodeDuplicateKey,
			wantIndex: []int{-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Set
			at := -1
			var code, field string
			for j, k := range tt.keys {
				var i int
				i, code, field = s.Member(k, names)
				if i != tt.wantIndex[j] {
					t.Errorf("Member(%q) index = %d, want %d", k, i, tt.wantIndex[j])
				}
				if code != "" {
					at = j
					break
				}
			}
			if at != tt.wantAt || code != tt.wantCode || field != tt.wantField {
				t.Errorf("refused member %d (%q, %q), want %d (%q, %q)", at, code, field, tt.wantAt, tt.wantCode, tt.wantField)
			}
		})
	}
}

func TestNewNames_RefusesWhatTheRuleCannotTake(t *testing.T) {
	for _, list := range []string{"role Content", "r\u00f4le", strings.Repeat("a ", 64) + "b"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewNames(%q) did not panic", list)
				}
			}()
			NewNames(list)
		}()
	}
	if n := NewNames(strings.TrimSpace(strings.Repeat("a ", 64))); len(n.list) != 64 {
		t.Errorf("64 names: got %d", len(n.list))
	}
}

func TestCheck_Error(t *testing.T) {
	var s Set
	names := NewNames("model")
	if err := Check(&s, "", "model", names); err != nil {
		t.Fatal(err)
	}
	err := Check(&s, "", "MODEL", names)
	var pe *translate.ParamError
	if !errors.As(err, &pe) || pe.Param != "MODEL" || pe.Code != translate.CodeKeyCase ||
		!strings.Contains(pe.Message, `"model"`) {
		t.Fatalf("Check(MODEL) = %v", err)
	}
}

// FuzzMemberMatchesModel holds Set.Member to the rule read the slow way, for any sequence
// of names (split at NUL) against a list taken from the parsers' kinds of names.
func FuzzMemberMatchesModel(f *testing.F) {
	for _, seed := range []string{
		"role\x00content\x00role", "x\x00y\x00x", "ROLE", "Role\x00role", "tool_call\u017F",
		"\u212A\x00k", "a\x00b\x00c\x00d\x00e\x00f\x00g\x00h\x00i\x00j\x00k\x00l\x00m\x00a", "",
		"content\x00CONTENT\x00content", "tool_calls\x00tool_call_id\x00tool_calls",
	} {
		f.Add(seed)
	}
	list := strings.Fields("role content name tool_call_id tool_calls k s id type")
	names := NewNames(strings.Join(list, " "))
	f.Fuzz(func(t *testing.T, in string) {
		var s Set
		var m model
		for _, k := range strings.Split(in, "\x00") {
			i, code, field := s.Member(k, names)
			wantCode, wantField := m.member(k, list)
			if code != wantCode || field != wantField {
				t.Fatalf("Member(%q) = %q %q, the rule says %q %q (input %q)", k, code, field, wantCode, wantField, in)
			}
			if want := names.Index(k); i != want || want >= 0 && list[want] != k {
				t.Fatalf("Member(%q) index %d, want %d", k, i, want)
			}
			if code != "" {
				return
			}
		}
	})
}

func TestCollect(t *testing.T) {
	names := NewNames("model input")
	tests := []struct {
		name      string
		body      string
		want      []string // the members' names then raw values
		wantParam string   // the refused name's param; "" for none
		wantCode  string
	}{
		{name: "members in order", body: `{"model":"m","x":[1],"input":"hi"}`, want: []string{"model", `"m"`, "x", "[1]", "input", `"hi"`}},
		{name: "empty", body: `{}`},
		{name: "duplicate after a value", body: `{"model":"m","input":1,"model":"n"}`, wantParam: "model", wantCode: translate.CodeDuplicateKey},
		{name: "case variant", body: `{"MODEL":"m"}`, wantParam: "MODEL", wantCode: translate.CodeKeyCase},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := jsonx.NewScanner(tt.body)
			root, ok := sc.IndexRoot()
			if !ok {
				t.Fatalf("not JSON: %s", tt.body)
			}
			got, err := Collect(&sc, root, "", names, nil)
			var pe *translate.ParamError
			if tt.wantCode != "" {
				if !errors.As(err, &pe) || pe.Param != tt.wantParam || pe.Code != tt.wantCode {
					t.Fatalf("Collect error %v, want %s %s", err, tt.wantParam, tt.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var flat []string
			for _, m := range got {
				flat = append(flat, m.Name, m.V.Raw)
			}
			if strings.Join(flat, " ") != strings.Join(tt.want, " ") {
				t.Errorf("Collect = %q, want %q", flat, tt.want)
			}
		})
	}
}

// FuzzIndexMatchesList holds Names.Index, which compares a name with those of its length
// only, to a search of the whole list, for the parsers' lists (the Responses items' and
// parts', the chat messages') and any name; the zero Names has none.
func FuzzIndexMatchesList(f *testing.F) {
	for _, seed := range []string{"type", "content", "call_id", "arguments", "tool_call_id", "x", "", "typ", "encrypted_content", "Type"} {
		f.Add(seed)
	}
	lists := []string{
		"type id role content status call_id name arguments output summary encrypted_content namespace",
		"type text refusal image_url file_id detail file_data filename file_url annotations logprobs",
		"role content name tool_call_id tool_calls k s id type",
	}
	f.Fuzz(func(t *testing.T, k string) {
		for _, l := range lists {
			list := strings.Fields(l)
			if got, want := NewNames(l).Index(k), slices.Index(list, k); got != want {
				t.Fatalf("Index(%q) = %d in %q, want %d", k, got, l, want)
			}
		}
		if i := (Names{}).Index(k); i != -1 {
			t.Fatalf("the zero Names found %q at %d", k, i)
		}
	})
}
