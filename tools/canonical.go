package tools

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

// maxCanonicalDepth matches encoding/json's nesting limit, so the same documents are valid.
const maxCanonicalDepth = 10000

var errCanonicalDepth = errors.New("exceeded max depth")

// appendCanonicalJSON appends the canonical form of the JSON document src to dst and returns
// the extended buffer. The canonical form has no insignificant whitespace, object members
// sorted by the bytes of their canonically encoded key (for keys without '"', '\\' or
// control characters that is the byte order of the UTF-8 key) and, for duplicate keys, only the last
// member (encoding/json's rule). Strings are re-encoded in one fixed escaping (invalid UTF-8
// and lone surrogates become U+FFFD, as encoding/json decodes them); numbers are kept exactly
// as written, so 1 and 1.0 stay distinct. Two documents have the same canonical form if and
// only if encoding/json (with UseNumber) decodes them to equal values. An invalid document is
// an error and dst is returned unchanged.
func appendCanonicalJSON(dst, src []byte) ([]byte, error) {
	c := canonicalizer{src: src}
	start := len(dst)
	out, err := c.value(dst, 0)
	if err == nil {
		c.skipSpace()
		if c.pos != len(c.src) {
			err = c.errorf("unexpected %q after top-level value", c.src[c.pos])
		}
	}
	if err != nil {
		return dst[:start], err
	}
	return out, nil
}

// canonicalizer is one pass over a document; not safe for concurrent use.
type canonicalizer struct {
	src []byte
	pos int
	// scratch holds a decoded string with escapes; reused across strings.
	scratch []byte
}

// member locates one object member in the output buffer: dst[start:end] is the canonical
// "key":value and dst[start:keyEnd] the canonical key. Canonical string encoding is
// injective, so ordering and comparing encoded keys orders and compares the keys.
type member struct {
	start, keyEnd, end int
}

func (m member) key(buf []byte) []byte { return buf[m.start:m.keyEnd] }

func (c *canonicalizer) errorf(format string, args ...any) error {
	return fmt.Errorf("invalid JSON at offset %d: %s", c.pos, fmt.Sprintf(format, args...))
}

