//go:build !amd64

package jsonx

// blockMask returns the mask of b, blockSize bytes: bit k is set if b[k] is '"', '\\' or
// below 0x20 (see specialMask).
func blockMask(b string) uint64 { return blockMaskGo(b) }
