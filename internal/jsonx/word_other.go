//go:build purego || !(amd64 || arm64)

package jsonx

// wordAt is the unaligned load's portable twin: eight byte loads, which the compiler may
// merge.
func wordAt(s string, i int) uint64 { return load8(s[i : i+8]) }

// halfAt is wordAt for the four bytes of s at offset i.
func halfAt(s string, i int) uint32 {
	t := s[i : i+4]
	return uint32(t[0]) | uint32(t[1])<<8 | uint32(t[2])<<16 | uint32(t[3])<<24
}