func (c *canonicalizer) skipSpace() {
	for c.pos < len(c.src) {
		switch c.src[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *canonicalizer) value(dst []byte, depth int) ([]byte, error) {
	c.skipSpace()
	if c.pos >= len(c.src) {
		return dst, c.errorf("unexpected end of input")
	}
	switch ch := c.src[c.pos]; {
	case ch == '{':
		return c.object(dst, depth+1)
	case ch == '[':
		return c.array(dst, depth+1)
	case ch == '"':
		return c.appendString(dst)
	case ch == '-' || (ch >= '0' && ch <= '9'):
		return c.number(dst)
	case ch == 't':
		return c.literal(dst, "true")
	case ch == 'f':
		return c.literal(dst, "false")
	case ch == 'n':
		return c.literal(dst, "null")
	default:
		return dst, c.errorf("unexpected %q", ch)
	}
}

func (c *canonicalizer) literal(dst []byte, lit string) ([]byte, error) {
	if len(c.src)-c.pos < len(lit) || string(c.src[c.pos:c.pos+len(lit)]) != lit {
		return dst, c.errorf("invalid literal")
	}
	c.pos += len(lit)
	return append(dst, lit...), nil
}

func (c *canonicalizer) number(dst []byte) ([]byte, error) {
	start := c.pos
	src := c.src
	i := c.pos
	if src[i] == '-' {
		i++
	}
	switch {
	case i < len(src) && src[i] == '0':
		i++
	case i < len(src) && src[i] >= '1' && src[i] <= '9':
		for i < len(src) && src[i] >= '0' && src[i] <= '9' {
			i++
		}
	default:
		c.pos = i
		return dst, c.errorf("invalid number")
	}
	if i < len(src) && src[i] == '.' {
		i++
		d := i
		for i < len(src) && src[i] >= '0' && src[i] <= '9' {
			i++
		}
		if i == d {
			c.pos = i
			return dst, c.errorf("invalid number")
		}
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		d := i
		for i < len(src) && src[i] >= '0' && src[i] <= '9' {
			i++
		}
		if i == d {
			c.pos = i
			return dst, c.errorf("invalid number")
		}
	}
	c.pos = i
	return append(dst, src[start:i]...), nil
}

func (c *canonicalizer) array(dst []byte, depth int) ([]byte, error) {
	if depth > maxCanonicalDepth {
		return dst, c.errorf("%v", errCanonicalDepth)
	}
	c.pos++ // [
	dst = append(dst, '[')
	c.skipSpace()
	if c.pos < len(c.src) && c.src[c.pos] == ']' {
		c.pos++
		return append(dst, ']'), nil
	}
	for n := 0; ; n++ {
		if n > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = c.value(dst, depth); err != nil {
			return dst, err
		}
		c.skipSpace()
		if c.pos >= len(c.src) {
			return dst, c.errorf("unexpected end of input in array")
		}
		switch c.src[c.pos] {
		case ',':
			c.pos++
		case ']':
			c.pos++
			return append(dst, ']'), nil
		default:
			return dst, c.errorf("unexpected %q in array", c.src[c.pos])
		}
	}
}

// object writes the members in input order after dst; when the keys were not already
// strictly increasing it rewrites them sorted and deduplicated. Tool arguments are small, so
// sorting offsets into one buffer beats building maps.
func (c *canonicalizer) object(dst []byte, depth int) ([]byte, error) {
	if depth > maxCanonicalDepth {
		return dst, c.errorf("%v", errCanonicalDepth)
	}
	c.pos++ // {
	c.skipSpace()
	if c.pos < len(c.src) && c.src[c.pos] == '}' {
		c.pos++
		return append(dst, '{', '}'), nil
	}
	base := len(dst)
	dst = append(dst, '{')
	var stack [8]member
	members := stack[:0]
	sorted := true
	for {
		c.skipSpace()
		if c.pos >= len(c.src) || c.src[c.pos] != '"' {
			return dst[:base], c.errorf("expected object key")
		}
		if len(members) > 0 {
			dst = append(dst, ',')
		}
		start := len(dst)
		var err error
		if dst, err = c.appendString(dst); err != nil {
			return dst[:base], err
		}
		keyEnd := len(dst)
		c.skipSpace()
		if c.pos >= len(c.src) || c.src[c.pos] != ':' {
			return dst[:base], c.errorf("expected ':' after object key")
		}
		c.pos++
		dst = append(dst, ':')
		if dst, err = c.value(dst, depth); err != nil {
			return dst[:base], err
		}
		m := member{start: start, keyEnd: keyEnd, end: len(dst)}
		if n := len(members); n > 0 && bytes.Compare(members[n-1].key(dst), m.key(dst)) >= 0 {
			sorted = false
		}
		members = append(members, m)
		c.skipSpace()
		if c.pos >= len(c.src) {
			return dst[:base], c.errorf("unexpected end of input in object")
		}
		if c.src[c.pos] == ',' {
			c.pos++
			continue
		}
		if c.src[c.pos] == '}' {
			c.pos++
			break
		}
		return dst[:base], c.errorf("unexpected %q in object", c.src[c.pos])
	}
	if sorted {
		return append(dst, '}'), nil // already canonical, written in place
	}
	// Stable sort keeps input order among equal keys, so the last of a run is the one
	// encoding/json keeps.
	slices.SortStableFunc(members, func(a, b member) int { return bytes.Compare(a.key(dst), b.key(dst)) })
	// Write the sorted object after the unsorted one, then move it into place.
	end := len(dst)
	dst = append(dst, '{')
	first := true
	for i, m := range members {
		if i+1 < len(members) && bytes.Equal(members[i+1].key(dst), m.key(dst)) {
			continue // a later duplicate wins
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, dst[m.start:m.end]...)
	}
	dst = append(dst, '}')
	n := copy(dst[base:], dst[end:])
	return dst[:base+n], nil
}

// appendString decodes the JSON string at c.pos and appends its canonical encoding to dst.
func (c *canonicalizer) appendString(dst []byte) ([]byte, error) {
	c.pos++ // opening quote
	start := c.pos
	// Fast path: printable ASCII without escapes is its own canonical form.
	for i := start; i < len(c.src); i++ {
		b := c.src[i]
		if b == '"' {
			c.pos = i + 1
			dst = append(dst, '"')
			dst = append(dst, c.src[start:i]...)
			return append(dst, '"'), nil
		}
		if b == '\\' || b < 0x20 || b >= utf8.RuneSelf {
			break
		}
	}
	buf := c.scratch[:0]
	i := start
	for {
		if i >= len(c.src) {
			c.pos = i
			return dst, c.errorf("unterminated string")
		}
		b := c.src[i]
		switch {
		case b == '"':
			c.pos = i + 1
			c.scratch = buf
			return appendCanonicalString(dst, buf), nil
		case b < 0x20:
			c.pos = i
			return dst, c.errorf("control character in string")
		case b == '\\':
			if i+1 >= len(c.src) {
				c.pos = i
				return dst, c.errorf("unterminated string")
			}
			e := c.src[i+1]
			i += 2
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
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
				r, ok := hex4(c.src[i:])
				if !ok {
					c.pos = i
					return dst, c.errorf("invalid \\u escape")
				}
				i += 4
				if utf16.IsSurrogate(r) {
					// A valid pair combines; anything else is U+FFFD, like encoding/json.
					if len(c.src) >= i+6 && c.src[i] == '\\' && c.src[i+1] == 'u' {
						if r2, ok := hex4(c.src[i+2:]); ok {
							if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
								buf = utf8.AppendRune(buf, dec)
								i += 6
								continue
							}
						}
					}
					r = utf8.RuneError
				}
				buf = utf8.AppendRune(buf, r)
			default:
				c.pos = i - 1
				return dst, c.errorf("invalid escape %q", e)
			}
		case b < utf8.RuneSelf:
			buf = append(buf, b)
			i++
		default:
			r, size := utf8.DecodeRune(c.src[i:])
			if r == utf8.RuneError && size == 1 {
				buf = utf8.AppendRune(buf, utf8.RuneError)
			} else {
				buf = append(buf, c.src[i:i+size]...)
			}
			i += size
		}
	}
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// appendCanonicalString encodes s (valid UTF-8) as a JSON string: only '"', '\\' and control
// characters are escaped, control characters other than \b \f \n \r \t as \u00XX.
func appendCanonicalString(dst, s []byte) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b >= 0x20 && b != '"' && b != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch b {
		case '"', '\\':
			dst = append(dst, '\\', b)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
