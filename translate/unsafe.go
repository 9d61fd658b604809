package translate

import "unsafe"

// unsafeString views b as a string without copying. The caller must not modify b while
// the string (or any substring of it) is in use; decoders use it for the duration of one
// event, which is exactly the lifetime the Event contract gives its strings.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
