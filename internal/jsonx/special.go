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
			if whole := (len(s) - blk) &^ (blockSize - 1); whole > 0 && hasAVX2() {
				// The whole blocks from blk on, in one call that stops at the first with a
				// stop: a long string's blocks cost neither a call nor this loop each.
				k, bm := stopBlocksAVX2(unsafe.StringData(s[blk:]), whole)
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
// escape at a time. With AVX2, the whole blocks are read in one call of a loop
// (escapedBlocksAVX2) that hands back only a block with a \u escape and the input's last,
// partial block: a JSON text sent as a string (tool arguments, tool results) has an
// escape every few bytes, and a call per block cost more than the block's reading.
func (sc *Scanner) escapedEnd(i, blk int) int {
	s := sc.s
	window := ^uint64(0) << ((i - blk) & (blockSize - 1)) // the bytes from i on
	var carry uint64                                      // 1 if the block's first byte is escaped
	for {
		if whole := (len(s) - blk) &^ (blockSize - 1); whole > 0 && hasAVX2() {
			k, end, m, next, status := escapedBlocksAVX2(unsafe.StringData(s[blk:]), whole, window, carry)
			switch status {
			case ebFound:
				sc.mask, sc.blk1 = m, blk+k+1
				if end += blk; s[end] != '"' {
					return -1 // a control character
				}
				return end
			case ebBad:
				return -1
			}
			// ebSlow or ebMore: the block at blk+k, one with a \u escape or the input's
			// last, partial one, is read below.
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

// Statuses of escapedBlocksAVX2.
const (
	ebMore = iota
	ebFound
	ebBad
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

// escapeMask returns, for the block of s at blk, its special mask (specialMask's) and the
// masks of its backslashes (bs), of the bytes JSON does not allow after a backslash (bad:
// all but " \\ / b f n r t u) and of its u bytes: what escapedEnd reads of a block, from
// one pass over it. Bits of offsets at or beyond len(s) are clear in special, bs and u
// (set in bad).
func escapeMask(s string, blk int) (special, bs, bad, u uint64) {
	if blk+blockSize <= len(s) {
		if hasAVX2() {
			return escapeMaskAVX2(unsafe.StringData(s[blk:]))
		}
		return escapeMaskGo(s[blk : blk+blockSize])
	}
	var b [blockSize]byte
	n := copy(b[:], s[blk:])
	if hasAVX2() {
		special, bs, bad, u = escapeMaskAVX2(&b[0])
	} else {
		special, bs, bad, u = escapeMaskGo(string(b[:]))
	}
	keep := uint64(1)<<n - 1
	return special & keep, bs & keep, bad, u & keep
}

// escapeMaskGo is escapeMask of b, blockSize bytes, in portable Go.
func escapeMaskGo(b string) (special, bs, bad, u uint64) {
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

// literalMasks returns, for lit[base:base+blockSize], the masks AppendLiteral reads:
// unsafe, the bytes AppendString cannot copy as they are (see safePrefix); bs, the
// backslashes; chg, the bytes '/' and 'u', which AppendString does not write with the
// escapes that may precede them. Bits past the end of lit are clear in all three.
func literalMasks(lit string, base int) (unsafe_, bs, chg uint64) {
	if base+blockSize <= len(lit) {
		if hasAVX2() {
			return literalMaskAVX2(unsafe.StringData(lit[base:]))
		}
		return literalMaskGo(lit[base : base+blockSize])
	}
	n := len(lit) - base
	keep := uint64(1)<<n - 1
	if hasAVX2() {
		// The last, partial block of a literal, which every literal has but those of a
		// whole number of blocks: when the bytes after it up to the block's end lie in the
		// same memory page, they can be loaded without a fault, and their bits are cleared.
		// Otherwise the rest of lit is copied into zeros.
		p := unsafe.StringData(lit[base:])
		if n <= 32 { // a short literal (an id, a name): one half block
			if samePage(p, 32) {
				unsafe_, bs, chg = literalHalfAVX2(p)
				return unsafe_ & keep, bs & keep, chg & keep
			}
			var b [32]byte
			copy(b[:], lit[base:])
			unsafe_, bs, chg = literalHalfAVX2(&b[0])
			return unsafe_ & keep, bs & keep, chg & keep
		}
		if samePage(p, blockSize) {
			unsafe_, bs, chg = literalMaskAVX2(p)
			return unsafe_ & keep, bs & keep, chg & keep
		}
	}
	var b [blockSize]byte
	copy(b[:], lit[base:])
	if hasAVX2() {
		unsafe_, bs, chg = literalMaskAVX2(&b[0])
	} else {
		unsafe_, bs, chg = literalMaskGo(string(b[:]))
	}
	return unsafe_ & keep, bs & keep, chg & keep
}

// samePage reports whether the n bytes from p lie in one 4 KiB page (the smallest page
// size): loading them cannot fault where loading p cannot, whatever object holds p.
func samePage(p *byte, n int) bool {
	return uintptr(unsafe.Pointer(p))&(4096-1) <= 4096-uintptr(n)
}

// literalMaskGo is literalMasks of b, blockSize bytes, in portable Go.
func literalMaskGo(b string) (unsafe_, bs, chg uint64) {
	for k := 0; k < blockSize; k += 8 {
		w := load8(b[k : k+8])
		bs |= gather8(zeroBytes(w^(ones*'\\'))) << k
		chg |= gather8(zeroBytes(w^(ones*'/'))|zeroBytes(w^(ones*'u'))) << k
	}
	return unsafeMaskGo(b), bs, chg
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
