package jsonx

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// naiveMask is specialMask's definition, one byte at a time.
func naiveMask(s string, blk int) uint64 {
	var m uint64
	for k := 0; k < blockSize && blk+k < len(s); k++ {
		if c := s[blk+k]; c == '"' || c == '\\' || c < 0x20 {
			m |= 1 << k
		}
	}
	return m
}

// TestBlockMask: the block mask, as this machine computes it (with AVX2 if it has it) and
// in portable Go, marks
// exactly the quotes, backslashes and control characters, whatever the other bytes are
// (each byte value at each position, and random blocks).
func TestBlockMask(t *testing.T) {
	check := func(b string) {
		t.Helper()
		want := naiveMask(b, 0)
		if got := specialMask(b, 0); got != want {
			t.Fatalf("specialMask(%q) = %064b, want %064b", b, got, want)
		}
		if got := blockMaskGo(b); got != want {
			t.Fatalf("blockMaskGo(%q) = %064b, want %064b", b, got, want)
		}
	}
	for c := range 256 {
		for pos := range blockSize {
			b := []byte(strings.Repeat("a", blockSize))
			b[pos] = byte(c)
			check(string(b))
			for k := range b { // the byte among quotes, backslashes and high bytes
				if k != pos {
					b[k] = "\"\\\x80\xff"[k%4]
				}
			}
			check(string(b))
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, blockSize)
	for range 10000 {
		for k := range b {
			b[k] = byte(r.IntN(256))
		}
		check(string(b))
	}
}

// TestStringEnd_AcrossBlocks: a string read from any offset, so that its escapes, its
// closing quote or its fault fall on either side of a block boundary, and two strings
// read from one kept block, are judged as gjson judges them.
func TestStringEnd_AcrossBlocks(t *testing.T) {
	bodies := []string{
		`"plain text that is long enough to cross one block boundary or two, at least 64 bytes"`,
		`"[{\"day\":\"2025-06-02\",\"rentals\":412},{\"day\":\"2025-06-03\",\"rentals\":388}]"`,
		`"\u00e9\u4e2d\ud83d\ude00\\\"\/\b\f\n\r\t\\\\\"x"`,
		`"ends on a backslash \"`,
		`"bad \x escape"`,
		`"short \u12 escape"`,
		"\"a control \x01 char\"",
		"\"a newline \n inside\"",
		`"unterminated`,
		`"\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\\"`,
		`"\u0041\u0042\u0043\u0044\u0045\u0046\u0047\u0048\u0049\u004a\u004b\u004c\u004d\u004e"`,
		`"\u004`,
	}
	for _, body := range bodies {
		for pad := range 2*blockSize + 2 {
			for _, doc := range []string{
				"[" + strings.Repeat(" ", pad) + body + "]",
				"[" + strings.Repeat(" ", pad) + body + "," + body + "]",
				`{"k":` + strings.Repeat(" ", pad) + body + `,"key2":"v"}`,
				"[" + strings.Repeat(" ", pad) + body, // the input ends in the string
			} {
				if got, want := Valid(doc), gjson.Valid(doc); got != want {
					t.Fatalf("Valid(%q) = %v, gjson.Valid %v", doc, got, want)
				}
			}
			s := strings.Repeat(" ", pad) + body
			sc := Scanner{s: s}
			sc.i = pad
			if str, ok := sc.Str(); ok {
				if want := decodeString(s[pad:sc.i]); str != want {
					t.Fatalf("%q decoded %q, encoding/json %q", s[pad:sc.i], str, want)
				}
			}
		}
	}
}

// FuzzStringAtOffset: a fuzzed string placed at a fuzzed offset (so that block
// boundaries fall anywhere in it) is judged as gjson judges it and decoded as
// encoding/json decodes it.
func FuzzStringAtOffset(f *testing.F) {
	f.Add(uint8(60), []byte(`ab\"cd\u00e9\\x`))
	f.Add(uint8(62), []byte(`\u0041`))
	f.Add(uint8(63), []byte(`\`))
	f.Add(uint8(0), []byte(`[{\"day\":\"2025-06-02\",\"rentals\":412},{\"day\":\"2025-06-03\"}]`))
	f.Fuzz(func(t *testing.T, pad uint8, b []byte) {
		s := strings.Repeat(" ", int(pad)) + `"` + string(b) + `"`
		doc := "[" + s + "]"
		if got, want := Valid(doc), gjson.Valid(doc); got != want {
			t.Fatalf("Valid(%q) = %v, gjson.Valid %v", doc, got, want)
		}
		sc := Scanner{s: s}
		sc.i = int(pad)
		if str, ok := sc.Str(); ok {
			if want := decodeString(s[pad:sc.i]); str != want {
				t.Fatalf("%q decoded %q, encoding/json %q", s[pad:sc.i], str, want)
			}
		}
	})
}

// TestScanner_ResetForgetsBlock: a scanner Reset to another input does not read its
// strings with the block mask of the input before.
func TestScanner_ResetForgetsBlock(t *testing.T) {
	var sc Scanner
	sc.Reset(`"abcdefgh"`)
	if s, ok := sc.Str(); !ok || s != "abcdefgh" {
		t.Fatalf("first input: %q, %v", s, ok)
	}
	sc.Reset(`"abc"defgh"`)
	if s, ok := sc.Str(); !ok || s != "abc" {
		t.Fatalf("after Reset: %q, %v, want \"abc\"", s, ok)
	}
}

// TestSafePrefix: safePrefix stops at exactly the first byte AppendString cannot copy,
// for each byte value at each offset of runs that span the 32-byte and 8-byte steps.
func TestSafePrefix(t *testing.T) {
	unsafe := func(c byte) bool { return c < 0x20 || c >= 0x80 || strings.IndexByte(`"\<>&`, c) >= 0 }
	for n := 1; n < 100; n++ {
		for c := range 256 {
			for _, pos := range []int{0, n / 3, n - 1} {
				if pos < 0 {
					continue
				}
				b := []byte(strings.Repeat("a", n))
				b[pos] = byte(c)
				want := n
				if unsafe(byte(c)) {
					want = pos
				}
				if got := safePrefix(string(b), 0); got != want {
					t.Fatalf("safePrefix(%q, 0) = %d, want %d", b, got, want)
				}
			}
		}
	}
}

// TestSafePrefix_EveryOffset: from each start, safePrefix stops at the first byte
// AppendString cannot copy wherever it lies in runs of up to seven 32-byte blocks: in the
// first words, in a block the vector step reads, or in the bytes after the last whole
// block; and at the end of a run that has none.
func TestSafePrefix_EveryOffset(t *testing.T) {
	stops := []byte{'"', '\\', '<', '>', '&', 0x00, 0x1f, 0x80, 0xff}
	for n := 0; n <= 230; n++ {
		b := []byte(strings.Repeat("a~ 0", n/4+1)[:n]) // 0x7e and 0x20: the edges of safe
		for _, start := range []int{0, 1, 5, 17} {
			if start > n {
				continue
			}
			if got := safePrefix(string(b), start); got != n {
				t.Fatalf("safePrefix(%d safe bytes, %d) = %d, want %d", n, start, got, n)
			}
			for pos := start; pos < n; pos++ {
				for _, c := range stops {
					keep := b[pos]
					b[pos] = c
					got := safePrefix(string(b), start)
					blocks := -1
					if start == 0 {
						blocks = safeBlocks(&b[0], n)
					}
					b[pos] = keep
					if got != pos {
						t.Fatalf("safePrefix(%d bytes with %#x at %d, %d) = %d", n, c, pos, start, got)
					}
					if want := min(pos, n&^31); blocks >= 0 && blocks != want {
						t.Fatalf("safeBlocks(%d bytes with %#x at %d) = %d, want %d", n, c, pos, blocks, want)
					}
				}
			}
		}
	}
}

// TestAppendLiteral_AcrossBlocks: AppendLiteral keeps its contract (the bytes
// AppendString writes for the literal's value) for each escape and character that stops
// it placed at each offset of literals from under one block to three blocks (so that it
// falls on, before and after block boundaries), once and twice; a literal the scanner
// would refuse (a lone quote or backslash, a bad escape, a control character, a byte that
// is not UTF-8) is outside the contract and must only not fail.
func TestAppendLiteral_AcrossBlocks(t *testing.T) {
	stops := []string{`\"`, `\\`, `\/`, `\n`, `\u00e9`, `\u003c`, `\ud83d\ude00`, `\ud800`, `\u2028`,
		"<", ">", "&", "é", "\u2028", "\u2029", "😀", "\xff", "\x01", `"`, `\`, `\u00`, `\x`}
	for _, n := range []int{8, 31, 32, 33, 63, 64, 65, 100, 127, 128, 131, 192} {
		for _, stop := range stops {
			for at := 0; at+len(stop) <= n; at++ {
				for _, twice := range []bool{false, true} {
					b := []byte(strings.Repeat("abcdefg ", n/8+1)[:n])
					copy(b[at:], stop)
					if twice && n-len(stop) > at+3 {
						copy(b[n-len(stop):], stop)
					}
					lit := string(b)
					got := AppendLiteral(nil, lit)
					sc := NewScanner(`"` + lit + `"`)
					var v Value
					if !sc.ValueRaw(&v) || !sc.AtEnd() || !utf8.ValidString(lit) {
						continue // not a checked literal
					}
					var dec Scanner
					if want := AppendString(nil, dec.DecodeRaw(lit, len(lit))); string(got) != string(want) {
						t.Fatalf("literal %q:\ngot  %s\nwant %s", lit, got, want)
					}
				}
			}
		}
	}
}

// naiveLiteralMasks is literalMasks' definition, one byte at a time.
func naiveLiteralMasks(s string, base int) (u, bs, chg uint64) {
	for k := 0; k < blockSize && base+k < len(s); k++ {
		c := s[base+k]
		if c < 0x20 || c >= 0x80 || strings.IndexByte(`"\<>&`, c) >= 0 {
			u |= 1 << k
		}
		if c == '\\' {
			bs |= 1 << k
		}
		if c == '/' || c == 'u' {
			chg |= 1 << k
		}
	}
	return u, bs, chg
}

// TestLiteralMasks: the literal masks, with AVX2 if the CPU has it and in portable Go,
// mark exactly the bytes AppendString cannot copy as they are, the backslashes, and the
// bytes '/' and 'u', for each byte value at each position of whole blocks and of the
// last, partial block (a half block or more).
func TestLiteralMasks(t *testing.T) {
	naive := naiveLiteralMasks
	for _, n := range []int{1, 31, 32, 33, 63, 64, 100} {
		for c := range 256 {
			for pos := range min(n, blockSize) {
				b := []byte(strings.Repeat("a", n))
				b[pos] = byte(c)
				s := string(b)
				wu, wbs, wchg := naive(s, 0)
				if u, bs, chg := literalMasks(s, 0); u != wu || bs != wbs || chg != wchg {
					t.Fatalf("literalMasks(%q, 0) = %064b %064b %064b, want %064b %064b %064b", s, u, bs, chg, wu, wbs, wchg)
				}
				if n >= blockSize {
					if u, bs, chg := literalMaskGo(s[:blockSize]); u != wu || bs != wbs || chg != wchg {
						t.Fatalf("literalMaskGo(%q) = %064b %064b %064b, want %064b %064b %064b", s[:blockSize], u, bs, chg, wu, wbs, wchg)
					}
				}
			}
		}
	}
}

// naiveStringEnd is stringEnd's definition, one byte at a time: the offset of the quote
// closing the string whose contents start at i, or -1 if it is malformed.
func naiveStringEnd(s string, i int) int {
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return i
		case c < 0x20:
			return -1
		case c == '\\':
			if i+1 >= len(s) {
				return -1
			}
			switch s[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+6 > len(s) || !isHex(s[i+2]) || !isHex(s[i+3]) || !isHex(s[i+4]) || !isHex(s[i+5]) {
					return -1
				}
				i += 5
			default:
				return -1
			}
		}
	}
	return -1
}

// naiveEscapeMask is escapeMask's definition, one byte at a time.
func naiveEscapeMask(s string, blk int) (bs, bad, u uint64) {
	for k := range blockSize {
		c := byte(0)
		if blk+k < len(s) {
			c = s[blk+k]
		}
		if !strings.ContainsRune(`"\/bfnrtu`, rune(c)) || blk+k >= len(s) {
			bad |= 1 << k
		}
		if blk+k < len(s) && c == '\\' {
			bs |= 1 << k
		}
		if blk+k < len(s) && c == 'u' {
			u |= 1 << k
		}
	}
	return bs, bad, u
}

// TestEscapeMask: the escape masks, as this machine computes them and in portable Go,
// mark exactly the special bytes (naiveMask), the backslashes, the bytes not allowed after
// one, and the u bytes, for
// every byte value at every position, random blocks and a last, partial block.
func TestEscapeMask(t *testing.T) {
	check := func(s string, blk int) {
		t.Helper()
		wbs, wbad, wu := naiveEscapeMask(s, blk)
		wm := naiveMask(s, blk)
		if m, bs, bad, u := escapeMask(s, blk); m != wm || bs != wbs || bad != wbad || u != wu {
			t.Fatalf("escapeMask(%q, %d) = %064b %064b %064b %064b, want %064b %064b %064b %064b", s, blk, m, bs, bad, u, wm, wbs, wbad, wu)
		}
		if blk+blockSize <= len(s) {
			if m, bs, bad, u := escapeBlockGo(s[blk : blk+blockSize]); m != wm || bs != wbs || bad != wbad || u != wu {
				t.Fatalf("escapeBlockGo(%q) = %064b %064b %064b %064b, want %064b %064b %064b %064b", s[blk:blk+blockSize], m, bs, bad, u, wm, wbs, wbad, wu)
			}
		}
	}
	for c := range 256 {
		for pos := range blockSize {
			b := []byte(strings.Repeat("a", blockSize))
			b[pos] = byte(c)
			check(string(b), 0)
			check(string(b[:pos+1]), 0) // the byte last in a partial block
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	b := make([]byte, 2*blockSize)
	for range 10000 {
		for k := range b {
			b[k] = `\\\"u/bfx0a`[r.IntN(10)]
			if r.IntN(20) == 0 {
				b[k] = byte(r.IntN(256))
			}
		}
		check(string(b), 0)
		check(string(b[:blockSize+r.IntN(blockSize)]), blockSize)
	}
}

// TestStringEnd_MatchesNaive: strings made of the bytes that matter to escapes (runs of
// backslashes of every length, quotes, u escapes with good and bad hex, bad escapes,
// control characters), read from every offset of two blocks, end where the byte-at-a-time
// definition ends them, and are refused where it refuses them.
func TestStringEnd_MatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	pieces := []string{`\`, `\\`, `\"`, `"`, `a`, `u`, `\u00e9`, `\u12`, `\uzzzz`, `\x`, `\/`, `\n`, "\x01", `\` + "\x01", strings.Repeat(`\`, 63), strings.Repeat("b", 40)}
	for range 20000 {
		var b strings.Builder
		for range r.IntN(40) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		body := b.String()
		pad := r.IntN(2 * blockSize)
		s := strings.Repeat(" ", pad) + body
		sc := Scanner{s: s}
		got, _ := sc.stringEnd(pad)
		if want := naiveStringEnd(s, pad); got != want {
			t.Fatalf("stringEnd(%q, %d) = %d, want %d", s, pad, got, want)
		}
	}
}

// TestStringEnd_LongPlainRuns: a string whose first stop (its closing quote, a
// backslash, a control character, or the input's end) comes after a long run of plain
// bytes, from every offset in a block, ends where the byte-at-a-time definition says:
// stringEnd passes over the run's whole blocks in one call (stopBlocks), which must
// hand back the right block, and the last, partial one to specialMask.
func TestStringEnd_LongPlainRuns(t *testing.T) {
	for _, stop := range []string{`"`, `\"x"`, `\x"`, "\x01\"", ""} {
		for n := 0; n <= 5*blockSize; n += 7 {
			body := strings.Repeat("p", n) + stop
			for pad := range blockSize + 2 {
				s := strings.Repeat(" ", pad) + body
				sc := Scanner{s: s}
				got, _ := sc.stringEnd(pad)
				if want := naiveStringEnd(s, pad); got != want {
					t.Fatalf("stringEnd of %d plain bytes then %q from %d = %d, want %d", n, stop, pad, got, want)
				}
			}
		}
	}
}

// TestEscapedBlock_MatchesNaive: escapedBlock read block after block ends strings with
// escapes where the byte-at-a-time definition does (escapedEnd itself hands it only the
// blocks escapedBlocks stops at: one with a \u escape, and the last, partial one).
func TestEscapedBlock_MatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	pieces := []string{`\`, `\\`, `\"`, `"`, `a`, `u`, `\u00e9`, `\u12`, `\x`, `\/`, `\n`, "\x01", strings.Repeat(`\`, 63), strings.Repeat("b", 40)}
	for range 20000 {
		var b strings.Builder
		b.WriteString(`\"`) // the string has an escape from its start, as escapedEnd's do
		for range r.IntN(40) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		pad := r.IntN(2 * blockSize)
		s := strings.Repeat(" ", pad) + b.String()
		sc := Scanner{s: s}
		got := -1
		blk := pad &^ (blockSize - 1)
		window, carry := ^uint64(0)<<(pad-blk), uint64(0)
		for blk < len(s) {
			end, next, done := sc.escapedBlock(blk, window, carry)
			if done {
				got = end
				break
			}
			blk, window, carry = blk+blockSize, ^uint64(0), next
		}
		if want := naiveStringEnd(s, pad); got != want {
			t.Fatalf("escapedBlock's loop over %q from %d: %d, want %d", s, pad, got, want)
		}
	}
}

// FuzzStringEndMatchesNaive: stringEnd agrees with its byte-at-a-time definition on any
// bytes read from any offset.
func FuzzStringEndMatchesNaive(f *testing.F) {
	f.Add(uint8(60), []byte(`ab\"cd\u00e9\\x"`))
	f.Add(uint8(62), []byte(`\\\\\\\"\u0041"`))
	f.Add(uint8(63), []byte(`\`))
	f.Add(uint8(0), []byte(`[{\"day\":\"2025-06-02\",\"rentals\":412},{\"day\":\"2025-06-03\"}]"`))
	f.Fuzz(func(t *testing.T, pad uint8, b []byte) {
		s := strings.Repeat(" ", int(pad)) + string(b)
		sc := Scanner{s: s}
		got, _ := sc.stringEnd(int(pad))
		if want := naiveStringEnd(s, int(pad)); got != want {
			t.Fatalf("stringEnd(%q, %d) = %d, want %d", s, pad, got, want)
		}
	})
}
