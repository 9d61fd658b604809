package anthropic

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agate-gateway/agate/internal/jsonx"
)

// appendInputLiteral is the common case of a tool call's arguments written as a tool_use
// input, in one pass over the arguments as the client escaped them: lit is the contents
// of a JSON string literal a scanner has checked (a lazy parse left it escaped), whose
// value is a JSON object. It appends that value to dst and returns true when lit's
// escapes are \" (each a quote of the value) and, inside the value's strings, \u escapes
// of characters the value holds as they are (inputString), and its value is a JSON
// object with nothing around it and no string with an escape of its own; the bytes are
// then those of jsonx.AppendDecoded, and the object is one jsonx.Valid accepts. Anything else, valid or
// not, returns false with dst as it was, for the general path (decode, then Valid), which
// gives its verdict and its error.
//
// The value's strings are read eight bytes at a time up to a backslash of lit (the
// closing \" or a \u escape, inputString). Between strings the value's
// tokens are read a byte at a time: brackets, commas, colons, spaces, numbers and the
// literals.
func appendInputLiteral(dst []byte, lit string) ([]byte, bool) {
	const maxDepth = 32 // deeper values take the general path
	if len(lit) < 2 || lit[0] != '{' || lit[len(lit)-1] != '}' {
		return dst, false
	}
	var open [maxDepth]byte // the closing bracket of each open container
	depth := 0
	out := len(dst)
	// Room for the value, never longer than lit; every byte up to w is written below.
	dst = slices.Grow(dst, len(lit))[:out+len(lit)]
	w := out // where the next byte of the value goes
	i := 0
	expect := wantValue
	for i < len(lit) {
		c := lit[i]
		if c == ' ' {
			dst[w] = c
			i, w = i+1, w+1
			continue
		}
		switch expect {
		case wantColon:
			if c != ':' {
				return dst[:out], false
			}
			dst[w] = c
			i, w = i+1, w+1
			expect = wantValue
			continue
		case wantCommaOrEnd:
			if depth == 0 {
				return dst[:out], false // something after the object
			}
			switch {
			case c == ',':
				if expect = wantValue; open[depth-1] == '}' {
					// The next member's name read here, as a name follows an object's
					// comma in any value this path takes.
					if i+2 < len(lit) && lit[i+1] == '\\' && lit[i+2] == '"' {
						dst[w], dst[w+1] = ',', '"'
						if i, w = inputString(dst, lit, i+3, w+2); i < 0 {
							return dst[:out], false
						}
						i, w, expect = inputColon(dst, lit, i, w)
						continue
					}
					expect = wantName
				}
			case c == open[depth-1]:
				depth--
			default:
				return dst[:out], false
			}
			dst[w] = c
			i, w = i+1, w+1
			continue
		}
		// A value or a name is expected, or (wantNameOrEnd, wantValueOrEnd) the end of
		// the container just opened.
		if c == '}' && expect == wantNameOrEnd || c == ']' && expect == wantValueOrEnd {
			depth--
			dst[w] = c
			i, w = i+1, w+1
			expect = wantCommaOrEnd
			continue
		}
		if c == '\\' { // a string: \" opens it
			if i+1 >= len(lit) || lit[i+1] != '"' {
				return dst[:out], false
			}
			dst[w] = '"'
			if expect == wantName || expect == wantNameOrEnd {
				if i, w = inputString(dst, lit, i+2, w+1); i < 0 {
					return dst[:out], false
				}
				i, w, expect = inputColon(dst, lit, i, w)
				continue
			}
			if i, w = inputString(dst, lit, i+2, w+1); i < 0 {
				return dst[:out], false
			}
			expect = wantCommaOrEnd
			continue
		}
		if expect == wantName || expect == wantNameOrEnd {
			return dst[:out], false
		}
		switch {
		case c == '{' || c == '[':
			if depth == maxDepth || depth == 0 && i > 0 {
				return dst[:out], false
			}
			open[depth] = c + 2 // '}' follows '{' by two, ']' '[' likewise
			depth++
			dst[w] = c
			i, w = i+1, w+1
			if expect = wantValueOrEnd; c == '{' {
				expect = wantNameOrEnd
			}
			continue
		case depth == 0:
			return dst[:out], false // the value is not an object
		case c == 't' || c == 'f' || c == 'n':
			word := "null"
			if c == 't' {
				word = "true"
			} else if c == 'f' {
				word = "false"
			}
			if !strings.HasPrefix(lit[i:], word) {
				return dst[:out], false
			}
			w += copy(dst[w:], word)
			i += len(word)
		default:
			e := jsonx.NumberEnd(lit, i)
			if e < 0 {
				return dst[:out], false
			}
			w += copy(dst[w:], lit[i:e])
			i = e
		}
		expect = wantCommaOrEnd
	}
	if depth != 0 || expect != wantCommaOrEnd {
		return dst[:out], false
	}
	return dst[:w], true
}

