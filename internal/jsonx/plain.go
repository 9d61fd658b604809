package jsonx

import "math/bits"

// PlainEnd returns the offset of the quote that closes the string whose contents start
// at s[i] when every byte before it is printable ASCII other than a backslash (a literal
// that is its own value: an id, a name, an enum), and -1 otherwise (a control byte, a
// backslash, a byte beyond ASCII, or no quote). What it accepts is a valid JSON string;
// a string it refuses may still be one, for the Scanner to read. It reads eight bytes at
// a time, for readers of compact layouts that look at a few short strings without a
// Scanner's block masks.
func PlainEnd(s string, i int) int {
	for ; i+8 <= len(s); i += 8 {
		w := wordAt(s, i)
		// The lowest flagged byte of each mask is exact (a borrow only flags bytes above
		// a flagged one), so a quote flagged below every bad byte ends the string.
		bad := w&highs8 | lessThan8(w, 0x20) | zeroByte8(w^(lows8*'\\'))
		if q := zeroByte8(w ^ (lows8 * '"')); q != 0 {
			k := bits.TrailingZeros64(q) // bit 7 of the quote's byte
			if bad&(1<<k-1) != 0 {
				return -1
			}
			return i + k/8
		}
		if bad != 0 {
			return -1
		}
	}
	return plainEndBytes(s, i)
}

// plainEndBytes is PlainEnd's definition a byte at a time: its tail after the last whole
// word, and the oracle its tests hold the word loop to.
func plainEndBytes(s string, i int) int {
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return i
		case c < 0x20 || c >= 0x80 || c == '\\':
			return -1
		}
	}
	return -1
}

const (
	lows8  = 0x0101010101010101
	highs8 = 0x8080808080808080
)

// zeroByte8 flags (bit 7) the bytes of w that are zero; exact up to the first.
func zeroByte8(w uint64) uint64 { return (w - lows8) &^ w & highs8 }

// lessThan8 flags the bytes of w below n (n <= 0x80) among those below 0x80; exact up to
// the first.
func lessThan8(w uint64, n byte) uint64 { return (w - lows8*uint64(n)) &^ w & highs8 }

// PlainUint reads the number at s[i] when it is an integer of 1 to 18 digits without
// sign, fraction, exponent or leading zero (a count, an index), whose value always fits an
// int64: it returns the value and the offset after it, or end -1 for anything else (a
// number it does not take included, for the Scanner to read). What it accepts is a valid
// JSON number, read as Value.Int reads it.
func PlainUint(s string, i int) (n int64, end int) {
	if i >= len(s) {
		return 0, -1
	}
	d := s[i] - '0'
	if d > 9 {
		return 0, -1
	}
	n = int64(d)
	j := i + 1
	if d != 0 {
		for ; j < len(s) && j-i < 19; j++ {
			c := s[j] - '0'
			if c > 9 {
				break
			}
			n = n*10 + int64(c)
		}
		if j-i > 18 {
			return 0, -1
		}
	}
	if j < len(s) {
		if c := s[j]; c-'0' <= 9 || c == '.' || c == 'e' || c == 'E' {
			return 0, -1
		}
	}
	return n, j
}
