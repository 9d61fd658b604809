package translate

import (
	"bytes"
	"compress/flate"
	"encoding/base64"
	"strings"
	"sync"
)

// CarrySep separates an upstream tool call id from the state carried with it. No
// provider's own ids contain it.
const CarrySep = "~1"

// lastCarrySep is strings.LastIndex(s, CarrySep), which hashes every byte of s. It
// searches forward, with the vector byte search: most ids carry nothing and have no '~',
// and one that carries state has its separator near its start, then base64 without one
// (strings.LastIndexByte goes a byte at a time). An id with many '~' falls back to the
// backward search after a few.
func lastCarrySep(s string) int {
	last := -1
	for at, tries := 0, 0; ; tries++ {
		j := strings.IndexByte(s[at:], CarrySep[0])
		if j < 0 {
			return last
		}
		if at += j; at+1 < len(s) && s[at+1] == CarrySep[1] {
			last = at
		}
		if at++; tries == 3 {
			break
		}
	}
	i := strings.LastIndexByte(s, CarrySep[0])
	for i >= 0 && (i+1 >= len(s) || s[i+1] != CarrySep[1]) {
		i = strings.LastIndexByte(s[:i], CarrySep[0])
	}
	return i
}

// flateWriters and flateReaders recycle compressors and decompressors, which are large to
// allocate. They are caches with no observable state, the one exception to "no
// package-level state".
var (
	flateWriters = sync.Pool{New: func() any {
		w, _ := flate.NewWriter(nil, flate.DefaultCompression)
		return w
	}}
	flateReaders sync.Pool // of flate.NewReader's io.ReadCloser, a flate.Resetter
)

// compressed returns b compressed with flate when b is over 96 bytes and that makes it
// shorter (the carried state of CarryID and SealBlock), else ok false.
func compressed(b []byte) (z []byte, ok bool) {
	if len(b) <= 96 {
		return nil, false
	}
	var buf bytes.Buffer
	w := flateWriters.Get().(*flate.Writer)
	w.Reset(&buf)
	w.Write(b)
	w.Close()
	flateWriters.Put(w)
	if buf.Len() >= len(b) {
		return nil, false
	}
	return buf.Bytes(), true
}

// CarryID returns id with state attached, so that opaque data an upstream needs back on
// the next turn (thinking signatures, thought signatures, encrypted reasoning) survives a
// client that keeps only the standard tool call fields. Large state is compressed. The
// result uses only URL-safe characters besides the separator "~".
func CarryID(id string, state []byte) string {
	if len(state) == 0 {
		return id
	}
	kind := byte('r')
	if z, ok := compressed(state); ok {
		kind, state = 'z', z
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
// and nil when s carries nothing. An id carries state when it ends in CarrySep, a kind
// (r: raw, z: compressed) and unpadded URL-safe base64; compressed state that does not
// inflate is ignored (nil), the id is still the part before CarrySep, as CarriedID says.
func SplitID(s string) (id string, state []byte) {
	i, kind, enc := carried(s)
	if i < 0 {
		return s, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil { // carried checked enc: not reached
		return s, nil
	}
	if kind == 'z' {
		raw = inflate(raw)
	}
	if len(raw) == 0 { // nothing carried (CarryID writes no empty state)
		return s[:i], nil
	}
	return s[:i], raw
}

// CarriedID returns the id SplitID returns for s, without decoding the state: a caller
// that drops the state pays for neither its base64 nor its inflation.
func CarriedID(s string) string {
	if i, _, _ := carried(s); i >= 0 {
		return s[:i]
	}
	return s
}

// carried returns where the state s carries starts (the offset of CarrySep), its kind and
// its encoding, or -1 when s carries none.
func carried(s string) (i int, kind byte, enc string) {
	i = lastCarrySep(s)
	if i < 0 || i+len(CarrySep) >= len(s) {
		return -1, 0, ""
	}
	kind, enc = s[i+len(CarrySep)], s[i+len(CarrySep)+1:]
	if kind != 'r' && kind != 'z' || !rawURLBase64(enc) {
		return -1, 0, ""
	}
	return i, kind, enc
}

// rawURLBase64 reports whether base64.RawURLEncoding decodes enc: URL-safe characters
// only, and not one character beyond whole groups of four. (The decoder would also skip
// line breaks; CarryID writes none, and an id with one carries nothing.)
func rawURLBase64(enc string) bool {
	if len(enc)%4 == 1 {
		return false
	}
	for i := 0; i < len(enc); i++ {
		if c := enc[i]; !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// maxInflated bounds the state inflate returns.
const maxInflated = 8 << 20

// inflate returns raw decompressed, or nil when it is not a whole DEFLATE stream or
// inflates beyond maxInflated. Its decompressors are recycled: each is ~40 KB to allocate.
func inflate(raw []byte) []byte {
	out, _, err := inflateAtMost(raw, maxInflated)
	if err != nil {
		return nil
	}
	return out
}
