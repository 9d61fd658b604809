package jsonx

import (
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// Kind is the type of a scanned JSON value.
type Kind uint8

const (
	Missing Kind = iota // no value: the key was absent
	Null
	False
	True
	Number
	String
	Object
	Array
)

// Value is one JSON value read by a Scanner. Its zero value is Missing.
type Value struct {
	Kind Kind
	// Raw is the value's JSON text, the substring of the scanned input at offset At.
	Raw string
	At  int
	// Str is the decoded value of a string and "" for every other kind.
	Str string
}

// Set sets every field of v. It writes them one by one: *v = Value{...} builds the value
// on the stack first and copies it in 16-byte moves, which read the narrower stores just
// made and wait for them (a store-forwarding stall, most of the cost of a short string's
// Value). Readers that fill a Value through a pointer use it for the same reason.
func (v *Value) Set(kind Kind, raw string, at int, str string) {
	v.Kind, v.Raw, v.At, v.Str = kind, raw, at, str
}

// Float returns a number's value; a number too large for a float64 is ±Inf.
func (v Value) Float() float64 {
	if f, ok := exactFloat(v.Raw); ok {
		return f
	}
	f, _ := strconv.ParseFloat(v.Raw, 64) // the scanner checked the grammar
	return f
}

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// exactFloat converts the common numbers of a request (max_tokens 1024, temperature 0.7)
// without strconv's general reader: an optional minus, at most 15 digits with at most one
// '.' among them, and no exponent. Such a number is m / 10^k with m and 10^k both exact in a
// float64, so one IEEE division rounds it correctly, as ParseFloat does. ok is false for
// anything else, which the caller hands to ParseFloat.
func exactFloat(s string) (f float64, ok bool) {
	i, neg := 0, false
	if i < len(s) && s[i] == '-' {
		i, neg = 1, true
	}
	var m uint64
	digits, frac, dot := 0, 0, false
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			m = m*10 + uint64(c-'0')
			digits++
			if dot {
				frac++
			}
		case c == '.' && !dot:
			dot = true
		default:
			return 0, false
		}
	}
	if digits == 0 || digits > 15 || dot && frac == 0 {
		return 0, false
	}
	f = float64(m) / pow10[frac]
	if neg {
		f = -f
	}
	return f, true
}

// IsBool reports whether v is true or false.
func (v Value) IsBool() bool { return v.Kind == True || v.Kind == False }

// Scanner reads JSON from a string in one pass, checking the syntax against RFC 8259
// as it goes. It is the gateway's one JSON reader: the request parser and the upstream
// decoders walk their input with it. Like gjson.Valid, it does not check that the bytes
// inside strings are UTF-8 (the request parser checks the whole body first), and escaped
// UTF-16 surrogates need not pair up (they decode to U+FFFD, as with encoding/json).
//
// Strings without escapes are returned as substrings of the input. Strings with escapes
// are decoded into an arena: memory the scanner only ever appends to until the next
// Reset, so every string it returns stays valid and unchanged until then.
//
// A method that fails marks the scanner failed (Failed) and returns false; the position
// is then unspecified. A Scanner is not safe for concurrent use.
type Scanner struct {
	s   string
	i   int
	err bool
	// key is the name of the object member NextField moved to.
	key   string
	arena []byte
	// spans, once IndexRoot has checked the input, holds where each of its objects and
	// arrays starts and ends, in order of start, so that Skip jumps over a container
	// instead of reading it again; nil otherwise. building is set while IndexRoot records.
	// hint is the index in spans of the container Skip found last (see spanEnd).
	spans    []span
	building bool
	hint     int
	// mask is specialMask of the block starting at blk1-1; blk1 is 0 when none is kept.
	mask uint64
	blk1 int
}

// span is one container of an indexed input: s[start:end] is its text, and next is the
// index in spans of the first container after it (past the ones it holds). Offsets are
// 32 bits, so IndexRoot indexes inputs shorter than maxIndexed only.
type span struct{ start, end, next uint32 }

// maxIndexed bounds the length of an input IndexRoot indexes.
const maxIndexed = 1<<32 - 1

// NewScanner returns a scanner at the start of s.
func NewScanner(s string) Scanner { return Scanner{s: s} }

