package jsonx

import (
	"unicode/utf8"
	"unsafe"
)

// ValidUTF8 reports whether s is valid UTF-8, as utf8.ValidString does (RFC 8259 has
// JSON text exchanged as UTF-8). A request body is mostly ASCII: its ASCII prefix is
// passed over 128 bytes at a time (asciiBlocks), and utf8.ValidString reads the rest.
func ValidUTF8(s string) bool {
	i := 0
	if len(s) >= 128 {
		i = asciiBlocks(unsafe.StringData(s), len(s))
	}
	return utf8.ValidString(s[i:])
}
