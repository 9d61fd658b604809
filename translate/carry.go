package translate

import (
	"bytes"
	"compress/flate"
	"encoding/base64"
	"io"
	"strings"
	"sync"
)

// CarrySep separates an upstream tool call id from the state carried with it. No
// provider's own ids contain it.
const CarrySep = "~1"

// lastCarrySep is strings.LastIndex(s, CarrySep), which hashes every byte of s. Most ids
// carry nothing and have no '~': one byte search settles them.
func lastCarrySep(s string) int {
	i := strings.LastIndexByte(s, CarrySep[0])
	for i >= 0 && (i+1 >= len(s) || s[i+1] != CarrySep[1]) {
		i = strings.LastIndexByte(s[:i], CarrySep[0])
	}
	return i
}

// flateWriters recycles compressors, which are large to allocate. It is a cache with no
// observable state, the one exception to "no package-level state".
var flateWriters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, flate.DefaultCompression)
	return w
}}

// CarryID returns id with state attached, so that opaque data an upstream needs back on
// the next turn (thinking signatures, thought signatures, encrypted reasoning) survives a
// client that keeps only the standard tool call fields. Large state is compressed. The
// result uses only URL-safe characters besides the separator "~".
func CarryID(id string, state []byte) string {
	if len(state) == 0 {
		return id
	}
	kind := byte('r')
	if len(state) > 96 {
		var buf bytes.Buffer
		w := flateWriters.Get().(*flate.Writer)
		w.Reset(&buf)
		w.Write(state)
		w.Close()
		flateWriters.Put(w)
		if buf.Len() < len(state) {
			kind, state = 'z', buf.Bytes()
		}
	}
	var b strings.Builder
	b.Grow(len(id) + len(CarrySep) + 1 + base64.RawURLEncoding.EncodedLen(len(state)))
	b.WriteString(id)
	b.WriteString(CarrySep)
	b.WriteByte(kind)
	enc := base64.NewEncoder(base64.RawURLEncoding, &b)
	enc.Write(state)
	enc.Close()
	return b.String()
}

// SplitID undoes CarryID: it returns the upstream id and the carried state, or s itself
// and nil when s carries nothing (or carries something unreadable, which is then ignored).
func SplitID(s string) (id string, state []byte) {
	i := lastCarrySep(s)
	if i < 0 || i+len(CarrySep) >= len(s) {
		return s, nil
	}
	kind, enc := s[i+len(CarrySep)], s[i+len(CarrySep)+1:]
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return s, nil
	}
	switch kind {
	case 'r':
		return s[:i], raw
	case 'z':
		out, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(raw)), 8<<20))
		if err != nil {
			return s, nil
		}
		return s[:i], out
	}
	return s, nil
}