// Reset moves the scanner to the start of s and clears its failure. It keeps the arena's
// memory, so strings decoded before the Reset may change: a stream decoder resets one
// scanner per event, and an Event's strings live for one event.
func (sc *Scanner) Reset(s string) {
	sc.s, sc.i, sc.err, sc.key = s, 0, false, ""
	sc.arena = sc.arena[:0]
	sc.spans, sc.building = nil, false // IndexRoot resets hint
	sc.blk1 = 0
}

// ArenaCap returns the capacity of the memory the scanner decodes strings into, for a
// caller that keeps a scanner and bounds what it keeps.
func (sc *Scanner) ArenaCap() int { return cap(sc.arena) }

// Input returns the text being scanned.
func (sc *Scanner) Input() string { return sc.s }

// Pos returns the cursor's offset in the input.
func (sc *Scanner) Pos() int { return sc.i }

// Seek moves the cursor to offset i, which must be the start of a value the scanner has
// already checked (a Value's At) or a position Pos returned.
func (sc *Scanner) Seek(i int) { sc.i = i }

// Failed reports whether a syntax error was found.
func (sc *Scanner) Failed() bool { return sc.err }

// Key returns the name of the object member NextField moved to.
func (sc *Scanner) Key() string { return sc.key }

func (sc *Scanner) fail() bool {
	sc.err = true
	return false
}

// Peek skips whitespace and returns the next byte, or 0 at the end of the input.
func (sc *Scanner) Peek() byte {
	if i := sc.i; i < len(sc.s) && sc.s[i] > ' ' { // no whitespace: the common case
		return sc.s[i]
	}
	i, c := spaceByte(sc.s, sc.i)
	sc.i = i
	return c
}

// AtEnd reports whether only whitespace is left.
func (sc *Scanner) AtEnd() bool {
	sc.Peek()
	return sc.i == len(sc.s)
}

// NextField moves to the next member of the object at the cursor. With *n == 0 it reads
// the opening '{', later the ',' or the closing '}'; it counts members in *n. It returns
// false after the closing '}' or on a syntax error. Otherwise Key returns the member's name
// and the cursor is at its value, which the caller must read before the next call.
func (sc *Scanner) NextField(n *int) bool {
	// The compact form first, as most encoders write a member after the first: a comma,
	// the name (whose end the block mask kept from the name before tells, see quickEnd)
	// and a colon, without whitespace.
	if s, i := sc.s, sc.i; *n > 0 && i+2 < len(s) && s[i] == ',' && s[i+1] == '"' {
		if end := sc.quickEnd(i + 2); end >= 0 && end+1 < len(s) && s[end+1] == ':' {
			sc.key, sc.i = s[i+2:end], end+2
			*n++
			return true
		}
	}
	// The general case, with the cursor in a local until the name's colon is read.
	s, i := sc.s, sc.i
	var c byte
	i, c = nextByte(s, i)
	if *n == 0 {
		if c != '{' {
			return sc.fail()
		}
		if i, c = nextByte(s, i+1); c == '}' {
			sc.i = i + 1
			return false
		}
	} else {
		if c == '}' {
			sc.i = i + 1
			return false
		}
		if c != ',' {
			return sc.fail()
		}
		i, c = nextByte(s, i+1)
	}
	*n++
	if c != '"' {
		return sc.fail()
	}
	var k string
	if e := sc.quickEnd(i + 1); e >= 0 {
		k, i = s[i+1:e], e+1
	} else {
		sc.i = i
		var ok bool
		if k, ok = sc.Str(); !ok {
			return false
		}
		i = sc.i
	}
	if i, c = nextByte(s, i); c != ':' {
		return sc.fail()
	}
	sc.i, sc.key = i+1, k
	return true
}

// MemberIsShort is MemberIs for a want of 4 to 7 bytes (`{"id":`, or the value
// `"tool"`), compared as two constant half-words.
func (sc *Scanner) MemberIsShort(want string) bool {
	i := sc.i
	if len(sc.s)-i < len(want) ||
		halfAt(sc.s, i) != halfAt(want, 0) || halfAt(sc.s, i+len(want)-4) != halfAt(want, len(want)-4) {
		return false
	}
	sc.i = i + len(want)
	return true
}

// EndIs is NextField's fastest case for an object's end (c '}') or NextElem's for an
// array's (c ']'), for a caller that has read a member or an element: when the byte at the
// cursor is c, written right after the value before it, it moves past it and returns
// true, as the NextField or NextElem that would be asked next returns false there.
// Otherwise it moves nothing and returns false.
func (sc *Scanner) EndIs(c byte) bool {
	if i := sc.i; i < len(sc.s) && sc.s[i] == c {
		sc.i = i + 1
		return true
	}
	return false
}

