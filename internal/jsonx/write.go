package jsonx

import (
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// An escaping is a JSON string writer's rules for the ASCII bytes (each writer here
// writes invalid UTF-8 as \ufffd and U+2028 and U+2029 escaped): plain marks the bytes it
// copies as they are, and short holds, for each other ASCII byte, the letter written after
// a backslash for it, or 0 where it is written \u00XX.
type escaping struct {
	plain [256]bool
	short [utf8.RuneSelf]byte
}

var (
	// jsonEscaping is AppendString's, encoding/json's: '<', '>' and '&' escaped, and \b
	// and \f by their letters.
	jsonEscaping = newEscaping(`"\<>&`, "\"\"\\\\\nn\rr\tt\bb\ff")
	// slogEscaping is AppendSlogString's, log/slog's JSON handler's: '<', '>' and '&' as
	// they are, and \b and \f as \u0008 and \u000c.
	slogEscaping = newEscaping(`"\`, "\"\"\\\\\nn\rr\tt")
)

// newEscaping returns the escaping that escapes the control characters and the bytes of
// escaped, and writes each byte letters[2k] as a backslash and letters[2k+1].
func newEscaping(escaped, letters string) (e escaping) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		e.plain[c] = !strings.ContainsRune(escaped, rune(c))
	}
	for k := 0; k < len(letters); k += 2 {
		e.short[letters[k]] = letters[k+1]
	}
	return e
}

// PlainPrefix returns the length of the longest prefix of s made of the bytes every JSON
// string writer copies as they are: printable ASCII other than '"', '\\', '<', '>' and
// '&'. A writer with other escaping rules (no HTML escapes, say) may copy that prefix
// whole and go on byte by byte from there.
func PlainPrefix(s string) int { return safePrefix(s, 0) }

// safePrefix returns the offset of the first byte at or after i that AppendString cannot
// copy as it is (a control character, '"', '\\', '<', '>', '&', or a byte of a multi-byte
// character), or len(s). It looks at eight bytes at a time and, once 16 bytes were safe,
// at 32 at a time, all of them in one call (safeBlocks): most runs in a JSON text sent as
// a string are short, and they end before the vector step would pay for its call.
func safePrefix(s string, i int) int {
	for words := 0; i+8 <= len(s); i += 8 {
		if m := plainMask(load8(s[i : i+8])); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
		if words++; words == 2 && i+8+32 <= len(s) {
			// The blocks from i+8 in one call: it stops at the byte it found, or short of
			// the whole blocks' end when there is none; the words go on from there.
			n := len(s) - i - 8
			k := safeBlocks(unsafe.StringData(s[i+8:]), n)
			if k < n&^31 {
				return i + 8 + k
			}
			i += k
		}
	}
	// The last seven bytes or fewer (all of a short token's text): one table load each,
	// not seven compares.
	for ; i < len(s); i++ {
		if !jsonEscaping.plain[s[i]] {
			return i
		}
	}
	return i
}

// AppendString appends s to dst as a JSON string literal, escaping as encoding/json does
// (including <, >, & and U+2028/U+2029, and replacing invalid UTF-8 with U+FFFD).
func AppendString(dst []byte, s string) []byte { return appendString(dst, s, &jsonEscaping) }

// AppendSlogString appends s to dst as a JSON string literal the way log/slog's JSON
// handler writes it: as AppendString does, but with '<', '>' and '&' as they are, and
// \b and \f written \u0008 and \u000c.
func AppendSlogString(dst []byte, s string) []byte { return appendString(dst, s, &slogEscaping) }

// appendString is AppendString with the escaping e.
func appendString(dst []byte, s string, e *escaping) []byte {
	if n := len(s); n >= 8 && n <= 32 && plainWord(wordAt(s, 0)) && plainWord(wordAt(s, n-8)) &&
		(n <= 16 || plainWord(wordAt(s, 8)) && plainWord(wordAt(s, min(16, n-8)))) {
		// A name, an id, a model: two to four words, the last overlapping the one before
		// unless the length is a multiple of eight, tell that the string goes as it is,
		// where appendEscaped reads it a byte at a time (a request id of 24 bytes, a
		// completion id of 29).
		dst = append(append(dst, '"'), s...)
		return append(dst, '"')
	}
	if n := len(s); n >= 4 && n < 8 && plainWord(uint64(halfAt(s, 0))|uint64(halfAt(s, n-4))<<32) {
		// A short name (a key's, a backend's, a level): two half-words, overlapping
		// unless the length is four, in one word.
		dst = append(append(dst, '"'), s...)
		return append(dst, '"')
	}
	dst = appendEscaped(append(dst, '"'), s, e)
	return append(dst, '"')
}

// appendEscapedBlocks is appendEscaped with jsonEscaping for a string of a block or more,
// read a block at a time from the mask of the bytes AppendString cannot copy as they are
// (literalMasks' first): the runs between them are copied whole, however short. A JSON
// text sent as a string (a tool's arguments or result) has a quote every few bytes,
// which a byte loop pays for at every byte; a long plain run is passed over as
// safePrefix passes it.
func appendEscapedBlocks(dst []byte, s string) []byte {
	start, i := 0, 0 // s[start:i] is still to copy; i is where the reading has got to
	plain := false   // whether the block before had nothing to escape
	for base := 0; base < len(s); base += blockSize {
		if plain && len(s)-base >= 2*blockSize {
			// A long run of plain text (prose): passed over 32 bytes a step in one call,
			// to the block of the first byte to escape.
			base += safeBlocks(unsafe.StringData(s[base:]), len(s)-base) &^ (blockSize - 1)
		}
		m, _, _ := literalMasks(s, base)
		plain = m == 0
		if d := i - base; d > 0 {
			m &^= 1<<d - 1 // the rest of a character read in the block before
		}
		for ; m != 0; m &= m - 1 {
			j := base + bits.TrailingZeros64(m)
			if j < i {
				continue // inside a character read already
			}
			if c := s[j]; c < utf8.RuneSelf {
				dst = append(dst, s[start:j]...)
				if l := jsonEscaping.short[c]; l != 0 {
					dst = append(dst, '\\', l)
				} else {
					dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
				}
				i, start = j+1, j+1
				continue
			}
			r, size := utf8.DecodeRuneInString(s[j:])
			switch {
			case r == utf8.RuneError && size == 1:
				dst = append(append(dst, s[start:j]...), `\ufffd`...)
				start = j + 1
			case r == '\u2028' || r == '\u2029':
				dst = append(append(dst, s[start:j]...), '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
				start = j + size
			}
			i = j + size
		}
	}
	return append(dst, s[start:]...)
}

// plainWord reports whether the eight bytes of w are all bytes AppendString copies as they
// are.
func plainWord(w uint64) bool { return plainMask(w) == 0 }

// plainMask sets the high bit of the bytes of w that AppendString cannot copy as they
// are, from the lowest such byte on: a byte's high bit is set in the first term if it is
// one of the five characters or below 0x20, in the second if it is 0x80 or above. A
// borrow can set bits above a match but never below one, so the lowest set bit is exact,
// and without a match there is no borrow: the mask is zero exactly when every byte is
// plain.
func plainMask(w uint64) uint64 {
	m := (((w^(ones*'"'))-ones)|((w^(ones*'\\'))-ones)|((w^(ones*'<'))-ones)|
		((w^(ones*'>'))-ones)|((w^(ones*'&'))-ones)|(w-ones*0x20))&^w | w
	return m & highs
}

// AppendLiteral appends, as AppendString would write it, the value of lit: the contents
// of a JSON string literal a Scanner has checked, escapes as written (a Str that
// ValueRaw or a lazy parse left undecoded). The bytes equal AppendString(dst, v) where v
// is lit decoded (Scanner.DecodeRaw), but lit is read once and not decoded: the escapes
// AppendString writes the same way (\", \\, \n, \r, \t, \b, \f) are copied as they
// are, so a JSON text sent as a string goes out in a few copies.
//
// It reads lit a block at a time from masks (literalMasks) of the places where it must
// stop: the bytes AppendString cannot copy as they are, less the backslashes and the
// bytes escaped (found as the scanner finds them, escapedBytes), plus the escaped '/'
// and 'u'. In a JSON text sent as a string the escapes that go out as they are (\" above
// all) come every few bytes; none of them stops the copy. The blocks without a stop are
// passed over in one call (literalBlocks).
func AppendLiteral(dst []byte, lit string) []byte {
	dst = append(dst, '"')
	start, i := 0, 0 // lit[start:i] is still to copy; i is where the reading has got to
	var carry uint64 // 1 if the block's first byte is escaped
	for base := 0; base < len(lit); base += blockSize {
		// The blocks without a stop, passed over in one call; the last, partial block too
		// when the bytes after it up to a block lie in its page (see samePage). The call
		// returns the masks of the block it stops at.
		var unsafe_, bs, chg uint64
		read := false // whether the masks of the block at base are read
		span := (len(lit) - base) &^ (blockSize - 1)
		if base+span < len(lit) && samePage(unsafe.StringData(lit[base+span:]), blockSize) {
			span = len(lit) - base
		}
		if span > 0 {
			k, next, u, b, c := literalBlocks(unsafe.StringData(lit[base:]), span, carry)
			if base, carry = base+k, next; base >= len(lit) {
				break
			}
			if k < span {
				unsafe_, bs, chg, read = u, b, c, true
			}
		}
		if !read {
			unsafe_, bs, chg = literalMasks(lit, base)
		}
		if unsafe_|carry == 0 {
			continue // nothing to stop at, and no escape running into the next block
		}
		var escaped uint64
		escaped, carry = escapedBytes(bs, carry)
		m := unsafe_&^bs&^escaped | escaped&chg
		for {
			if d := i - base; d >= blockSize {
				break // an escape or a character read past this block
			} else if d > 0 {
				m &^= 1<<d - 1 // stops inside what was read already
			}
			if m == 0 {
				break
			}
			i = base + bits.TrailingZeros64(m)
			m &= m - 1
			switch c := lit[i]; {
			case (c == '/' || c == 'u') && i == start:
				// Its backslash went with a malformed \u escape before it: not a checked
				// literal, and it goes as it is.
				i++
				continue
			case c == '/': // escaped: AppendString writes it as it is
				dst = append(append(dst, lit[start:i-1]...), '/')
				i++
			case c == 'u': // escaped: \uXXXX, or a surrogate pair of two
				at := i - 1
				if at+6 > len(lit) {
					i = len(lit) // not a checked literal: the rest goes as it is
					continue
				}
				r, n := decodeEscapedRune(lit[at:])
				var buf [utf8.UTFMax]byte
				dst = appendEscaped(append(dst, lit[start:at]...), string(utf8.AppendRune(buf[:0], r)), &jsonEscaping)
				i = at + n
			default:
				// <, >, &, or a multi-byte character: escaped, if at all, as AppendString
				// does (a quote or a control character: not a checked literal).
				size := 1
				if c >= utf8.RuneSelf {
					var r rune
					if r, size = utf8.DecodeRuneInString(lit[i:]); r != utf8.RuneError && r != '\u2028' && r != '\u2029' {
						i += size
						continue
					}
				}
				dst = appendEscaped(append(dst, lit[start:i]...), lit[i:i+size], &jsonEscaping)
				i += size
			}
			start = i
		}
	}
	dst = append(dst, lit[start:]...)
	return append(dst, '"')
}

// decodeEscapedRune decodes the \u escape at the start of s, which has at least six
// bytes, as unescape does: a high surrogate followed by an escaped low one is one
// character (n is 12), any other surrogate is U+FFFD. It returns the rune and the bytes
// read.
func decodeEscapedRune(s string) (r rune, n int) {
	r = hex4(s[2:])
	if !utf16.IsSurrogate(r) {
		return r, 6
	}
	if len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
		if d := utf16.DecodeRune(r, hex4(s[8:])); d != utf8.RuneError {
			return d, 12
		}
	}
	return utf8.RuneError, 6
}

// appendEscaped appends s as appendString writes it with the escaping e, without the
// quotes.
func appendEscaped(dst []byte, s string, e *escaping) []byte {
	if len(s) >= blockSize && e == &jsonEscaping {
		return appendEscapedBlocks(dst, s)
	}
	start := 0
	for i := 0; i < len(s); {
		// Short runs (quotes every few bytes in a JSON text sent as a string) are cheaper
		// byte by byte through a table; long ones eight bytes at a time.
		for i < len(s) && e.plain[s[i]] {
			i++
			if i+16 <= len(s) && e.plain[s[i]] && e.plain[s[i+1]] && e.plain[s[i+2]] && e.plain[s[i+3]] {
				i = safePrefix(s, i+4) // it stops at '<', '>' and '&', whatever e does
				break
			}
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if e.plain[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			if l := e.short[c]; l != 0 {
				dst = append(dst, '\\', l)
			} else {
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}

const hexDigits = "0123456789abcdef"

// AppendKey appends `"key":` to dst; key must need no escaping.
func AppendKey(dst []byte, key string) []byte {
	dst = append(dst, '"')
	dst = append(dst, key...)
	return append(dst, '"', ':')
}

// AppendInt appends n in decimal, as strconv.AppendInt does. The counts and codes an
// answer or a log line carries (0 to 9,999) are written here digit by digit, in one
// append; strconv formats the rest.
func AppendInt(dst []byte, n int) []byte {
	switch u := uint(n); {
	case u < 10:
		return append(dst, byte('0'+u))
	case u < 100:
		return append(dst, byte('0'+u/10), byte('0'+u%10))
	case u < 1000:
		return append(dst, byte('0'+u/100), byte('0'+u/10%10), byte('0'+u%10))
	case u < 10000:
		return append(dst, byte('0'+u/1000), byte('0'+u/100%10), byte('0'+u/10%10), byte('0'+u%10))
	}
	return strconv.AppendInt(dst, int64(n), 10)
}

// AppendFloat appends f in the shortest form that round-trips.
func AppendFloat(dst []byte, f float64) []byte { return strconv.AppendFloat(dst, f, 'g', -1, 64) }

// AppendBool appends true or false.
func AppendBool(dst []byte, b bool) []byte { return strconv.AppendBool(dst, b) }

// AppendRawOr appends raw JSON, or def when raw is empty.
func AppendRawOr(dst []byte, raw, def string) []byte {
	if raw == "" {
		return append(dst, def...)
	}
	return append(dst, raw...)
}

// AppendCompact appends the JSON text raw, which a Scanner has checked, without
// insignificant whitespace.
func AppendCompact(dst []byte, raw string) []byte {
	inStr := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inStr {
			dst = append(dst, c)
			switch c {
			case '\\':
				if i+1 < len(raw) {
					i++
					dst = append(dst, raw[i])
				}
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
		case '"':
			inStr = true
			dst = append(dst, c)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}
