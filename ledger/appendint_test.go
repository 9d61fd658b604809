package ledger

import (
	"math"
	"strconv"
	"testing"
)

// TestAppendInt64 holds appendInt64 to strconv.AppendInt at and around its fast paths'
// bounds, at the extremes, and after bytes already in the buffer.
func TestAppendInt64(t *testing.T) {
	for _, n := range []int64{0, 1, 9, 10, 11, 42, 99, 100, 101, 429, 999, 1000, 1001, 65535, 99999, 100000, 1e12, 1e16 - 1, 1e16, 1e16 + 1,
		-1, -9, -10, -99, -100, -999, -1000, math.MaxInt64, math.MinInt64, math.MinInt64 + 1} {
		got, want := string(appendInt64([]byte("x,"), n)), string(strconv.AppendInt([]byte("x,"), n, 10))
		if got != want {
			t.Errorf("appendInt64(%d) = %q, want %q", n, got, want)
		}
	}
	// Every digit count's bounds (appendInt64Slow's count from the bit length), and a
	// buffer without room (grown) or with it.
	for p := int64(10); p <= 1e17; p *= 10 {
		for _, n := range []int64{p - 1, p, p + 1, p/2 + p/4} {
			for _, b := range [][]byte{[]byte("x,"), make([]byte, 2, 64)} {
				got, want := string(appendInt64(b, n)[2:]), strconv.FormatInt(n, 10)
				if got != want {
					t.Errorf("appendInt64(%d) = %q, want %q", n, got, want)
				}
			}
		}
	}
}

// FuzzAppendInt64 checks appendInt64 against strconv.AppendInt for any number.
func FuzzAppendInt64(f *testing.F) {
	for _, n := range []int64{0, 7, 99, 999, 1000, -1, math.MaxInt64, math.MinInt64} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n int64) {
		if got, want := string(appendInt64(nil, n)), strconv.FormatInt(n, 10); got != want {
			t.Fatalf("appendInt64(%d) = %q, want %q", n, got, want)
		}
	})
}

// appendJSONTextByByte is appendJSONText looking at every byte, without the plain
// prefix jsonx.PlainPrefix finds: the reference the fuzz target holds it to.
func appendJSONTextByByte(b []byte, s string) []byte { return appendJSONTextFrom(b, s, 0) }

// FuzzAppendJSONText checks appendJSONText against the byte-by-byte writer for any text,
// seeded with ids, escapes after a plain prefix of each length around the word size,
// '<', '>', '&' (plain here, not for jsonx) and invalid UTF-8.
func FuzzAppendJSONText(f *testing.F) {
	for _, s := range []string{"", "req_0123456789abcdef01234567", "4bf92f3577b34da6a3ce929d0e0e4736",
		"1234567\"", "12345678\n", "123456789\\", "0123456789abcdef0123456789abcdef0123456789\x01x",
		"a<b>&c", "caf\xc3\xa9 \xff\xfe", "\u2028", "tab\there"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(appendJSONText([]byte("x"), s)), string(appendJSONTextByByte([]byte("x"), s)); got != want {
			t.Fatalf("appendJSONText(%q) = %q, want %q", s, got, want)
		}
	})
}