// MemberIs is NextField's fastest case, for a caller that knows which member usually
// comes next: when the input at the cursor is want, a member's name and its colon written
// compactly after the comma that ends the member before (`,"content":`) or, for an
// object's first member, after its opening brace (`{"role":`), it moves past them and
// returns true. The caller knows the name, which Key does not return, and counts the
// member itself: the brace form is NextField's first call (*n = 1 after it); the comma
// form leaves *n above 0. Otherwise it moves nothing and returns false, and the caller
// asks NextField.
//
// want must be one of the two forms, 8 to 16 bytes long, with a name that needs no
// escapes, and the caller must ask for the brace form only before an object's first
// member and for the comma form only after one: nothing here checks either (a brace
// form after a member would pass a brace there). Given as a constant, want is compared
// as two constant words.
//
// A third form is a string value the caller expects, quotes included, with no backslash
// (`"assistant"`), asked for with the cursor at a value: when it matches, the string at
// the cursor is exactly want's (its last quote ends it), whatever follows, and the
// caller reads what follows as after any value; otherwise it reads the string (Str).
func (sc *Scanner) MemberIs(want string) bool {
	i := sc.i
	if len(sc.s)-i < len(want) ||
		wordAt(sc.s, i) != wordAt(want, 0) || wordAt(sc.s, i+len(want)-8) != wordAt(want, len(want)-8) {
		return false
	}
	sc.i = i + len(want)
	return true
}

