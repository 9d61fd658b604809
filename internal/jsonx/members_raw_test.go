package jsonx

import "testing"

// TestScanner_MembersRaw: MembersRaw reads the members Members reads, the first of a
// name, with each string's escapes as written; other kinds are read as Members reads them.
func TestScanner_MembersRaw(t *testing.T) {
	sc := NewScanner(`{"type":"t\u0065xt","text":"a\"b","text":"second","n":1,"o":{"k":"v\n"}}`)
	root, ok := sc.Root()
	if !ok {
		t.Fatal("not JSON")
	}
	keys := []string{"type", "text", "n", "o", "missing"}
	raw, decoded := make([]Value, len(keys)), make([]Value, len(keys))
	sc.MembersRaw(root, keys, raw)
	sc.Members(root, keys, decoded)
	for i, want := range []string{`t\u0065xt`, `a\"b`, "", "", ""} {
		if raw[i].Str != want || raw[i].Kind != decoded[i].Kind || raw[i].Raw != decoded[i].Raw {
			t.Errorf("%s: raw %+v, decoded %+v; want Str %q", keys[i], raw[i], decoded[i], want)
		}
		if raw[i].Kind == String && sc.DecodeRaw(raw[i].Str, 64) != decoded[i].Str {
			t.Errorf("%s: DecodeRaw(%q) != %q", keys[i], raw[i].Str, decoded[i].Str)
		}
	}
}
