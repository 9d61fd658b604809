package jsonx

import (
	"math/bits"
	"unsafe"
)

// The escapes kernels: a block's masks for a string with escapes, from one pass over it
// (escapeMask), and escapedEnd's loop over the whole blocks of such a string
// (escapedBlocks). This file holds their portable Go twins; kernels_amd64.go runs the
// AVX2 ones where the CPU has AVX2, and kernel_escapes_amd64_test.go holds those to these.

// escapeMaskGo is escapeMask in portable Go: for the block of s at blk, its special mask
// (specialMask's) and the masks of its backslashes (bs), of the bytes JSON does not allow
// after a backslash (bad: all but " \\ / b f n r t u) and of its u bytes: what escapedEnd
// reads of a block. Bits of offsets at or beyond len(s) are clear in special, bs and u
// (set in bad).
func escapeMaskGo(s string, blk int) (special, bs, bad, u uint64) {
	if blk+blockSize <= len(s) {
		return escapeBlockGo(s[blk : blk+blockSize])
	}
	var b [blockSize]byte
	n := copy(b[:], s[blk:])
	special, bs, bad, u = escapeBlockGo(unsafe.String(&b[0], blockSize))
	keep := uint64(1)<<n - 1
	return special & keep, bs & keep, bad, u & keep
}

// escapeBlockGo is escapeMaskGo of b, blockSize bytes.
func escapeBlockGo(b string) (special, bs, bad, u uint64) {
	for k := 0; k < blockSize; k += 8 {
		w := load8(b[k : k+8])
		hb := zeroBytes(w ^ (ones * '\\'))
		hu := zeroBytes(w ^ (ones * 'u'))
		hq := zeroBytes(w ^ (ones * '"'))
		ok := hb | hu | hq | zeroBytes(w^(ones*'/')) | zeroBytes(w^(ones*'b')) |
			zeroBytes(w^(ones*'f')) | zeroBytes(w^(ones*'n')) | zeroBytes(w^(ones*'r')) | zeroBytes(w^(ones*'t'))
		special |= gather8(hq|hb|zeroBytes(w&(ones*0xe0))) << k
		bs |= gather8(hb) << k
		u |= gather8(hu) << k
		bad |= gather8(ok^highs) << k
	}
	return special, bs, bad, u
}

// escapedBlocksGo is escapedBlocks in portable Go: escapedEnd's loop over the whole
// blocks of n bytes (a multiple of blockSize) at p, starting with the given window and
// carry for the first block (see escapedEnd), for as long as no block needs more than its
// masks. It returns the offset k of the block it stopped at and a status: ebFound, the
// string ends at end (offset from p) in that block, whose special mask is special (the
// stop is a quote or a control character: the caller looks); ebSlow, the block has a \u
// escape or a byte not allowed after a backslash before the string's end, to be read by
// escapedEnd (escapedBlock, which tells the two apart) with carry next (the carry into it);
// ebMore, k is n and next is the carry into the block at n. A block is read as
// escapedBlock reads it, less the \u escapes' hex digits.
func escapedBlocksGo(p *byte, n int, window, carry uint64) (k, end int, special, next uint64, status int) {
	s := unsafe.String(p, n)
	for ; k < n; k += blockSize {
		m, bs, bad, u := escapeBlockGo(s[k : k+blockSize])
		escaped, out := escapedBytes(bs&window, carry)
		stops := m &^ bs & window &^ escaped
		check := window
		if stops != 0 {
			check &= 1<<bits.TrailingZeros64(stops) - 1 // the bytes before the first stop
		}
		switch {
		case escaped&(bad|u)&check != 0:
			return k, 0, 0, carry, ebSlow
		case stops != 0:
			return k, k + bits.TrailingZeros64(stops), m, out, ebFound
		}
		window, carry = ^uint64(0), out
	}
	return n, 0, 0, carry, ebMore
}
