//go:build (amd64 || arm64) && !purego

package jsonx

import "unsafe"

// wordAt returns the eight bytes of s at offset i as a little-endian word, in one load
// that may be unaligned, which amd64 and arm64 allow. The caller must have checked that
// i+8 <= len(s): nothing here does. Its cost is small enough for MemberIs to be inlined,
// where a constant s makes the load one compare with the constant's memory.
func wordAt(s string, i int) uint64 {
	return *(*uint64)(unsafe.Add(unsafe.Pointer(unsafe.StringData(s)), i))
}

// halfAt is wordAt for the four bytes of s at offset i.
func halfAt(s string, i int) uint32 {
	return *(*uint32)(unsafe.Add(unsafe.Pointer(unsafe.StringData(s)), i))
}
