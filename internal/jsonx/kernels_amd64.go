//go:build !purego

package jsonx

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// The kernel switch on amd64: each kernel the readers and writers call runs its AVX2
// assembly (kernels_amd64.s) where the CPU has AVX2, and otherwise its portable Go twin
// (kernel_*.go), the only code there is elsewhere (kernels_generic.go: another GOARCH, or
// -tags purego). The choice is cpu.X86.HasAVX2, which the runtime sets once before main
// (GODEBUG=cpu.avx2=off clears it) and nothing changes after: each kernel reads it once
// per call, and a kernel is a whole operation (a block's masks, or a loop over blocks),
// never a step of one, so no algorithm tests for AVX2 inside its own loop.
//
// The kernels are direct calls, not a table of function values chosen at init: a call
// through a function value is never inlined and its pointer arguments escape, so the
// partial blocks copied to the stack moved to the heap (measured: BenchmarkValid 0 → 64
// B/op, BenchmarkUnescape 176 → 240 B/op and about twice the time).

// specialMask is the mask of the block of s at blk (see specialMaskGo): blockMaskAVX2's,
// the last, partial block's from a copy.
func specialMask(s string, blk int) uint64 {
	if !cpu.X86.HasAVX2 {
		return specialMaskGo(s, blk)
	}
	if blk+blockSize <= len(s) {
		return blockMaskAVX2(unsafe.StringData(s[blk:]))
	}
	var b [blockSize]byte
	n := copy(b[:], s[blk:])
	return blockMaskAVX2(&b[0]) & (1<<n - 1)
}

// stopBlocks passes over the whole blocks without a stop (see stopBlocksGo).
func stopBlocks(p *byte, n int) (k int, mask uint64) {
	if !cpu.X86.HasAVX2 {
		return stopBlocksGo(p, n)
	}
	return stopBlocksAVX2(p, n)
}

// escapeMask is the masks of the block of s at blk for a string with escapes (see
// escapeMaskGo): escapeMaskAVX2's, the last, partial block's from a copy.
func escapeMask(s string, blk int) (special, bs, bad, u uint64) {
	if !cpu.X86.HasAVX2 {
		return escapeMaskGo(s, blk)
	}
	if blk+blockSize <= len(s) {
		return escapeMaskAVX2(unsafe.StringData(s[blk:]))
	}
	var b [blockSize]byte
	n := copy(b[:], s[blk:])
	special, bs, bad, u = escapeMaskAVX2(&b[0])
	keep := uint64(1)<<n - 1
	return special & keep, bs & keep, bad, u & keep
}

// escapedBlocks is escapedEnd's loop over whole blocks (see escapedBlocksGo).
func escapedBlocks(p *byte, n int, window, carry uint64) (k, end int, special, next uint64, status int) {
	if !cpu.X86.HasAVX2 {
		return escapedBlocksGo(p, n, window, carry)
	}
	return escapedBlocksAVX2(p, n, window, carry)
}

// safeBlocks passes over the 32-byte blocks AppendString copies as they are (see
// safeBlocksGo).
func safeBlocks(p *byte, n int) int {
	if !cpu.X86.HasAVX2 {
		return safeBlocksGo(p, n)
	}
	return safeBlocksAVX2(p, n)
}

// literalMasks is the masks AppendLiteral reads of the block of lit at base (see
// literalMasksGo). The last, partial block of a literal, which every literal has but
// those of a whole number of blocks, is read where it lies when the bytes after it up to
// the block's end are in the same memory page (they can be loaded without a fault, and
// their bits are cleared), and otherwise from a copy.
func literalMasks(lit string, base int) (unsafe_, bs, chg uint64) {
	if !cpu.X86.HasAVX2 {
		return literalMasksGo(lit, base)
	}
	if base+blockSize <= len(lit) {
		return literalMaskAVX2(unsafe.StringData(lit[base:]))
	}
	n := len(lit) - base
	keep := uint64(1)<<n - 1
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
	if !samePage(p, blockSize) {
		var b [blockSize]byte
		copy(b[:], lit[base:])
		p = &b[0]
	}
	unsafe_, bs, chg = literalMaskAVX2(p)
	return unsafe_ & keep, bs & keep, chg & keep
}

