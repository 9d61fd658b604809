package jsonx

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// The unescape kernel: the decoding of a string with escapes (decodeEscaped). This file
// holds its portable Go twin, decodeRun, which is also the AVX2 decoder's reading of a \u
// escape; kernels_amd64.go runs the AVX2 decoder where the CPU has AVX2, and
// kernel_unescape_amd64_test.go holds that to this.

// decodeRun decodes raw, the checked contents of a string with escapes, from i on, into
// out from j on, until i reaches stop or past it (an escape is read whole), and returns
// both offsets: a decoded string is never longer than its escaped form, and unescape's
// rules apply (escaped surrogates as encoding/json decodes them). Runs of plain bytes move
// eight at a time: an eight-byte load, a test for a backslash in it, an eight-byte store
// (bytes past the backslash are written over by what comes next).
func decodeRun(out []byte, raw string, i, j, stop int) (int, int) {
	for i < stop {
		if i+8 <= len(raw) {
			w := load8(raw[i : i+8])
			binary.LittleEndian.PutUint64(out[j:j+8], w) // j <= i, so j+8 <= len(out)
			x := w ^ (ones * '\\')
			m := (x - ones) &^ x & highs // the lowest set bit marks the first backslash
			if m == 0 {
				i, j = i+8, j+8
				continue
			}
			k := bits.TrailingZeros64(m) / 8
			i, j = i+k, j+k
		} else if c := raw[i]; c != '\\' {
			out[j] = c
			i, j = i+1, j+1
			continue
		}
		// raw[i] is a backslash; the scanner checked the escape after it.
		i++
		switch c := raw[i]; c {
		case 'b':
			out[j] = '\b'
		case 'f':
			out[j] = '\f'
		case 'n':
			out[j] = '\n'
		case 'r':
			out[j] = '\r'
		case 't':
			out[j] = '\t'
		case 'u':
			r := hex4(raw[i+1:])
			i += 4
			if utf16.IsSurrogate(r) {
				// A surrogate pairs only with a following escaped low surrogate; alone it
				// is U+FFFD, and whatever follows is decoded on its own.
				next := rune(-1)
				if len(raw)-i > 6 && raw[i+1] == '\\' && raw[i+2] == 'u' {
					next = hex4(raw[i+3:])
				}
				if d := utf16.DecodeRune(r, next); d != utf8.RuneError {
					r, i = d, i+6
				} else {
					r = utf8.RuneError
				}
			}
			// The escape took six bytes (twelve for a pair): room for the rune's four.
			j += utf8.EncodeRune(out[j:], r)
			i++
			continue
		default: // '"', '\\' or '/'
			out[j] = c
		}
		i, j = i+1, j+1
	}
	return i, j
}
