package jsonx

import (
	"math/bits"
	"unsafe"
)

// A string's contents are scanned a block of 64 bytes at a time: specialMask marks the
// bytes of a block that stop a string scan (a quote, a backslash, a control character),
// and stringEnd walks the marks. The block's mask is kept in the Scanner, so the many
// short strings of a block (member names, ids) are found from one mask, and an
// escape-dense string costs a bit test per escape instead of a search from each one.

// blockSize is the size of a block; blocks start at multiples of it in the input.
const blockSize = 64

// specialMask returns the mask of the block of s starting at blk: bit k is set if
// s[blk+k] is '"', '\\' or below 0x20. Bits of offsets at or beyond len(s) are clear. The
// last, partial block is masked from a copy whose other bytes are zero.
func specialMask(s string, blk int) uint64 {
	if blk+blockSize <= len(s) { // the common case, without specialBlock's call
		if hasAVX2() {
			return blockMaskAVX2(unsafe.StringData(s[blk:]))
		}
		return blockMaskGo(s[blk : blk+blockSize])
	}
	var b [blockSize]byte
	n := copy(b[:], s[blk:])
	return specialBlock(&b[0]) & (1<<n - 1)
}

// specialBlock is specialMask of the blockSize bytes at p: blockMaskAVX2, or blockMaskGo.
func specialBlock(p *byte) uint64 {
	if hasAVX2() {
		return blockMaskAVX2(p)
	}
	return blockMaskGo(unsafe.String(p, blockSize))
}

// blockMaskGo is the mask of b, blockSize bytes (see specialMask), in portable Go: eight
// bytes at a time, each byte's test exact.
func blockMaskGo(b string) uint64 {
	var m uint64
	for k := 0; k < blockSize; k += 8 {
		w := load8(b[k : k+8])
		h := zeroBytes(w^(ones*'"')) | zeroBytes(w^(ones*'\\')) | zeroBytes(w&(ones*0xe0))
		m |= gather8(h) << k
	}
	return m
}

// stringEnd returns the offset of the closing quote of the string whose contents start
// at i, or -1 if the string is malformed, and whether it contains escapes.
func (sc *Scanner) stringEnd(i int) (end int, esc bool) {
	s := sc.s
	blk := i &^ (blockSize - 1)
	m := sc.mask
	if blk+1 != sc.blk1 {
		if i >= len(s) {
			return -1, false
		}
		m = specialMask(s, blk)
		sc.mask, sc.blk1 = m, blk+1
	}
	for {
		// blk <= i < blk+blockSize, and m is the mask of the block at blk.
		// The & tells the compiler that the shift is below 64 (no test for a larger one).
		r := m >> ((i - blk) & (blockSize - 1))
		if r == 0 { // no stop in the rest of the block
			if blk += blockSize; blk >= len(s) {
				return -1, esc
			}
			i = blk
			m = specialMask(s, blk)
			sc.mask, sc.blk1 = m, blk+1
			continue
		}
		i += bits.TrailingZeros64(r)
		switch s[i] {
		case '"':
			return i, esc
		case '\\':
		default: // a control character
			return -1, esc
		}
		esc = true
		if i+1 >= len(s) {
			return -1, esc
		}
		switch s[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if i+6 > len(s) || !isHex(s[i+2]) || !isHex(s[i+3]) || !isHex(s[i+4]) || !isHex(s[i+5]) {
				return -1, esc
			}
			i += 6
		default:
			return -1, esc
		}
		if i-blk >= blockSize { // the escape ended past the block
			if blk = i &^ (blockSize - 1); blk >= len(s) {
				return -1, esc
			}
			m = specialMask(s, blk)
			sc.mask, sc.blk1 = m, blk+1
		}
	}
}

// literalMask returns the mask of the bytes of lit[base:base+blockSize] that AppendString
// cannot copy as they are (see safePrefix); bits past the end of lit are clear.
func literalMask(lit string, base int) uint64 {
	if base+blockSize <= len(lit) {
		return unsafeBlock(unsafe.StringData(lit[base:]))
	}
	n := len(lit) - base
	if n <= 32 && hasAVX2() { // a short literal: one half block
		var b [32]byte // the rest of lit, then zeros, whose bits are cleared
		copy(b[:], lit[base:])
		return uint64(unsafeMaskAVX2(&b[0])) & (1<<n - 1)
	}
	var b [blockSize]byte
	copy(b[:], lit[base:])
	return unsafeBlock(&b[0]) & (1<<n - 1)
}

// unsafeBlock is the mask of the blockSize bytes at p that AppendString cannot copy as
// they are: two AVX2 halves, or unsafeMaskGo.
func unsafeBlock(p *byte) uint64 {
	if hasAVX2() {
		return uint64(unsafeMaskAVX2(p)) | uint64(unsafeMaskAVX2((*byte)(unsafe.Add(unsafe.Pointer(p), 32))))<<32
	}
	return unsafeMaskGo(unsafe.String(p, blockSize))
}

// unsafeMaskGo is the mask of b, blockSize bytes, of the bytes AppendString cannot copy
// as they are, in portable Go (see blockMaskGo).
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

const ones, lows, highs = 0x0101010101010101, 0x7f7f7f7f7f7f7f7f, 0x8080808080808080

// load8 returns the eight bytes of t as a little-endian word.
func load8(t string) uint64 {
	_ = t[7] // one bounds check for the eight loads, merged into one
	return uint64(t[0]) | uint64(t[1])<<8 | uint64(t[2])<<16 | uint64(t[3])<<24 |
		uint64(t[4])<<32 | uint64(t[5])<<40 | uint64(t[6])<<48 | uint64(t[7])<<56
}

// zeroBytes sets the high bit of each byte of x that is zero, and no other bit: exact for
// every byte, no borrow between them.
func zeroBytes(x uint64) uint64 { return ^((x&lows + lows) | x) & highs }

// gather8 moves the high bit of byte j of h (its only bits) to bit j of the result: bit
// 8j+7 goes to bit 56+j of the product, and no two terms collide.
func gather8(h uint64) uint64 { return (h >> 7) * 0x0102040810204080 >> 56 }
