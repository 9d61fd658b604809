package translate

import (
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonKind is the type of a scanned JSON value.
type jsonKind uint8

const (
	jsonMissing jsonKind = iota // no value: the key was absent
	jsonNull
	jsonFalse
	jsonTrue
	jsonNumber
	jsonString
	jsonObject
	jsonArray
)

// jsonValue is one JSON value read by a jsonScanner. Its zero value is jsonMissing.
type jsonValue struct {
	kind jsonKind
	// raw is the value's JSON text, the substring of the scanned input at offset at.
	raw string
	at  int
	// str is the decoded value of a string and "" for every other kind.
	str string
}

// float returns a number's value; a number too large for a float64 is ±Inf.
func (v *jsonValue) float() float64 {
	f, _ := strconv.ParseFloat(v.raw, 64) // the scanner checked the grammar
	return f
}

func (v *jsonValue) isBool() bool { return v.kind == jsonTrue || v.kind == jsonFalse }

// jsonScanner reads JSON from a string in one pass, checking the syntax against RFC 8259
// as it goes. Like gjson.Valid, which the request parser used before, it does not check
// that the bytes inside strings are UTF-8, and escaped UTF-16 surrogates need not pair up
// (they decode to U+FFFD).
//
// Strings without escapes are returned as substrings of the input. Strings with escapes
// are decoded into an arena: chunks of memory the scanner only ever appends to, so every
// string it returns stays valid and unchanged for as long as it is referenced.
//
// A method that fails sets err and returns false; the position is then unspecified. The
// zero position is the start of the input. A jsonScanner is not safe for concurrent use.
type jsonScanner struct {
	s   string
	i   int
	err bool
	// key is the name of the object member nextField moved to.
	key   string
	arena []byte
}

func (sc *jsonScanner) fail() bool {
	sc.err = true
	return false
}

// peek skips whitespace and returns the next byte, or 0 at the end of the input.
func (sc *jsonScanner) peek() byte {
	for sc.i < len(sc.s) {
		switch c := sc.s[sc.i]; c {
		case ' ', '\t', '\n', '\r':
			sc.i++
		default:
			return c
		}
	}
	return 0
}

// atEnd reports whether only whitespace is left.
func (sc *jsonScanner) atEnd() bool {
	sc.peek()
	return sc.i == len(sc.s)
}

// nextField moves to the next member of the object at the cursor. With *n == 0 it reads
// the opening '{', later the ',' or the closing '}'; it counts members in *n. It returns
// false after the closing '}' or on a syntax error. Otherwise key holds the member's name
// and the cursor is at its value, which the caller must read before the next call.
func (sc *jsonScanner) nextField(n *int) bool {
	c := sc.peek()
	if *n == 0 {
		if c != '{' {
			return sc.fail()
		}
		sc.i++
		if c = sc.peek(); c == '}' {
			sc.i++
			return false
		}
	} else {
		if c == '}' {
			sc.i++
			return false
		}
		if c != ',' {
			return sc.fail()
		}
		sc.i++
		c = sc.peek()
	}
	*n++
	if c != '"' {
		return sc.fail()
	}
	k, ok := sc.str()
	if !ok {
		return false
	}
	if sc.peek() != ':' {
		return sc.fail()
	}
	sc.i++
	sc.key = k
	return true
}

// nextElem is nextField for arrays: it returns true with the cursor at element *n-1.
func (sc *jsonScanner) nextElem(n *int) bool {
	c := sc.peek()
	if *n == 0 {
		if c != '[' {
			return sc.fail()
		}
		sc.i++
		if sc.peek() == ']' {
			sc.i++
			return false
		}
	} else {
		if c == ']' {
			sc.i++
			return false
		}
		if c != ',' {
			return sc.fail()
		}
		sc.i++
	}
	*n++
	return true
}

// value reads the value at the cursor into v; objects and arrays are checked and
// skipped, their text left in v.raw.
func (sc *jsonScanner) value(v *jsonValue) bool {
	c := sc.peek()
	at := sc.i
	var kind jsonKind
	var ok bool
	switch c {
	case '"':
		str, ok := sc.str()
		if !ok {
			return false
		}
		*v = jsonValue{kind: jsonString, raw: sc.s[at:sc.i], at: at, str: str}
		return true
	case '{', '[':
		kind, ok = jsonObject, sc.skip()
		if c == '[' {
			kind = jsonArray
		}
	case 't':
		kind, ok = jsonTrue, sc.literal("true")
	case 'f':
		kind, ok = jsonFalse, sc.literal("false")
	case 'n':
		kind, ok = jsonNull, sc.literal("null")
	default:
		kind, ok = jsonNumber, sc.number()
	}
	if !ok {
		return false
	}
	*v = jsonValue{kind: kind, raw: sc.s[at:sc.i], at: at}
	return true
}

// first reads the value at the cursor into v unless v already holds one, in which case
// it skips it: gjson's Get semantics, where the first of duplicate keys wins.
func (sc *jsonScanner) first(v *jsonValue) bool {
	if v.kind != jsonMissing {
		return sc.skip()
	}
	return sc.value(v)
}

// skip reads past the value at the cursor, checking its syntax. It does not recurse, so
// deep nesting costs heap for the stack of open brackets, not goroutine stack.
func (sc *jsonScanner) skip() bool {
	var buf [32]byte
	open := buf[:0] // the closing bracket of each open container
	for {
		// A value is expected.
		switch sc.peek() {
		case '{':
			sc.i++
			if sc.peek() == '}' {
				sc.i++
				break
			}
			if !sc.skipKey() {
				return false
			}
			open = append(open, '}')
			continue
		case '[':
			sc.i++
			if sc.peek() == ']' {
				sc.i++
				break
			}
			open = append(open, ']')
			continue
		default:
			if !sc.scalar() {
				return false
			}
		}
		// A value ended: close containers until one continues with a comma.
		for {
			if len(open) == 0 {
				return true
			}
			c, end := sc.peek(), open[len(open)-1]
			if c == ',' {
				sc.i++
				if end == '}' && !sc.skipKey() {
					return false
				}
				break
			}
			if c != end {
				return sc.fail()
			}
			sc.i++
			open = open[:len(open)-1]
		}
	}
}

// skipKey reads an object member's name and the colon after it.
func (sc *jsonScanner) skipKey() bool {
	if sc.peek() != '"' || !sc.skipString() {
		return sc.fail()
	}
	if sc.peek() != ':' {
		return sc.fail()
	}
	sc.i++
	return true
}

// scalar reads past a string, number or literal.
func (sc *jsonScanner) scalar() bool {
	switch sc.peek() {
	case '"':
		return sc.skipString()
	case 't':
		return sc.literal("true")
	case 'f':
		return sc.literal("false")
	case 'n':
		return sc.literal("null")
	}
	return sc.number()
}

func (sc *jsonScanner) literal(word string) bool {
	if !strings.HasPrefix(sc.s[sc.i:], word) {
		return sc.fail()
	}
	sc.i += len(word)
	return true
}

// number reads past a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (sc *jsonScanner) number() bool {
	s, i := sc.s, sc.i
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = skipDigits(s, i+1)
	default:
		return sc.fail()
	}
	if i < len(s) && s[i] == '.' {
		j := skipDigits(s, i+1)
		if j == i+1 {
			return sc.fail()
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := skipDigits(s, i)
		if j == i {
			return sc.fail()
		}
		i = j
	}
	sc.i = i
	return true
}

