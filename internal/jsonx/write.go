package jsonx

import (
	"strconv"
	"unicode/utf8"
)

// AppendString appends s to dst as a JSON string literal, escaping as encoding/json does
// (including <, >, & and U+2028/U+2029, and replacing invalid UTF-8 with U+FFFD).
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
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
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// AppendKey appends `"key":` to dst; key must need no escaping.
func AppendKey(dst []byte, key string) []byte {
	dst = append(dst, '"')
	dst = append(dst, key...)
	return append(dst, '"', ':')
}

// AppendInt appends n in decimal.
func AppendInt(dst []byte, n int) []byte { return strconv.AppendInt(dst, int64(n), 10) }

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
