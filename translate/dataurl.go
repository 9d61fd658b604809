package translate

import "strings"

// ParseDataURL splits a base64 data: URL ("data:image/png;base64,iVBOR...") into its
// lowercased media type (without parameters; "" when the URL names none) and its base64
// data. ok is false for anything else, including data URLs that are not base64.
func ParseDataURL(u string) (mediaType, data string, ok bool) {
	if !strings.HasPrefix(u, "data:") {
		return "", "", false
	}
	comma := strings.IndexByte(u, ',')
	if comma < 0 {
		return "", "", false
	}
	meta := u[len("data:"):comma]
	if !strings.HasSuffix(meta, ";base64") {
		return "", "", false
	}
	meta = meta[:len(meta)-len(";base64")]
	if k := strings.IndexByte(meta, ';'); k >= 0 {
		meta = meta[:k]
	}
	return strings.ToLower(meta), u[comma+1:], true
}
