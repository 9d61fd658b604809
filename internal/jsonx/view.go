package jsonx

import "unsafe"

// View returns b as a string without copying; it is the module's one bytes-to-string
// view. The caller must not modify b while the string (or any substring of it) is in
// use: decoders use it for the duration of one event, the lifetime the translate Event
// contract gives its strings.
func View(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// Bytes returns s as a byte slice without copying, for APIs that take []byte but only
// read it. The caller must never modify the slice.
func Bytes(s string) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