// NextElem is NextField for arrays: it returns true with the cursor at element *n-1.
func (sc *Scanner) NextElem(n *int) bool {
	c := sc.Peek()
	if *n == 0 {
		if c != '[' {
			return sc.fail()
		}
		sc.i++
		if sc.Peek() == ']' {
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

// Value reads the value at the cursor into v; objects and arrays are checked and
// skipped, their text left in v.Raw. A string without whitespace before it that ends
// at the kept mask's next stop (quickEnd: most of a body's short strings, a role, an id)
// is read here; value reads the rest.
func (sc *Scanner) Value(v *Value) bool {
	if at := sc.i; at < len(sc.s) && sc.s[at] == '"' {
		if end := sc.quickEnd(at + 1); end >= 0 {
			sc.i = end + 1
			v.Set(String, sc.s[at:end+1], at, sc.s[at+1:end])
			return true
		}
	}
	return sc.value(v)
}

// value is Value's general case.
func (sc *Scanner) value(v *Value) bool {
	c := sc.Peek()
	at := sc.i
	var kind Kind
	var ok bool
	switch c {
	case '"':
		str, ok := sc.Str()
		if !ok {
			return false
		}
		v.Set(String, sc.s[at:sc.i], at, str)
		return true
	case '{', '[':
		kind, ok = Object, sc.Skip()
		if c == '[' {
			kind = Array
		}
	case 't':
		kind, ok = True, sc.Literal("true")
	case 'f':
		kind, ok = False, sc.Literal("false")
	case 'n':
		kind, ok = Null, sc.Literal("null")
	default:
		kind, ok = Number, sc.number()
	}
	if !ok {
		return false
	}
	v.Set(kind, sc.s[at:sc.i], at, "")
	return true
}

// ValueRaw is Value, except that a string's escapes are left as written: its Str is the
// literal's contents (Raw without the quotes), a substring of the input that needs
// DecodeRaw when it holds a backslash. A parser uses it for strings it only passes on.
func (sc *Scanner) ValueRaw(v *Value) bool {
	if sc.Peek() != '"' {
		return sc.Value(v)
	}
	at := sc.i
	if !sc.SkipString() {
		return false
	}
	v.Set(String, sc.s[at:sc.i], at, sc.s[at+1:sc.i-1])
	return true
}

// DecodeRaw returns the value of raw, the contents of a string literal a Scanner has
// checked (a Str that ValueRaw left as written), decoded into the arena like Str's.
// bound is an upper bound on the bytes this scanner will decode from here on, raw's
// included, so that decoding several strings takes one arena.
func (sc *Scanner) DecodeRaw(raw string, bound int) string {
	if strings.IndexByte(raw, '\\') < 0 {
		return raw
	}
	if cap(sc.arena)-len(sc.arena) < len(raw) {
		sc.arena = make([]byte, 0, max(bound, len(raw)))
	}
	return sc.unescape(raw, len(raw))
}

// AppendDecoded appends to dst the value of lit, the contents of a string literal a
// Scanner has checked.
func AppendDecoded(dst []byte, lit string) []byte {
	if strings.IndexByte(lit, '\\') < 0 {
		return append(dst, lit...)
	}
	dst = slices.Grow(dst, len(lit)) // the value is never longer
	n := decodeEscaped(dst[len(dst):len(dst)+len(lit)], lit)
	return dst[:len(dst)+n]
}

// First reads the value at the cursor into v unless v already holds one, in which case
// it skips it: gjson's Get semantics, where the first of duplicate keys wins.
func (sc *Scanner) First(v *Value) bool {
	if v.Kind != Missing {
		return sc.Skip()
	}
	return sc.Value(v)
}

// Skip reads past the value at the cursor, checking its syntax. It does not recurse, so
// deep nesting costs heap for the stack of open brackets, not goroutine stack.
func (sc *Scanner) Skip() bool {
	if sc.spans != nil {
		if sc.building {
			return sc.skipIndexing()
		}
		if c := sc.Peek(); c == '{' || c == '[' {
			if end, ok := sc.spanEnd(sc.i); ok {
				sc.i = end
				return true
			}
		}
	}
	return sc.skip()
}

// skip is Skip's walk: one loop over the value's tokens with the cursor in a local
// variable, each token's syntax checked in line (a string's end from the kept block mask
// when it is there, see quickEnd), so that a token costs no call but stringEnd's.
func (sc *Scanner) skip() bool {
	s, i := sc.s, sc.i
	var buf [32]byte
	open := buf[:0] // the closing bracket of each open container
	for {
		// A value is expected.
		var c byte
		switch i, c = nextByte(s, i); c {
		case '"':
			e := sc.quickEnd(i + 1)
			if e < 0 {
				if e, _ = sc.stringEnd(i + 1); e < 0 {
					return sc.fail()
				}
			}
			i = e + 1
		case '{', '[':
			end := c + 2 // '}' follows '{' by two, ']' '[' likewise
			var d byte
			if i, d = nextByte(s, i+1); d == end {
				i++
				break
			}
			if c == '{' {
				if j := sc.nameEnd(i); j >= 0 {
					i = j
				} else if i = sc.memberName(i); i < 0 {
					return false
				}
			}
			open = append(open, end)
			continue
		case 't':
			if !strings.HasPrefix(s[i:], "true") {
				return sc.fail()
			}
			i += len("true")
		case 'f':
			if !strings.HasPrefix(s[i:], "false") {
				return sc.fail()
			}
			i += len("false")
		case 'n':
			if !strings.HasPrefix(s[i:], "null") {
				return sc.fail()
			}
			i += len("null")
		default:
			if i = NumberEnd(s, i); i < 0 {
				return sc.fail()
			}
		}
		// A value ended: close containers until one continues with a comma.
		for {
			if len(open) == 0 {
				sc.i = i
				return true
			}
			var c byte
			i, c = nextByte(s, i)
			end := open[len(open)-1]
			if c == ',' {
				if end == '}' {
					if j := sc.nameEnd(i + 1); j >= 0 {
						i = j
					} else if i = sc.memberName(i + 1); i < 0 {
						return false
					}
				} else {
					i++
				}
				break
			}
			if c != end {
				return sc.fail()
			}
			i++
			open = open[:len(open)-1]
		}
	}
}

// nameEnd is memberName's common case, small enough to be inlined: the name at i, with
// no whitespace before it, ends at the kept mask's next stop (quickEnd) and its colon
// follows at once. It returns the offset after the colon, or -1 when memberName must
// read the name.
func (sc *Scanner) nameEnd(i int) int {
	if i < len(sc.s) && sc.s[i] == '"' && (i+1)&^(blockSize-1)+1 == sc.blk1 {
		if r := sc.mask >> ((i + 1) & (blockSize - 1)); r != 0 {
			if e := i + 1 + bits.TrailingZeros64(r); e+2 <= len(sc.s) && sc.s[e:e+2] == `":` {
				return e + 2
			}
		}
	}
	return -1
}

// memberName reads, from i on, the name of an object member and the colon after it, and
// returns the offset after the colon; on a syntax error it marks the scanner failed and
// returns -1.
func (sc *Scanner) memberName(i int) int {
	s := sc.s
	var c byte
	if i, c = nextByte(s, i); c != '"' {
		sc.err = true
		return -1
	}
	e := sc.quickEnd(i + 1)
	if e < 0 {
		if e, _ = sc.stringEnd(i + 1); e < 0 {
			sc.err = true
			return -1
		}
	}
	if i, c = nextByte(s, e+1); c != ':' {
		sc.err = true
		return -1
	}
	return i + 1
}

// nextByte returns the offset of the first byte at or after i that is not JSON
// whitespace and that byte, or len(s) and 0 at the end of s. Its common case, no
// whitespace at i, is small enough to be inlined.
func nextByte(s string, i int) (int, byte) {
	if i < len(s) && s[i] > ' ' {
		return i, s[i]
	}
	return spaceByte(s, i)
}

// spaceByte is nextByte past whitespace.
func spaceByte(s string, i int) (int, byte) {
	for ; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t', '\n', '\r':
		default:
			return i, c
		}
	}
	return i, 0
}

// skipIndexing is Skip while IndexRoot records the spans of the containers it passes.
func (sc *Scanner) skipIndexing() bool {
	var buf [32]byte
	open := buf[:0] // the closing bracket of each open container
	var nbuf [32]int
	nested := nbuf[:0] // the span index of each open container
	for {
		// A value is expected.
		switch c := sc.Peek(); c {
		case '{', '[':
			nested = append(nested, len(sc.spans))
			sc.spans = append(sc.spans, span{start: uint32(sc.i)})
			sc.i++
			end := byte(']')
			if c == '{' {
				end = '}'
			}
			if sc.Peek() == end {
				sc.i++
				sc.closeSpan(nested[len(nested)-1])
				nested = nested[:len(nested)-1]
				break
			}
			if c == '{' && !sc.skipKey() {
				return false
			}
			open = append(open, end)
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
			c, end := sc.Peek(), open[len(open)-1]
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
			sc.closeSpan(nested[len(nested)-1])
			nested = nested[:len(nested)-1]
		}
	}
}

// closeSpan records that the container at index k of spans ends at the cursor.
func (sc *Scanner) closeSpan(k int) {
	sc.spans[k].end, sc.spans[k].next = uint32(sc.i), uint32(len(sc.spans))
}

// spanEnd returns the end of the indexed container that starts at offset i. A parser
// walks an input forward, so the container is most often the one found last (read again),
// the one after it in spans (its first member or element, or its next sibling when it
// holds none) or its next sibling: those three are tried first, a binary search finds
// any other.
func (sc *Scanner) spanEnd(i int) (int, bool) {
	spans, h := sc.spans, sc.hint
	if h < len(spans) {
		at := uint32(i)
		switch sp := spans[h]; {
		case sp.start == at:
			return int(sp.end), true
		case h+1 < len(spans) && spans[h+1].start == at:
			sc.hint = h + 1
			return int(spans[h+1].end), true
		case int(sp.next) < len(spans) && spans[sp.next].start == at:
			sc.hint = int(sp.next)
			return int(spans[sp.next].end), true
		}
	}
	lo, hi := 0, len(spans)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if int(spans[m].start) < i {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(spans) && int(spans[lo].start) == i {
		sc.hint = lo
		return int(spans[lo].end), true
	}
	return 0, false
}

// skipKey reads an object member's name and the colon after it.
func (sc *Scanner) skipKey() bool {
	i := sc.memberName(sc.i)
	if i < 0 {
		return false
	}
	sc.i = i
	return true
}

// scalar reads past a string, number or literal.
func (sc *Scanner) scalar() bool {
	switch sc.Peek() {
	case '"':
		return sc.SkipString()
	case 't':
		return sc.Literal("true")
	case 'f':
		return sc.Literal("false")
	case 'n':
		return sc.Literal("null")
	}
	return sc.number()
}

// Literal reads past word (true, false or null) at the cursor.
func (sc *Scanner) Literal(word string) bool {
	if !strings.HasPrefix(sc.s[sc.i:], word) {
		return sc.fail()
	}
	sc.i += len(word)
	return true
}

// number reads past a number (NumberEnd).
func (sc *Scanner) number() bool {
	i := NumberEnd(sc.s, sc.i)
	if i < 0 {
		return sc.fail()
	}
	sc.i = i
	return true
}

// NumberEnd returns the end of the JSON number at s[i:] (RFC 8259), -1 if none starts
// there: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func NumberEnd(s string, i int) int {
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = skipDigits(s, i+1)
	default:
		return -1
	}
	if i < len(s) && s[i] == '.' {
		j := skipDigits(s, i+1)
		if j == i+1 {
			return -1
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
			return -1
		}
		i = j
	}
	return i
}