// literalBlocks passes over the blocks of lit from base on that AppendLiteral has nothing
// to stop at (see literalBlocksGo), in one call of literalBlocksAVX2: the whole blocks,
// and the last, partial one too when the bytes after it up to a block lie in its page
// (see samePage). If that one is not in the call, literalBlocks stops at it, with its
// masks (literalMasks').
func literalBlocks(lit string, base int, carry uint64) (k int, next, unsafe_, bs, chg uint64) {
	if !cpu.X86.HasAVX2 {
		return literalBlocksGo(unsafe.StringData(lit[base:]), len(lit)-base, carry)
	}
	span := (len(lit) - base) &^ (blockSize - 1)
	if base+span < len(lit) && samePage(unsafe.StringData(lit[base+span:]), blockSize) {
		span = len(lit) - base
	}
	next = carry
	if span > 0 {
		k, next, unsafe_, bs, chg = literalBlocksAVX2(unsafe.StringData(lit[base:]), span, carry)
		if k < span || base+k >= len(lit) {
			return k, next, unsafe_, bs, chg
		}
	}
	unsafe_, bs, chg = literalMasks(lit, base+k)
	return k, next, unsafe_, bs, chg
}

// asciiBlocks passes over the 128-byte blocks of ASCII at p (see asciiBlocksGo).
func asciiBlocks(p *byte, n int) int {
	if !cpu.X86.HasAVX2 {
		return asciiBlocksGo(p, n)
	}
	return asciiBlocksAVX2(p, n)
}

// decodeEscaped writes the value of raw, the checked contents of a string with escapes,
// to out, which has room for len(raw) bytes, and returns its length. With AVX2, raw is
// decoded a block at a time from the escapes \", \\ and \/ (a JSON text sent as a
// string has one every few bytes), by dropping the backslashes that start them
// (unescapeBlocksAVX2), the last, partial block in place when the bytes after it up to a
// block are in its page (see samePage), else from a copy; each other escape byte by byte
// (decodeRun, which without AVX2 decodes the whole string).
func decodeEscaped(out []byte, raw string) int {
	i, j := 0, 0
	for cpu.X86.HasAVX2 && len(raw)-i >= 16 { // shorter, the bytes are read sooner one by one
		if whole := (len(raw) - i) &^ (blockSize - 1); whole > 0 {
			k, w := unescapeBlocksAVX2(&out[j], unsafe.StringData(raw[i:]), whole, &compactShuffles)
			if i, j = i+k, j+w; k == whole {
				continue
			}
		} else {
			var dec [blockSize]byte
			n := len(raw) - i
			p := unsafe.StringData(raw[i:])
			if !samePage(p, blockSize) {
				var in [blockSize]byte
				copy(in[:], raw[i:])
				p = &in[0]
			}
			k, w := unescapeBlocksAVX2(&dec[0], p, n, &compactShuffles)
			if i, j = i+k, j+copy(out[j:], dec[:w]); k == n {
				return j
			}
		}
		i, j = decodeRun(out, raw, i, j, i+1) // the escape at i
	}
	_, j = decodeRun(out, raw, i, j, len(raw))
	return j
}

// samePage reports whether the n bytes from p lie in one 4 KiB page (the smallest page
// size): loading them cannot fault where loading p cannot, whatever object holds p.
func samePage(p *byte, n int) bool {
	return uintptr(unsafe.Pointer(p))&(4096-1) <= 4096-uintptr(n)
}

// compactShuffles is the table of unescapeBlocksAVX2's byte shuffles: entry m moves the
// bytes k of an eight-byte word whose bit k in m is clear to its start, in order (the
// byte 0x80 makes the rest zero).
var compactShuffles = func() (t [256]uint64) {
	for m := range t {
		k := 0
		for b := range 8 {
			if m&(1<<b) == 0 {
				t[m] |= uint64(b) << (8 * k)
				k++
			}
		}
		for ; k < 8; k++ {
			t[m] |= 0x80 << (8 * k)
		}
	}
	return t
}()

