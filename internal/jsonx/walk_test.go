package jsonx

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
)

func TestScanner_GetPathEach(t *testing.T) {
	const doc = ` {"a":{"b":"x\ny","n":-12},"a":{"b":"second"},"arr":[1,{"k":"v"},"s"],"esc\u0041":true} `
	sc := NewScanner(doc)
	root, ok := sc.Root()
	if !ok {
		t.Fatal("Root: not valid")
	}
	tests := []struct {
		name string
		path []string
		want Value
	}{
		{name: "first of duplicate keys wins", path: []string{"a", "b"}, want: Value{Kind: String, Raw: `"x\ny"`, Str: "x\ny"}},
		{name: "number", path: []string{"a", "n"}, want: Value{Kind: Number, Raw: "-12"}},
		{name: "escaped key", path: []string{"escA"}, want: Value{Kind: True, Raw: "true"}},
		{name: "missing", path: []string{"nope"}, want: Value{}},
		{name: "through a non-object", path: []string{"arr", "k"}, want: Value{}},
		{name: "through a missing member", path: []string{"nope", "b"}, want: Value{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sc.Path(root, tt.path...)
			got.At = 0
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Path(%q) (-want +got):\n%s", tt.path, diff)
			}
		})
	}
	var keys []string
	sc.Each(root, func(k string, v Value) bool {
		keys = append(keys, k)
		if k == "arr" {
			sc.Each(v, func(_ string, el Value) bool {
				keys = append(keys, el.Raw)
				sc.Get(el, "k") // a nested walk must not lose Each's place
				return true
			})
		}
		return true
	})
	if diff := cmp.Diff([]string{"a", "a", "arr", "1", `{"k":"v"}`, `"s"`, "escA"}, keys); diff != "" {
		t.Errorf("Each (-want +got):\n%s", diff)
	}
	if got := sc.Get(root, "a").Int(); got != 0 {
		t.Errorf("Int of an object = %d, want 0", got)
	}
	if got := sc.Path(root, "a", "n").Int(); got != -12 {
		t.Errorf("Int = %d, want -12", got)
	}
}