// IndexEnd returns the end of the integer at s[i:] when it is one a provider writes for an
// index or a counter: digits in JSON's form (no leading zero), at most nine of them, so
// that it fits an int anywhere. ok is false when there is no such integer at i; the
// caller still checks what follows (a '.' or an 'e' would make it another number). The
// fast paths that match a provider's event layout use it between their fixed bytes.
func IndexEnd(s string, i int) (end int, ok bool) {
	j := i
	for j < len(s) && j-i < 9 && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j == i || s[i] == '0' && j > i+1 {
		return i, false
	}
	return j, true
}

func skipDigits(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// Str reads the string at the cursor, which is at its opening quote, and returns its
// decoded value.
func (sc *Scanner) Str() (string, bool) {
	start := sc.i + 1
	if end := sc.quickEnd(start); end >= 0 {
		sc.i = end + 1
		return sc.s[start:end], true
	}
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

// SkipString reads past the string at the cursor, which is at its opening quote.
func (sc *Scanner) SkipString() bool {
	if end := sc.quickEnd(sc.i + 1); end >= 0 {
		sc.i = end + 1
		return true
	}
	end, _ := sc.stringEnd(sc.i + 1)
	if end < 0 {
		return sc.fail()
	}
	sc.i = end + 1
	return true
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
// sized once for a whole request.
func (sc *Scanner) unescape(raw string, bound int) string {
	if cap(sc.arena)-len(sc.arena) < len(raw) {
		size := min(max(2*cap(sc.arena), 512), bound)
		sc.arena = make([]byte, 0, max(size, len(raw)))
	}
	// A decoded string is never longer than its escaped form, so it is written in place
	// into the arena's free space, without append's checks.
	start := len(sc.arena)
	j := decodeEscaped(sc.arena[start:start+len(raw)], raw)
	sc.arena = sc.arena[:start+j]
	return View(sc.arena[start:])
}

// Valid reports whether s is one JSON value with optional whitespace around it.
func Valid(s string) bool {
	sc := Scanner{s: s}
	return sc.Skip() && sc.AtEnd()
}

// Unquote returns the value of the JSON string literal raw, which a Scanner has checked
// (a Value's Raw),
// "" if raw is not one. A string without escapes is returned as a substring of raw;
// one with escapes is decoded into the scanner's arena, like Str.
func (sc *Scanner) Unquote(raw string) string {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return ""
	}
	s := raw[1 : len(raw)-1]
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	return sc.unescape(s, len(s))
}

// Root reads the whole input as one JSON value, checking its syntax, and returns it;
// ok is false when the input is not exactly one JSON value (Valid). Get, Path and Each
// then walk into it.
func (sc *Scanner) Root() (v Value, ok bool) {
	sc.i, sc.err = 0, false
	if !sc.Value(&v) || !sc.AtEnd() {
		return Value{}, false
	}
	return v, true
}

// IndexRoot is Root for a parser that walks the input more than once (Get, Each and
// Members over the same objects): in its one checking pass it also records where every
// object and array ends, so that later reads skip a container without reading it
// again (in O(1) for a forward walk, see spanEnd, else O(log n)). The index costs one allocation and lasts until Reset.
func (sc *Scanner) IndexRoot() (v Value, ok bool) {
	sc.i, sc.err, sc.hint = 0, false, 0
	if uint64(len(sc.s)) > maxIndexed {
		return sc.Root() // an input this long is read without an index
	}
	// Every container starts with a bracket, so the brackets bound their number.
	sc.spans = make([]span, 0, strings.Count(sc.s, "{")+strings.Count(sc.s, "["))
	sc.building = true
	v, ok = sc.Root()
	sc.building = false
	if !ok {
		sc.spans = nil
	}
	return v, ok
}

// IndexValue is IndexRoot for one value of a scanner that indexes nothing, read in the
// same pass that checks it: it reads past the value at the cursor, as Skip does, and
// returns a scanner over the value's text alone (a substring of the input), indexed as
// IndexRoot indexes, with the value as that scanner's root. A parser's forward walk uses
// it for a member it will read more than once (Get, Members over a list of tools)
// without walking it twice. ok is false when the value is not JSON (the scanner is then
// failed, as Skip leaves it).
func (sc *Scanner) IndexValue() (sub Scanner, v Value, ok bool) {
	c := sc.Peek()
	if c != '{' && c != '[' || sc.spans != nil || uint64(len(sc.s)-sc.i) > maxIndexed {
		at := sc.i
		if !sc.Value(&v) {
			return Scanner{}, Value{}, false
		}
		sub = Scanner{s: sc.s[at:sc.i]}
		v.At, v.Raw = 0, sub.s // a scalar, or a container read without an index
		return sub, v, true
	}
	sub = Scanner{s: sc.s[sc.i:], spans: make([]span, 0, 16), building: true}
	if !sub.Value(&v) {
		return Scanner{}, Value{}, sc.fail()
	}
	sub.s, sub.building, sub.blk1 = sub.s[:sub.i], false, 0
	sc.i += sub.i
	sub.i = 0
	return sub, v, true
}

// Rebase makes the scanner read s, a copy of its input (the same bytes), keeping its
// index, from the start: for a parser that checked and indexed a view of a buffer it does
// not own (IndexValue) and reads on from its own copy. It reports false, and changes
// nothing, when s is not the input's text.
func (sc *Scanner) Rebase(s string) bool {
	if s != sc.s {
		return false
	}
	sc.s, sc.i, sc.err, sc.key, sc.hint, sc.blk1 = s, 0, false, "", 0, 0
	return true
}

// RootMembers is Root for a stream event: in the same single pass that checks the
// input it reads the members named in keys, the first of each name, into vals at the
// key's index (the others stay Missing); a scalar or an array has no members. ok is false
// when the input is not exactly one JSON value.
func (sc *Scanner) RootMembers(keys []string, vals []Value) (root Value, ok bool) {
	sc.i, sc.err = 0, false
	c := sc.Peek()
	if c != '{' {
		return sc.Root()
	}
	at := sc.i
	if !sc.members(keys, vals) || !sc.AtEnd() {
		return Value{}, false
	}
	return Value{Kind: Object, Raw: sc.s[at:sc.i], At: at}, true
}

func (sc *Scanner) members(keys []string, vals []Value) bool {
	return sc.membersOf(keys, vals, false)
}

// membersOf is members with the strings read by ValueRaw when raw is set.
func (sc *Scanner) membersOf(keys []string, vals []Value, raw bool) bool {
	for n := 0; sc.NextField(&n); {
		j := 0
		for j < len(keys) && keys[j] != sc.key {
			j++
		}
		var ok bool
		if j < len(keys) {
			switch v := &vals[j]; {
			case v.Kind != Missing:
				ok = sc.Skip() // the first of a name wins (First)
			case raw:
				ok = sc.ValueRaw(v)
			default:
				ok = sc.Value(v)
			}
		} else {
			ok = sc.Skip()
		}
		if !ok {
			return false
		}
	}
	return !sc.err
}

// Members reads the members of obj named in keys, the first of each name, into vals at
// the key's index, in one pass (the others stay Missing); a value that is not an object
// has no members. It is Get for several keys. obj must come from this scanner; Members
// moves the cursor.
func (sc *Scanner) Members(obj Value, keys []string, vals []Value) {
	if obj.Kind != Object {
		return
	}
	sc.i = obj.At
	sc.members(keys, vals)
}

// MembersRaw is Members with each string value read as ValueRaw reads it: its Str is the
// literal's contents with the escapes as written (DecodeRaw decodes it). A parser uses it
// for objects whose strings it mostly passes on.
func (sc *Scanner) MembersRaw(obj Value, keys []string, vals []Value) {
	if obj.Kind != Object {
		return
	}
	sc.i = obj.At
	sc.membersOf(keys, vals, true)
}

// Get returns the value of member key of obj, the first such member when the key repeats
// (gjson's rule), or a Missing value; a value that is not an object has no members. A
// string's Str is decoded into the arena. obj must come from this scanner (Root, Get,
// Each); Get moves the cursor.
func (sc *Scanner) Get(obj Value, key string) Value {
	var v Value
	if obj.Kind != Object {
		return v
	}
	sc.i = obj.At
	for n := 0; sc.NextField(&n); {
		if sc.key == key {
			sc.Value(&v)
			return v
		}
		if !sc.Skip() {
			break
		}
	}
	return v
}

// Path is Get through nested objects: Path(v, "delta", "type") is the member type of the
// member delta of v.
func (sc *Scanner) Path(v Value, keys ...string) Value {
	for _, k := range keys {
		if v = sc.Get(v, k); v.Kind == Missing {
			break
		}
	}
	return v
}

// Each calls fn with each member of the object v, or each element (key "") of the array
// v, until fn returns false. fn may walk into the value it gets (Get, Each); Each keeps
// its own place. A scalar has no members. v must come from this scanner.
func (sc *Scanner) Each(v Value, fn func(key string, v Value) bool) {
	var el Value
	switch v.Kind {
	case Object:
		sc.i = v.At
		for n := 0; sc.NextField(&n); {
			k := sc.key
			if !sc.Value(&el) {
				return
			}
			resume := sc.i
			if !fn(k, el) {
				return
			}
			sc.i = resume
		}
	case Array:
		sc.i = v.At
		for n := 0; sc.NextElem(&n); {
			if !sc.Value(&el) {
				return
			}
			resume := sc.i
			if !fn("", el) {
				return
			}
			sc.i = resume
		}
	}
}

// EachMembers calls fn with each element of the array v after reading the members of it
// named in keys, the first of each name, into vals (Members for every element), in the
// one pass that reads past the element: its bytes are read once, not once by Each and
// again by Members. An element that is not an object has no members (vals all Missing).
// It stops when fn returns false. fn may walk into the values it gets; EachMembers keeps
// its own place. A value that is not an array has no elements. v must come from this
// scanner.
func (sc *Scanner) EachMembers(v Value, keys []string, vals []Value, fn func(el Value) bool) {
	if v.Kind != Array {
		return
	}
	sc.i = v.At
	sc.ArrayMembers(keys, vals, fn)
}

// ArrayMembers is EachMembers for the array at the cursor, which it reads and checks as
// Value would: it returns the array (its text in Raw) and true, or false on a syntax
// error or when fn stopped it. A caller that reads an input once uses it to look into an
// array's elements as it passes them.
func (sc *Scanner) ArrayMembers(keys []string, vals []Value, fn func(el Value) bool) (Value, bool) {
	sc.Peek()
	at := sc.i
	for n := 0; sc.NextElem(&n); {
		clear(vals)
		var el Value
		if sc.Peek() == '{' {
			elAt := sc.i
			if !sc.members(keys, vals) {
				return Value{}, false
			}
			el = Value{Kind: Object, Raw: sc.s[elAt:sc.i], At: elAt}
		} else if !sc.Value(&el) {
			return Value{}, false
		}
		resume := sc.i
		if !fn(el) {
			return Value{}, false
		}
		sc.i = resume
	}
	if sc.err {
		return Value{}, false
	}
	return Value{Kind: Array, Raw: sc.s[at:sc.i], At: at}, true
}

// Int returns a number's value truncated to an int64, 0 for any other kind or a number
// out of range (gjson's Int without the float fallback for huge values).
func (v Value) Int() int64 {
	if v.Kind != Number {
		return 0
	}
	if n, ok := smallInt(v.Raw); ok {
		return n
	}
	if n, err := strconv.ParseInt(v.Raw, 10, 64); err == nil {
		return n
	}
	return int64(v.Float())
}

// smallInt converts the integers answers carry (token counts, indices, timestamps)
// without strconv's general reader: an optional minus and 1 to 18 digits, which always
// fit an int64. ok is false for anything else (a fraction, an exponent, 19 digits or
// more), which the caller hands to ParseInt. Leading zeros, which the scanner refuses in
// JSON, read as ParseInt reads them.
func smallInt(s string) (n int64, ok bool) {
	d := s
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 18 {
		return 0, false
	}
	for i := 0; i < len(d); i++ {
		c := d[i] - '0'
		if c > 9 {
			return 0, false
		}
		n = n*10 + int64(c)
	}
	if len(d) < len(s) {
		n = -n
	}
	return n, true
}

// Exists reports whether the value was present.
func (v Value) Exists() bool { return v.Kind != Missing }
