package jsonx

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// blockMask returns the mask of b, blockSize bytes: bit k is set if b[k] is '"', '\\' or
// below 0x20 (see specialMask). With AVX2 it is four compares over two 32-byte loads.
func blockMask(b string) uint64 {
	if cpu.X86.HasAVX2 {
		return blockMaskAVX2(unsafe.StringData(b))
	}
	return blockMaskGo(b)
}

// blockMaskAVX2 is blockMask of the blockSize bytes at p.
//
//go:noescape
func blockMaskAVX2(p *byte) uint64
