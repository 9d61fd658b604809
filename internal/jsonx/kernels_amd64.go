//go:build !purego

package jsonx

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// The kernel switch on amd64: each kernel the readers and writers call runs its AVX2
// assembly (kernels_amd64.s) where the CPU has AVX2, and otherwise its portable Go twin
// (kernel_*.go), the only code there is elsewhere (kernels_generic.go: another GOARCH, or
// -tags purego). The choice is useAVX2, read once per call of a kernel, and a kernel is a
// whole operation (a block's masks, or a loop over blocks), never a step of one: no
// algorithm tests for AVX2 inside its own loop.
//
// The kernels that read one block (specialMask, escapeMask, literalMasks) and the
// decoder (decodeEscaped) are Go functions here that test useAVX2 and call the assembly
// or the twin. The loops over blocks (stopBlocks, escapedBlocks, safeBlocks,
// literalBlocks, asciiBlocks) are the assembly itself: without AVX2 their first
// instructions jump to the twin (NOAVX2 in kernels_amd64.s), so a reader calls them
// directly, without a Go function between that could not be inlined (a call of two
// functions is over the inliner's budget: that frame cost AppendLiteral 10% on a short
// literal). Nor are they a table of function values: a call through one is never
// inlined and its pointer arguments escape, so the partial blocks copied to the stack
// moved to the heap (measured: BenchmarkValid 0 → 64 B/op, BenchmarkUnescape 176 → 240
// B/op and about twice the time).

// useAVX2 is the switch: whether the CPU has AVX2, as x/sys/cpu found it when the
// program started (GODEBUG=cpu.avx2=off clears it). It is set once, before main, and
// never changed; the assembly reads it too.
var useAVX2 = cpu.X86.HasAVX2

// specialMask is the mask of the block of s at blk (see specialMaskGo): blockMaskAVX2's,
// the last, partial block's from a copy.
func specialMask(s string, blk int) uint64 {
	if !useAVX2 {
		return specialMaskGo(s, blk)
	}
	if blk+blockSize <= len(s) {
		return blockMaskAVX2(unsafe.StringData(s[blk:]))
	}
	var b [blockSize]byte
	n := copy(b[:], s[blk:])
	return blockMaskAVX2(&b[0]) & (1<<n - 1)
}

// escapeMask is the masks of the block of s at blk for a string with escapes (see
// escapeMaskGo): escapeMaskAVX2's, the last, partial block's from a copy.
func escapeMask(s string, blk int) (special, bs, bad, u uint64) {
	if !useAVX2 {
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

// literalMasks is the masks AppendLiteral reads of the block of lit at base (see
// literalMasksGo). The last, partial block of a literal, which every literal has but
// those of a whole number of blocks, is read where it lies when the bytes after it up to
// the block's end are in the same memory page (they can be loaded without a fault, and
// their bits are cleared), and otherwise from a copy.
func literalMasks(lit string, base int) (unsafe_, bs, chg uint64) {
	if !useAVX2 {
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

// decodeEscaped writes the value of raw, the checked contents of a string with escapes,
// to out, which has room for len(raw) bytes, and returns its length. With AVX2, raw is
// decoded a block at a time from the escapes \", \\ and \/ (a JSON text sent as a
// string has one every few bytes), by dropping the backslashes that start them
// (unescapeBlocksAVX2), the last, partial block in place when the bytes after it up to a
// block are in its page (see samePage), else from a copy; each other escape byte by byte
// (decodeRun, which without AVX2 decodes the whole string).
func decodeEscaped(out []byte, raw string) int {
	if !useAVX2 {
		_, j := decodeRun(out, raw, 0, 0, len(raw))
		return j
	}
	i, j := 0, 0
	for len(raw)-i >= 16 { // shorter, the bytes are read sooner one by one
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

// The assembly kernels (kernels_amd64.s). Those named ...AVX2 need AVX2; the loops
// (stopBlocks, safeBlocks, asciiBlocks, escapedBlocks, literalBlocks) jump to their Go
// twins (stopBlocksGo, ...) where useAVX2 is false, and have the twins' contracts.

// blockMaskAVX2 is the mask of the blockSize bytes at p (see specialMask): four compares
// over two 32-byte loads.
//
//go:noescape
func blockMaskAVX2(p *byte) uint64

// stopBlocks passes over the whole blocks of n bytes at p without a stop (see
// stopBlocksGo).
//
//go:noescape
func stopBlocks(p *byte, n int) (k int, mask uint64)

// safeBlocks passes over the 32-byte blocks at p that AppendString copies as they are
// (see safeBlocksGo).
//
//go:noescape
func safeBlocks(p *byte, n int) int

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

// asciiBlocks passes over the 128-byte blocks of ASCII at p (see asciiBlocksGo).
//
//go:noescape
func asciiBlocks(p *byte, n int) int

// escapedBlocks is escapedEnd's loop over the whole blocks of n bytes at p (see
// escapedBlocksGo).
//
//go:noescape
func escapedBlocks(p *byte, n int, window, carry uint64) (k, end int, special, next uint64, status int)

// literalBlocks is AppendLiteral's loop over the blocks it has nothing to stop at (see
// literalBlocksGo). With AVX2 the bytes past n of the last block are read and ignored: n
// rounded up to blockSize bytes at p must be readable.
//
//go:noescape
func literalBlocks(p *byte, n int, carry uint64) (k int, next, unsafe, bs, chg uint64)

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

// indexBlocks is StringIndex.Build's loop over the whole blocks of n bytes at p (see
// indexBlocksGo).
//
//go:noescape
func indexBlocks(p *byte, n int, dst *uint64, carry uint64) (k int, next, look, ctrl uint64)
