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

// quickEnd is stringEnd's common case, small enough to be inlined into its callers: the
// string starting at i ends in the block whose mask is kept, at its first stop, a quote.
// It returns -1 when that is not so, and stringEnd must be asked.
func (sc *Scanner) quickEnd(i int) int {
	if i&^(blockSize-1)+1 == sc.blk1 {
		if r := sc.mask >> (i & (blockSize - 1)); r != 0 {
			if e := i + bits.TrailingZeros64(r); e < len(sc.s) && sc.s[e] == '"' {
				return e
			}
		}
	}
	return -1
}

// stringEnd returns the offset of the closing quote of the string whose contents start
// at i, or -1 if the string is malformed, and whether it contains escapes. A string
// without escapes is read from the special masks alone; from its first backslash on,
// escapedEnd reads it a block at a time.
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
				return -1, false
			}
			if whole := (len(s) - blk) &^ (blockSize - 1); whole > 0 {
				// The whole blocks from blk on, in one call that stops at the first with a
				// stop: a long string's blocks cost neither a call nor this loop each.
				k, bm := stopBlocks(unsafe.StringData(s[blk:]), whole)
				if blk += k; k < whole {
					i, m = blk, bm
					sc.mask, sc.blk1 = m, blk+1
					continue
				}
				if blk >= len(s) {
					return -1, false
				}
			}
			i = blk
			m = specialMask(s, blk)
			sc.mask, sc.blk1 = m, blk+1
			continue
		}
		i += bits.TrailingZeros64(r)
		switch s[i] {
		case '"':
			return i, false
		case '\\':
			return sc.escapedEnd(i, blk), true
		}
		return -1, false // a control character
	}
}

// escapedEnd is stringEnd from the backslash at i on; blk is the start of i's block. Each
// block's special mask and escapes are found at once, in one pass over it (escapeMask),
// as bit masks: the bytes that follow an odd run of backslashes are the escaped ones (a
// quote among them does not end the string), each must be one JSON allows after a
// backslash, and each u must be followed by four hex digits, which are checked one
// escape at a time. The whole blocks are read in one call of a loop (escapedBlocks)
// that hands back only a block with a \u escape or a bad one and the input's last,
// partial block: a JSON text sent as a string (tool arguments, tool results) has an
// escape every few bytes, and a call per block cost more than the block's reading.
func (sc *Scanner) escapedEnd(i, blk int) int {
	s := sc.s
	window := ^uint64(0) << ((i - blk) & (blockSize - 1)) // the bytes from i on
	var carry uint64                                      // 1 if the block's first byte is escaped
	for {
		if whole := (len(s) - blk) &^ (blockSize - 1); whole > 0 {
			k, end, m, next, status := escapedBlocks(unsafe.StringData(s[blk:]), whole, window, carry)
			if status == ebFound {
				sc.mask, sc.blk1 = m, blk+k+1
				if end += blk; s[end] != '"' {
					return -1 // a control character
				}
				return end
			}
			// ebSlow or ebMore: the block at blk+k, one with a \u escape or a bad one, or
			// the input's last, partial one, is read below.
			if k > 0 {
				window = ^uint64(0)
			}
			if blk, carry = blk+k, next; blk >= len(s) {
				return -1
			}
		}
		end, next, done := sc.escapedBlock(blk, window, carry)
		if done {
			return end
		}
		if blk += blockSize; blk >= len(s) {
			return -1
		}
		window, carry = ^uint64(0), next
	}
}

// Statuses of escapedBlocks.
const (
	ebMore = iota
	ebFound
	ebSlow
)

// escapedBlock reads the block at blk of a string with escapes, from the bytes in window
// on, given the carry into the block (see escapedBytes). done reports whether the string
// ends in it or is malformed there (end is then its closing quote, or -1); if not, next is
// the carry into the block after.
func (sc *Scanner) escapedBlock(blk int, window, carry uint64) (end int, next uint64, done bool) {
	s := sc.s
	m, bs, bad, u := escapeMask(s, blk)
	escaped, next := escapedBytes(bs&window, carry)
	// Stops: the quotes and control characters not escaped (an escaped control
	// character is a bad escape, and so caught below).
	stops := m &^ bs & window &^ escaped
	check := window
	if stops != 0 {
		check &= 1<<bits.TrailingZeros64(stops) - 1 // the bytes before the first stop
	}
	if escaped&bad&check != 0 {
		return -1, 0, true
	}
	for us := escaped & u & check; us != 0; us &= us - 1 {
		k := blk + bits.TrailingZeros64(us)
		if k+5 > len(s) || !isHex(s[k+1]) || !isHex(s[k+2]) || !isHex(s[k+3]) || !isHex(s[k+4]) {
			return -1, 0, true
		}
	}
	if stops != 0 {
		end := blk + bits.TrailingZeros64(stops)
		sc.mask, sc.blk1 = m, blk+1
		if s[end] != '"' {
			return -1, 0, true // a control character
		}
		return end, 0, true
	}
	return 0, next, false
}

// escapedBytes returns the mask of the bytes escaped by a backslash in a block whose
// backslashes are bs (those before the string's start cleared), given whether the block's
// first byte is escaped by the block before (carry, 0 or 1); and the same carry for the
// next block. A run of backslashes escapes its every second byte and, if the run is odd
// in length, the byte after it: the runs starting at an odd offset are made to end, by
// an addition's carry, at the opposite parity of those starting at an even one.
func escapedBytes(bs, carry uint64) (escaped, next uint64) {
	const even = 0x5555555555555555
	bs &^= carry // an escaped backslash starts no escape
	follows := bs<<1 | carry
	oddStarts := bs &^ even &^ follows
	sum, next := bits.Add64(oddStarts, bs, 0)
	return (even ^ sum<<1) & follows, next
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
