package jsonx

import (
	"strings"
	"testing"
)

// TestPlainEnd puts each kind of byte PlainEnd must stop at, or refuse, at every offset
// of the first two words and the tail, and checks it against the byte loop.
func TestPlainEnd(t *testing.T) {
	for _, c := range []string{`"`, `\`, "\x00", "\x1f", " ", "\x7f", "\x80", "\xff", "é"} {
		for n := 0; n < 20; n++ {
			for _, tail := range []string{"", `"`, `x"`, `\"`} {
				s := `"` + strings.Repeat("a", n) + c + tail
				if got, want := PlainEnd(s, 1), plainEndBytes(s, 1); got != want {
					t.Errorf("PlainEnd(%q) = %d, want %d", s, got, want)
				}
			}
		}
	}
	if got := PlainEnd(`"abc`, 1); got != -1 {
		t.Errorf("an unterminated string: %d", got)
	}
	if got := PlainEnd(`"`, 1); got != -1 {
		t.Errorf("nothing after the quote: %d", got)
	}
}

// FuzzPlainEnd holds PlainEnd to its byte-at-a-time definition on any input and offset,
// and what it accepts to the Scanner: a JSON string whose value is its literal.
func FuzzPlainEnd(f *testing.F) {
	for _, s := range []string{`"service_tier":"standard"`, `"cached_tokens":0`, `"a\"b"`, "\"\x1f\"", `"é"`, `"` + strings.Repeat("x", 17) + `"`} {
		f.Add(s, 1)
	}
	f.Fuzz(func(t *testing.T, s string, i int) {
		if i < 1 || i > len(s) {
			return
		}
		got, want := PlainEnd(s, i), plainEndBytes(s, i)
		if got != want {
			t.Fatalf("PlainEnd(%q, %d) = %d, want %d", s, i, got, want)
		}
		if got < 0 || s[i-1] != '"' {
			return
		}
		sc := NewScanner(s[i-1 : got+1])
		if v, ok := sc.Str(); !ok || v != s[i:got] {
			t.Fatalf("PlainEnd took %q, which the Scanner reads as %q, %v", s[i-1:got+1], v, ok)
		}
	})
}

// FuzzPlainUint holds PlainUint to the Scanner: what it takes is the JSON number the
// Scanner reads at i, with the same end and Value.Int; and it takes every integer of 1 to
// 18 digits without sign or leading zero that ends there.
func FuzzPlainUint(f *testing.F) {
	for _, s := range []string{"0", "7,", "412}", "012", "-1", "1.5", "1e3", "999999999999999999", "1000000000000000000", "0x", "00", "3 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, end := PlainUint(s, 0)
		sc := NewScanner(s)
		var v Value
		ok := sc.Value(&v) && v.Kind == Number
		if end < 0 {
			// refused: then it is not a plain integer the Scanner reads whole, followed by
			// a byte that can end a number in JSON
			followed := sc.Pos() < len(s) && strings.IndexByte("0123456789.eE", s[sc.Pos()]) >= 0
			if ok && v.At == 0 && !followed && len(v.Raw) <= 18 && v.Raw[0] != '-' && (v.Raw == "0" || v.Raw[0] != '0') && !strings.ContainsAny(v.Raw, ".eE") {
				t.Fatalf("PlainUint(%q) refused the integer %q", s, v.Raw)
			}
			return
		}
		if !ok || sc.Pos() != end || v.Int() != n {
			t.Fatalf("PlainUint(%q) = %d, end %d; the Scanner: %q ok %v end %d", s, n, end, v.Raw, ok, sc.Pos())
		}
	})
}
