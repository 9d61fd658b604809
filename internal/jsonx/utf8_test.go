package jsonx

import (
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestValidUTF8: ValidUTF8 agrees with utf8.ValidString with a multi-byte character, a
// bad byte and a cut character at each offset of inputs from under one 128-byte block
// to three blocks, before, on and after the block boundaries.
func TestValidUTF8(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 129, 255, 256, 300, 384, 400} {
		for _, insert := range []string{"é", "😀", "\xff", "\xc3", "\xe2\x82", "\x80", "\u2028", "\xed\xa0\x80"} {
			for at := 0; at+len(insert) <= n; at++ {
				b := []byte(strings.Repeat("abcdefg ", n/8+1)[:n])
				copy(b[at:], insert)
				s := string(b)
				if got, want := ValidUTF8(s), utf8.ValidString(s); got != want {
					t.Fatalf("ValidUTF8(%q) = %v, want %v", s, got, want)
				}
			}
		}
	}
}

// TestValidUTF8_AfterABlock: after a block with a multi-byte character, the check goes
// on from the cut it makes: a second character, bad byte or cut character is found at
// each offset of the next blocks, and a character is never split at the cut.
func TestValidUTF8_AfterABlock(t *testing.T) {
	const n = 400
	for first := 120; first < 136; first++ {
		for _, insert := range []string{"é", "😀", "\xff", "\xc3", "\xf0\x9f\x98", "\x80\x80\x80\x80", "\xed\xa0\x80"} {
			for at := first + 2; at+len(insert) <= n; at++ {
				b := []byte(strings.Repeat("abcdefg ", n/8+1)[:n])
				copy(b[first:], "é")
				copy(b[at:], insert)
				s := string(b)
				if got, want := ValidUTF8(s), utf8.ValidString(s); got != want {
					t.Fatalf("ValidUTF8(%q) = %v, want %v", s, got, want)
				}
			}
		}
	}
}

// FuzzValidUTF8MatchesStdlib: ValidUTF8 is utf8.ValidString.
func FuzzValidUTF8MatchesStdlib(f *testing.F) {
	body, err := os.ReadFile("testdata/history-10k.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(body))
	f.Add(strings.Repeat("a", 130) + "é" + strings.Repeat("b", 200))
	f.Add(strings.Repeat("a", 256) + "\xff")
	f.Add(strings.Repeat("a", 126) + "😀" + strings.Repeat("b", 200) + "\xe2\x82" + strings.Repeat("c", 130))
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ValidUTF8(s), utf8.ValidString(s); got != want {
			t.Fatalf("ValidUTF8(%q) = %v, want %v", s, got, want)
		}
	})
}

// BenchmarkValidUTF8 is the UTF-8 check of testdata/history-10k.json, the ~10 KB request
// of the end-to-end benchmark's scenario d, against utf8.ValidString's.
func BenchmarkValidUTF8(b *testing.B) {
	body, err := os.ReadFile("testdata/history-10k.json")
	if err != nil {
		b.Fatal(err)
	}
	// sparse is the same text with an accented letter every 500 bytes or so, as in
	// prose in most European languages.
	var sparse strings.Builder
	for i := 0; i < len(body); i += 500 {
		sparse.Write(body[i:min(i+500, len(body))])
		sparse.WriteString("é")
	}
	for _, bc := range []struct {
		name  string
		s     string
		valid func(string) bool
	}{
		{"ascii/utf8.ValidString", string(body), utf8.ValidString}, {"ascii/ValidUTF8", string(body), ValidUTF8},
		{"sparse/utf8.ValidString", sparse.String(), utf8.ValidString}, {"sparse/ValidUTF8", sparse.String(), ValidUTF8},
	} {
		s := bc.s
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				if !bc.valid(s) {
					b.Fatal("invalid")
				}
			}
		})
	}
}
