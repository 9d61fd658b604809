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

// Within reports whether the bytes of s lie inside the memory of in (s is a substring
// of in, not merely equal to one). An empty s is within nothing.
func Within(s, in string) bool {
	if len(s) == 0 || len(in) == 0 {
		return false
	}
	p, lo := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.StringData(in)))
	return p >= lo && p+uintptr(len(s)) <= lo+uintptr(len(in))
}

// Equal is a == b. Two strings of one length that start at the same byte are equal
// without a look at their bytes: Equal answers them with a pointer comparison, where a
// == b calls the runtime's memequal (which checks the same and returns). The ledger's
// writer compares each record's configured names (key, model, backend...) with the
// record before's, most often the very same strings.
func Equal(a, b string) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}
