package jsonx

import "unsafe"

// The stops kernels: the mask of the bytes of a block that stop a string scan
// (specialMask) and the loop over a long string's whole blocks to the first that has one
// (stopBlocks). This file holds their portable Go twins; kernels_amd64.go runs the AVX2
// ones where the CPU has AVX2, and kernel_stops_amd64_test.go holds those to these.

// specialMaskGo is specialMask in portable Go: the mask of the block of s starting at
// blk, bit k set if s[blk+k] is '"', '\\' or below 0x20. Bits of offsets at or beyond
// len(s) are clear. The last, partial block is masked from a copy whose other bytes are
// zero.
func specialMaskGo(s string, blk int) uint64 {
	if blk+blockSize <= len(s) {
		return blockMaskGo(s[blk : blk+blockSize])
	}
	var b [blockSize]byte
	n := copy(b[:], s[blk:])
	return blockMaskGo(unsafe.String(&b[0], blockSize)) & (1<<n - 1)
}

// blockMaskGo is the mask of b, blockSize bytes (see specialMaskGo), eight bytes at a
// time, each byte's test exact.
func blockMaskGo(b string) uint64 {
	var m uint64
	for k := 0; k < blockSize; k += 8 {
		w := load8(b[k : k+8])
		h := zeroBytes(w^(ones*'"')) | zeroBytes(w^(ones*'\\')) | zeroBytes(w&(ones*0xe0))
		m |= gather8(h) << k
	}
	return m
}

// stopBlocksGo is stopBlocks in portable Go: it reads the whole blocks of n bytes (a
// multiple of blockSize) at p, block after block, for one whose mask (see specialMaskGo)
// is not zero, and returns that block's offset k and its mask, or n and 0 when none has a
// stop.
func stopBlocksGo(p *byte, n int) (k int, mask uint64) {
	s := unsafe.String(p, n)
	for ; k < n; k += blockSize {
		if m := blockMaskGo(s[k : k+blockSize]); m != 0 {
			return k, m
		}
	}
	return n, 0
}