// The assembly kernels (kernels_amd64.s). Each needs AVX2.

// blockMaskAVX2 is the mask of the blockSize bytes at p (see specialMask): four compares
// over two 32-byte loads.
//
//go:noescape
func blockMaskAVX2(p *byte) uint64

// stopBlocksAVX2 reads the whole blocks of n bytes (a multiple of blockSize) at p, block
// after block, for one whose mask (see specialMask) is not zero: it returns that block's
// offset k and its mask, or n and 0 when none has a stop.
//
//go:noescape
func stopBlocksAVX2(p *byte, n int) (k int, mask uint64)

// safeBlocksAVX2 reads the n bytes at p in 32-byte blocks, as long as a whole block is
// left, for a byte AppendString cannot copy as it is: one below 0x20 or at or above 0x80,
// or '"', '\\', '<', '>' or '&' (see safePrefix). It returns the offset of the first such
// byte, or, if the blocks it read held none, where it stopped: n rounded down to 32.
//
//go:noescape
func safeBlocksAVX2(p *byte, n int) int

// escapeMaskAVX2 returns, for the blockSize bytes at p, the masks escapeMask returns
// (see there).
//
//go:noescape
func escapeMaskAVX2(p *byte) (special, bs, bad, u uint64)

// literalMaskAVX2 returns, for the blockSize bytes at p, the masks literalMasks returns
// (see there).
//
//go:noescape
func literalMaskAVX2(p *byte) (unsafe, bs, chg uint64)

// literalHalfAVX2 is literalMaskAVX2 for the 32 bytes at p (the masks' upper halves are
// clear).
//
//go:noescape
func literalHalfAVX2(p *byte) (unsafe, bs, chg uint64)

// asciiBlocksAVX2 returns the length of the longest prefix of the n bytes at p made of
// whole 128-byte blocks of ASCII: 0 if the first block has a byte at or above 0x80, and
// at most n rounded down to 128.
//
//go:noescape
func asciiBlocksAVX2(p *byte, n int) int

// escapedBlocksAVX2 is escapedEnd's loop over the whole blocks of n bytes (a multiple of
// blockSize) at p, starting with the given window and carry for the first block (see
// escapedEnd), for as long as no block needs more than its masks. It returns the offset k
// of the block it stopped at and a status: ebFound, the string ends at end (offset from
// p) in that block, whose special mask is special (the stop is a quote or a control
// character: the caller looks); ebBad, a byte not allowed after a backslash comes before
// the string's end; ebSlow, the block has a \u escape before the string's end, to be read
// by escapedEnd with carry next (the carry into it); ebMore, k is n and next is the carry
// into the block at n.
//
//go:noescape
func escapedBlocksAVX2(p *byte, n int, window, carry uint64) (k, end int, special, next uint64, status int)

// literalBlocksAVX2 is AppendLiteral's reading of the n bytes at p a block at a time,
// given the carry into the first (see escapedBytes), for as long as no block has a byte
// to stop at: it returns the offset k of the first block that has one, or n rounded up to
// blockSize, and the carry into that block; and for a block with a stop, its masks (see
// literalMasks). The bytes past n of the last block are read and ignored: n rounded up
// to blockSize bytes at p must be readable.
//
//go:noescape
func literalBlocksAVX2(p *byte, n int, carry uint64) (k int, next, unsafe, bs, chg uint64)

// unescapeBlocksAVX2 decodes the n bytes at src, the contents of a checked JSON string
// from outside an escape on, into dst, a block of blockSize bytes at a time, as long as
// it has no \u escape: it drops the backslash that starts each escape, writes the
// character of \b \f \n \r \t, and copies every other byte. It returns read, the
// offset of the first backslash that starts a \u escape or that is the last byte (its
// escape runs past n), or n if there is none; and the bytes written, the value of
// src[:read]. It reads whole blocks, the bytes past n of the last ignored: n rounded up
// to blockSize bytes at src must be readable, and dst must have room for as many. compact
// is compactShuffles.
//
//go:noescape
func unescapeBlocksAVX2(dst, src *byte, n int, compact *[256]uint64) (read, written int)
