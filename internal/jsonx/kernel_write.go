package jsonx

import (
	"math/bits"
	"unsafe"
)

// The writer's kernels: the loop over the 32-byte blocks AppendString copies as they are
// (safeBlocks), a literal block's masks (literalMasks) and AppendLiteral's loop over the
// blocks it has nothing to stop at (literalBlocks). This file holds their portable Go
// twins; kernels_amd64.go runs the AVX2 ones where the CPU has AVX2, and
// kernel_write_amd64_test.go holds those to these.

// safeBlocksGo is safeBlocks in portable Go: it reads the n bytes at p in 32-byte blocks,
// as long as a whole block is left, for a byte AppendString cannot copy as it is (see
// safePrefix). It returns the offset of the first such byte, or, if the blocks it read
// held none, where it stopped: n rounded down to 32.
func safeBlocksGo(p *byte, n int) int {
	s := unsafe.String(p, n)
	k := 0
	for ; k+32 <= n; k += 32 {
		for j := k; j < k+32; j += 8 {
			if m := plainMask(load8(s[j : j+8])); m != 0 {
				return j + bits.TrailingZeros64(m)/8
			}
		}
	}
	return k
}

// literalMasksGo is literalMasks in portable Go: for lit[base:base+blockSize], the masks
// AppendLiteral reads: unsafe, the bytes AppendString cannot copy as they are (see
// safePrefix); bs, the backslashes; chg, the bytes '/' and 'u', which AppendString does
// not write with the escapes that may precede them. Bits past the end of lit are clear in
// all three; the last, partial block is read from a copy.
func literalMasksGo(lit string, base int) (unsafe_, bs, chg uint64) {
	if base+blockSize <= len(lit) {
		return literalMaskGo(lit[base : base+blockSize])
	}
	var b [blockSize]byte
	n := copy(b[:], lit[base:])
	unsafe_, bs, chg = literalMaskGo(unsafe.String(&b[0], blockSize))
	keep := uint64(1)<<n - 1
	return unsafe_ & keep, bs & keep, chg & keep
}

// literalMaskGo is literalMasksGo of b, blockSize bytes.
func literalMaskGo(b string) (unsafe_, bs, chg uint64) {
	for k := 0; k < blockSize; k += 8 {
		w := load8(b[k : k+8])
		bs |= gather8(zeroBytes(w^(ones*'\\'))) << k
		chg |= gather8(zeroBytes(w^(ones*'/'))|zeroBytes(w^(ones*'u'))) << k
	}
	return unsafeMaskGo(b), bs, chg
}

// unsafeMaskGo is the mask of b, blockSize bytes, of the bytes AppendString cannot copy
// as they are (see blockMaskGo).
func unsafeMaskGo(b string) uint64 {
	var m uint64
	for k := 0; k < blockSize; k += 8 {
		w := load8(b[k : k+8])
		h := zeroBytes(w^(ones*'"')) | zeroBytes(w^(ones*'\\')) | zeroBytes(w^(ones*'<')) |
			zeroBytes(w^(ones*'>')) | zeroBytes(w^(ones*'&')) | zeroBytes(w&(ones*0xe0)) | w&highs
		m |= gather8(h) << k
	}
	return m
}

// literalBlocksGo is literalBlocks in portable Go, over the n bytes at p (the literal
// from the block literalBlocks starts at): given the carry into the first block (see
// escapedBytes), it passes over the blocks that have no byte to stop at (see
// AppendLiteral), and returns the offset k of the first that has one, or n rounded up to
// blockSize, and the carry into that block; and for a block with a stop, its masks (see
// literalMasksGo).
func literalBlocksGo(p *byte, n int, carry uint64) (k int, next, unsafe_, bs, chg uint64) {
	lit := unsafe.String(p, n)
	for ; k < n; k += blockSize {
		unsafe_, bs, chg = literalMasksGo(lit, k)
		if unsafe_|carry == 0 {
			continue // nothing to stop at, and no escape running into the block
		}
		escaped, out := escapedBytes(bs, carry)
		if unsafe_&^bs&^escaped|escaped&chg != 0 {
			return k, carry, unsafe_, bs, chg
		}
		carry = out
	}
	return k, carry, 0, 0, 0
}

// samePage reports whether the n bytes from p lie in one 4 KiB page (the smallest page
// size): loading them cannot fault where loading p cannot, whatever object holds p.
func samePage(p *byte, n int) bool {
	return uintptr(unsafe.Pointer(p))&(4096-1) <= 4096-uintptr(n)
}
