package jsonx

import (
	"os"
	"strings"
	"testing"
)

// walkStrings reads the JSON value at sc's cursor token by token, reading every string
// value with str, and returns the values read, in order, and whether the walk succeeded.
func walkStrings(sc *Scanner, str func() (string, bool), out []string) ([]string, bool) {
	switch sc.Peek() {
	case '{':
		for n := 0; sc.NextField(&n); {
			out = append(out, sc.Key())
			var ok bool
			if out, ok = walkStrings(sc, str, out); !ok {
				return out, false
			}
		}
		return out, !sc.Failed()
	case '[':
		for n := 0; sc.NextElem(&n); {
			var ok bool
			if out, ok = walkStrings(sc, str, out); !ok {
				return out, false
			}
		}
		return out, !sc.Failed()
	case '"':
		v, ok := str()
		return append(out, v), ok
	}
	return out, sc.Skip()
}

// checkIndex holds a walk over s from offset from with an index built there (StrIn, or
// SkipStringIn, for every string) to the same walk with Str: the same strings and the
// same verdict, whether the index holds or not. One that does not must be for a text the
// walk fails on or that has a byte below 0x20 after from.
func checkIndex(t *testing.T, s string, from int) {
	t.Helper()
	var x StringIndex
	built := x.Build(s, from)
	plain := Scanner{s: s, i: from}
	want, wantOK := walkStrings(&plain, plain.Str, nil)
	wantOK = wantOK && plain.AtEnd()
	if !built && wantOK && !strings.ContainsFunc(s[from:], func(r rune) bool { return r < 0x20 }) {
		t.Fatalf("Build(%q, %d) = false for a text the Scanner reads", s, from)
	}
	// An index that does not hold is empty: its reads are the Scanner's.
	indexed := Scanner{s: s, i: from}
	skipped := Scanner{s: s, i: from}
	got, gotOK := walkStrings(&indexed, func() (string, bool) { return indexed.StrIn(&x) }, nil)
	gotOK = gotOK && indexed.AtEnd()
	_, skipOK := walkStrings(&skipped, func() (string, bool) { return "", skipped.SkipStringIn(&x) }, nil)
	skipOK = skipOK && skipped.AtEnd()
	if gotOK != wantOK || skipOK != wantOK || gotOK && strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Fatalf("walk of %q from %d by the index: %q %t (skipped %t), by Str: %q %t", s, from, got, gotOK, skipOK, want, wantOK)
	}
}

// TestStringIndex: texts the index holds for and reads as the Scanner does, and those it
// leaves to the Scanner, from every offset of their first block.
func TestStringIndex(t *testing.T) {
	long := strings.Repeat(`\"a\":1,`, 40)
	for _, s := range []string{
		`["a","b\"c","d\\","\\\"",""]`,
		`{"x":"` + long + `","y":["` + strings.Repeat("z", 200) + `"],"w":"\u00e9\u003e"}`,
		`["` + strings.Repeat(`\\`, 70) + `","` + strings.Repeat(`\\`, 31) + `\""]`,
		`{"a":"` + strings.Repeat("p", 61) + `","b":"` + strings.Repeat("q", 63) + `\""}`,
		`["a\u12","b"]`,       // a short \u: refused
		`["a\x","b"]`,         // a bad escape: refused
		"[\"a\",\n\"b\"]",     // whitespace: left to the Scanner
		"[\"a\tb\"]",          // a control byte in a string
		`["a\"]`,              // no end
		`["a"\"b"]`,           // a backslash outside a string
		`["abc`,               // no end
		`["a\`,                // an escape past the end
		`["a\u00`,             // a \u past the end
		`{"a":"b"}` + `"`,     // an odd quote after the value
		`[` + long[:60] + `]`, // backslashes outside strings
	} {
		for from := range min(len(s), 70) {
			checkIndex(t, strings.Repeat(" ", from)+s, from)
		}
	}
	b, err := os.ReadFile("testdata/history-10k.json")
	if err != nil {
		t.Fatal(err)
	}
	var x StringIndex
	if !x.Build(string(b), 0) {
		t.Fatal("Build of history-10k.json = false")
	}
	checkIndex(t, string(b), 0)
}

// FuzzStringIndexMatchesStr: any text, from any offset, walked by the index as by the
// Scanner alone (checkIndex).
func FuzzStringIndexMatchesStr(f *testing.F) {
	f.Add(uint8(0), []byte(`["a","b\"c","d\\","\u00e9"]`))
	f.Add(uint8(3), []byte(`{"x":"[{\"day\":\"2025-06-02\",\"rentals\":412}]","y":null}`))
	f.Add(uint8(1), []byte(`["a\u12","\x"]`))
	if b, err := os.ReadFile("testdata/history-10k.json"); err == nil {
		f.Add(uint8(0), b)
	}
	f.Fuzz(func(t *testing.T, from uint8, b []byte) {
		s := string(b)
		checkIndex(t, strings.Repeat(" ", int(from))+s, int(from))
	})
}