func TestAppendCompact(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{name: "whitespace outside strings", in: "{ \"a\" :\n [1, 2]\t}", want: `{"a":[1,2]}`},
		{name: "whitespace inside strings kept", in: `{"a b": " x\" y "}`, want: `{"a b":" x\" y "}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(AppendCompact(nil, tt.in)); got != tt.want {
				t.Errorf("AppendCompact(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// FuzzGetMatchesGJSON: for a valid document, Get of each top-level key finds what
// gjson's Get finds (the first member of that name), and Unquote decodes as encoding/json
// does.
func FuzzGetMatchesGJSON(f *testing.F) {
	f.Add(`{"a":1,"b":"x\u00e9\ud83d\ude00","a":2}`, "a")
	f.Add(`{"k":{"n":[1,2]},"s":"\"q\""}`, "s")
	f.Fuzz(func(t *testing.T, doc, key string) {
		sc := NewScanner(doc)
		root, ok := sc.Root()
		if ok != gjson.Valid(doc) {
			t.Fatalf("Root ok = %v, gjson.Valid %v", ok, !ok)
		}
		if !ok || root.Kind != Object || key == "" {
			return
		}
		for _, c := range key {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
				return // the rest is gjson path syntax
			}
		}
		got, want := sc.Get(root, key), gjson.Get(doc, key)
		if got.Raw != want.Raw {
			t.Fatalf("Get(%q) raw %q, gjson %q", key, got.Raw, want.Raw)
		}
		if got.Kind == String && sc.Unquote(got.Raw) != decodeString(got.Raw) {
			t.Fatalf("Unquote(%q) = %q, encoding/json %q", got.Raw, sc.Unquote(got.Raw), decodeString(got.Raw))
		}
	})
}

func TestScanner_RootMembers(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		wantOK bool
		want   []string // Raw of type and delta
	}{
		{name: "reads the named members", in: `{"type":"t","x":[1,{}],"delta":{"a":1}}`, wantOK: true, want: []string{`"t"`, `{"a":1}`}},
		{name: "first of duplicates wins", in: `{"type":"a","type":"b"}`, wantOK: true, want: []string{`"a"`, ""}},
		{name: "not an object has no members", in: ` [1] `, wantOK: true, want: []string{"", ""}},
		{name: "syntax error after the members", in: `{"type":"t","delta":1,}`, wantOK: false, want: []string{"", ""}},
		{name: "trailing data", in: `{"type":"t"} {}`, wantOK: false, want: []string{"", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := NewScanner(tt.in)
			var m [2]Value
			_, ok := sc.RootMembers([]string{"type", "delta"}, m[:])
			if ok != tt.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tt.wantOK)
			}
			if !ok {
				return
			}
			if diff := cmp.Diff(tt.want, []string{m[0].Raw, m[1].Raw}); diff != "" {
				t.Errorf("members (-want +got):\n%s", diff)
			}
		})
	}
}

// TestScanner_Members: Members reads several members of an object in one pass, the first
// of a repeated name, and nothing of a value that is not an object.
func TestScanner_Members(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		want     [2]string // Raw of a and b
	}{
		{name: "both", in: `{"b":[1,{"a":2}],"x":{"a":3},"a":"s"}`, want: [2]string{`"s"`, `[1,{"a":2}]`}},
		{name: "first of a repeat", in: `{"a":1,"a":2}`, want: [2]string{"1", ""}},
		{name: "missing", in: `{"c":1}`},
		{name: "array", in: `[{"a":1}]`},
		{name: "scalar", in: `"a"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sc := NewScanner(tt.in)
			root, ok := sc.Root()
			if !ok {
				t.Fatal("invalid")
			}
			var vals [2]Value
			sc.Members(root, []string{"a", "b"}, vals[:])
			if got := [2]string{vals[0].Raw, vals[1].Raw}; got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// eachMembersSlow is EachMembers the way it replaces: Each, then Members on each element
// (of an array: an object has no elements).
func eachMembersSlow(sc *Scanner, v Value, keys []string) []string {
	var out []string
	if v.Kind != Array {
		return out
	}
	sc.Each(v, func(_ string, el Value) bool {
		vals := make([]Value, len(keys))
		sc.Members(el, keys, vals)
		out = append(out, "el:"+el.Raw)
		for _, m := range vals {
			out = append(out, m.Raw, m.Str)
		}
		return true
	})
	return out
}

// eachMembersRead is what EachMembers reads of v, in eachMembersSlow's form; with walk, fn
// also walks into each element, which EachMembers must survive.
func eachMembersRead(sc *Scanner, v Value, keys []string, walk bool) []string {
	var out []string
	vals := make([]Value, len(keys))
	sc.EachMembers(v, keys, vals, func(el Value) bool {
		out = append(out, "el:"+el.Raw)
		for _, m := range vals {
			out = append(out, m.Raw, m.Str)
		}
		if walk {
			sc.Each(el, func(string, Value) bool { return true })
		}
		return true
	})
	return out
}

func TestScanner_EachMembers(t *testing.T) {
	keys := []string{"type", "text"}
	for _, tt := range []struct{ name, in string }{
		{"blocks", `[{"type":"text","text":"hi"},{"type":"tool_use","id":"x","input":{"text":1}}]`},
		{"first of a repeat, escapes decoded", `[{"text":"a\u0041","text":"b","type":null}]`},
		{"elements that are not objects", `[1,"s",[{"type":"x"}],null,{}]`},
		{"whitespace", ` [ { "type" : "t" , "text" : "u" } , { } ] `},
		{"empty", `[]`},
		{"an object, not an array", `{"type":"text"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sc := NewScanner(tt.in)
			root, ok := sc.Root()
			if !ok {
				t.Fatal("invalid")
			}
			got := eachMembersRead(&sc, root, keys, true) // fn may walk into what it gets
			want := eachMembersSlow(&sc, root, keys)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("EachMembers differs from Each with Members (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("stops when fn returns false", func(t *testing.T) {
		sc := NewScanner(`[{"type":"a"},{"type":"b"}]`)
		root, _ := sc.Root()
		calls := 0
		sc.EachMembers(root, keys, make([]Value, 2), func(Value) bool { calls++; return false })
		if calls != 1 {
			t.Errorf("fn called %d times, want 1", calls)
		}
	})
}

// FuzzEachMembersMatchesEachThenMembers: on any array, EachMembers reads what Each with
// Members on each element reads, element by element.
func FuzzEachMembersMatchesEachThenMembers(f *testing.F) {
	f.Add(`[{"type":"text","text":"hi"},{"type":"tool_use","input":{"type":1}},3]`, "type", "text")
	f.Add(`[{"a":"\u00e9","a":2},[],{"b":{"a":1}}]`, "a", "b")
	f.Fuzz(func(t *testing.T, doc, k1, k2 string) {
		sc := NewScanner(doc)
		root, ok := sc.Root()
		if !ok {
			return
		}
		keys := []string{k1, k2}
		got := eachMembersRead(&sc, root, keys, false)
		if want := eachMembersSlow(&sc, root, keys); !slices.Equal(got, want) {
			t.Fatalf("EachMembers %q, Each with Members %q", got, want)
		}
	})
}

// walkAll returns every value a full Each walk of v reaches, depth first, with the
// members Get finds on the way, so that an indexed and a plain scanner can be compared.
func walkAll(sc *Scanner, v Value, out []string) []string {
	out = append(out, v.Raw)
	if v.Kind == Object {
		out = append(out, "get:"+sc.Get(v, "a").Raw)
	}
	sc.Each(v, func(k string, el Value) bool {
		out = append(out, "key:"+k)
		out = walkAll(sc, el, out)
		return true
	})
	return out
}

func TestScanner_IndexRoot(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		ok   bool
	}{
		{name: "nested", doc: ` {"a":[{"a":{}},[],[[1,{"b":"}"}]]],"b":{"a":"x","a":[]}} `, ok: true},
		{name: "empty containers", doc: `[{},[],{"a":[]}]`, ok: true},
		{name: "scalar", doc: `"s"`, ok: true},
		{name: "brackets in strings", doc: `{"a":"{[","b":["]}"]}`, ok: true},
		{name: "invalid", doc: `{"a":[1,}`},
		{name: "trailing", doc: `{} {}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plain, indexed := NewScanner(tt.doc), NewScanner(tt.doc)
			proot, _ := plain.Root()
			iroot, ok := indexed.IndexRoot()
			if ok != tt.ok {
				t.Fatalf("IndexRoot ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if diff := cmp.Diff(walkAll(&plain, proot, nil), walkAll(&indexed, iroot, nil)); diff != "" {
				t.Errorf("indexed walk (-plain +indexed):\n%s", diff)
			}
		})
	}
}

// FuzzIndexRoot checks that IndexRoot accepts exactly what Root accepts and that every
// walk over an indexed input reads what it reads over a plain one.
func FuzzIndexRoot(f *testing.F) {
	f.Add(`{"a":[{"a":{}},[],[[1,{"b":"}"}]]],"b":{"a":"x"}}`)
	f.Add(`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`)
	f.Fuzz(func(t *testing.T, doc string) {
		plain, indexed := NewScanner(doc), NewScanner(doc)
		proot, pok := plain.Root()
		iroot, iok := indexed.IndexRoot()
		if pok != iok {
			t.Fatalf("IndexRoot ok = %v, Root %v", iok, pok)
		}
		if !pok {
			return
		}
		if diff := cmp.Diff(walkAll(&plain, proot, nil), walkAll(&indexed, iroot, nil)); diff != "" {
			t.Fatalf("indexed walk (-plain +indexed):\n%s", diff)
		}
	})
}

// TestScanner_IndexValue: a value indexed in a forward walk (IndexValue, here each member
// of an object) reads, over its own scanner, what it reads over the whole input, and the
// walk goes on after it.
func TestScanner_IndexValue(t *testing.T) {
	for _, doc := range []string{
		`{"a":[{"a":{}},[],[[1,{"b":"}"}]]],"b":{"a":"x","a":[]},"c":"s","d":1}`,
		`{"tools": [ {"name":"f","input_schema":{"type":"object"}} ] , "x" : { } }`,
		`{"a":[1,}`,
		`{"a":{"b":[1,2]`,
	} {
		checkIndexValue(t, doc)
	}
}

// FuzzIndexValue is TestScanner_IndexValue's property for any input.
func FuzzIndexValue(f *testing.F) {
	f.Add(`{"a":[{"a":{}},[],[[1,{"b":"}"}]]],"b":{"a":"x"}}`)
	f.Add(`{"t":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],"u":"\u0041"}`)
	f.Fuzz(checkIndexValue)
}

// checkIndexValue walks the object doc member by member with IndexValue, and checks each
// member against a plain scanner's reading of it.
func checkIndexValue(t *testing.T, doc string) {
	plain, walk := NewScanner(doc), NewScanner(doc)
	for n, m := 0, 0; ; {
		pnext, wnext := plain.NextField(&n), walk.NextField(&m)
		if pnext != wnext || pnext && plain.Key() != walk.Key() {
			t.Fatalf("NextField %v %q, plain %v %q", wnext, walk.Key(), pnext, plain.Key())
		}
		if !pnext {
			break
		}
		var pv Value
		pok := plain.Value(&pv)
		sub, v, ok := walk.IndexValue()
		if ok != pok {
			t.Fatalf("IndexValue ok = %v, Value %v", ok, pok)
		}
		if !ok {
			return
		}
		if walk.Pos() != plain.Pos() || v.Raw != pv.Raw || sub.Input() != pv.Raw || v.At != 0 {
			t.Fatalf("IndexValue at %d: %q (At %d, input %q), Value at %d: %q", walk.Pos(), v.Raw, v.At, sub.Input(), plain.Pos(), pv.Raw)
		}
		again := NewScanner(pv.Raw)
		root, _ := again.Root()
		if diff := cmp.Diff(walkAll(&again, root, nil), walkAll(&sub, v, nil)); diff != "" {
			t.Fatalf("indexed walk (-plain +indexed):\n%s", diff)
		}
	}
	if walk.Failed() != plain.Failed() {
		t.Fatalf("Failed %v, plain %v", walk.Failed(), plain.Failed())
	}
}