func skipDigits(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// str reads the string at the cursor, which is at its opening quote, and returns its
// decoded value.
func (sc *jsonScanner) str() (string, bool) {
	start := sc.i + 1
	end, esc := sc.stringEnd(start)
	if end < 0 {
		return "", sc.fail()
	}
	sc.i = end + 1
	if !esc {
		return sc.s[start:end], true
	}
	return sc.unescape(sc.s[start:end], len(sc.s)-start), true
}

// skipString reads past the string at the cursor, which is at its opening quote.
func (sc *jsonScanner) skipString() bool {
	end, _ := sc.stringEnd(sc.i + 1)
	if end < 0 {
		return sc.fail()
	}
	sc.i = end + 1
	return true
}

// stringEnd returns the offset of the closing quote of the string whose contents start
// at i, or -1 if the string is malformed, and whether it contains escapes.
func (sc *jsonScanner) stringEnd(i int) (end int, esc bool) {
	s := sc.s
	for {
		i = plainPrefix(s, i)
		if i >= len(s) {
			return -1, esc
		}
		switch c := s[i]; {
		case c == '"':
			return i, esc
		case c == '\\':
			esc = true
			if i+1 >= len(s) {
				return -1, esc
			}
			switch s[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(s) || !isHex(s[i+2]) || !isHex(s[i+3]) || !isHex(s[i+4]) || !isHex(s[i+5]) {
					return -1, esc
				}
				i += 6
			default:
				return -1, esc
			}
		default: // a control character
			return -1, esc
		}
	}
}

// plainPrefix returns the offset of the first byte at or after i that is a quote, a
// backslash or a control character, or len(s). It looks at eight bytes at a time.
func plainPrefix(s string, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		q := w ^ (ones * '"')
		b := w ^ (ones * '\\')
		// A byte's high bit is set in the first term if that byte is '"', in the second
		// if '\\', in the third if below 0x20; &^ w drops bytes at or above 0x80. A borrow
		// can set bits above a match but never below one, so the lowest bit is exact.
		if m := ((q - ones) | (b - ones) | (w - ones*0x20)) &^ w & highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return i
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hex4(s string) rune {
	var r rune
	for i := range 4 {
		c := s[i]
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// unescape decodes raw, the checked contents of a string with escapes, into the arena.
// bound is an upper bound on the bytes the rest of the scan will decode, so the arena is
// sized once for a whole request. It decodes exactly as gjson does: an escaped surrogate
// followed by another \u escape takes that escape as its pair, and an unpaired one
// becomes U+FFFD.
func (sc *jsonScanner) unescape(raw string, bound int) string {
	if cap(sc.arena)-len(sc.arena) < len(raw) {
		size := min(max(2*cap(sc.arena), 512), bound)
		sc.arena = make([]byte, 0, max(size, len(raw)))
	}
	buf := sc.arena
	start := len(buf)
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			buf = append(buf, c)
			continue
		}
		i++
		switch c = raw[i]; c {
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r := hex4(raw[i+1:])
			i += 4
			if utf16.IsSurrogate(r) && len(raw)-i > 6 && raw[i+1] == '\\' && raw[i+2] == 'u' {
				r = utf16.DecodeRune(r, hex4(raw[i+3:]))
				i += 6
			}
			buf = utf8.AppendRune(buf, r)
		default: // '"', '\\' or '/'
			buf = append(buf, c)
		}
	}
	sc.arena = buf
	return unsafeString(buf[start:])
}

// validJSON reports whether s is one JSON value with optional whitespace around it.
func validJSON(s string) bool {
	sc := jsonScanner{s: s}
	return sc.skip() && sc.atEnd()
}
