//go:build !amd64 && !arm64

package jsonx

// wordAt is the unaligned load's portable twin: eight byte loads, which the compiler may
// merge.
func wordAt(s string, i int) uint64 { return load8(s[i : i+8]) }