// What appendInputLiteral's reader may see next (its expect): a value; a member name
// (after '{' or ',' in an object); the end of a container or a comma (after a value); a
// colon (after a name).
const (
	wantValue = iota
	wantName
	wantNameOrEnd
	wantValueOrEnd
	wantCommaOrEnd
	wantColon
)

// inputColon follows a member name that ends before lit[i] (and dst[w]): it copies the
// colon when it follows at once (as it does unless spaces come between) and returns the
// offsets after it and what appendInputLiteral expects there, wantValue, or else i, w and
// wantColon. Small enough to be inlined, which a call around inputString is not.
func inputColon(dst []byte, lit string, i, w int) (int, int, int) {
	if i >= len(lit) || lit[i] != ':' {
		return i, w, wantColon
	}
	dst[w] = ':'
	return i + 1, w + 1, wantValue
}

// inputString copies the contents of a string of the value, from lit[i:] to dst[w:], up
// to and with its closing \", and returns the offsets after it in lit and dst, or -1
// when the string is one appendInputLiteral leaves to the general path. Its bytes move
// eight at a time, as jsonx's decodeRun moves them: an eight-byte load, a test for a
// backslash in it, an eight-byte store (bytes past the backslash are written over by
// what comes next; w <= i, so the store lies in dst). A \u escape of lit (encoding/json's
// of <, > and &, Python's of any non-ASCII character) is written as the character, in
// at most the escape's six bytes: unless it is a surrogate, a control character, a
// quote or a backslash, which would make an escape or an error in the value. Any other
// escape of lit (\\, \n, \/, ...) is an escape or a control character in the value.
//
// None of the bytes between escapes is a quote: lit's contents are a checked literal's,
// or raw JSON without a backslash, which appendInputLiteral refuses at its first member
// name (a raw quote where a \" must be).
func inputString(dst []byte, lit string, i, w int) (int, int) {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for {
		if i+8 <= len(lit) {
			x := binary.LittleEndian.Uint64([]byte(lit[i : i+8]))
			binary.LittleEndian.PutUint64(dst[w:w+8], x)
			x ^= ones * '\\'
			m := (x - ones) &^ x & highs // the lowest set bit marks the first backslash
			if m == 0 {
				// A run longer than eight bytes: the rest of it found and moved by
				// IndexByte and copy, whose vector loops a long run pays back.
				i, w = i+8, w+8
				k := strings.IndexByte(lit[i:], '\\')
				if k < 0 {
					return -1, w
				}
				copy(dst[w:], lit[i:i+k])
				i, w = i+k, w+k
			} else {
				k := bits.TrailingZeros64(m) / 8
				i, w = i+k, w+k
			}
		} else if i >= len(lit) {
			return -1, w
		} else if c := lit[i]; c != '\\' {
			dst[w] = c
			i, w = i+1, w+1
			continue
		}
		// lit[i] is a backslash.
		if i+1 >= len(lit) {
			return -1, w
		}
		switch lit[i+1] {
		case '"':
			dst[w] = '"'
			return i + 2, w + 1
		case 'u':
			if i+6 > len(lit) {
				return -1, w
			}
			r := rune(0)
			for _, h := range []byte(lit[i+2 : i+6]) {
				switch {
				case h >= '0' && h <= '9':
					h -= '0'
				case h >= 'a' && h <= 'f':
					h -= 'a' - 10
				case h >= 'A' && h <= 'F':
					h -= 'A' - 10
				default:
					return -1, w
				}
				r = r<<4 | rune(h)
			}
			if r < 0x20 || r == '"' || r == '\\' || r >= 0xd800 && r < 0xe000 {
				return -1, w
			}
			w += utf8.EncodeRune(dst[w:], r)
			i += 6
		default:
			return -1, w
		}
	}
}
