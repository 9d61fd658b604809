package jsonx

import "golang.org/x/sys/cpu"

// hasAVX2 reports whether blockMaskAVX2 may run.
func hasAVX2() bool { return cpu.X86.HasAVX2 }

// blockMaskAVX2 is the mask of the blockSize bytes at p (see specialMask): four compares
// over two 32-byte loads. It needs AVX2.
//
//go:noescape
func blockMaskAVX2(p *byte) uint64

// stopBlocksAVX2 reads the whole blocks of n bytes (a multiple of blockSize) at p, block
// after block, for one whose mask (see specialMask) is not zero: it returns that block's
// offset k and its mask, or n and 0 when none has a stop. It needs AVX2.
//
//go:noescape
func stopBlocksAVX2(p *byte, n int) (k int, mask uint64)

// safeBlocksAVX2 reads the n bytes at p in 32-byte blocks, as long as a whole block is
// left, for a byte AppendString cannot copy as it is: one below 0x20 or at or above 0x80,
// or '"', '\\', '<', '>' or '&' (see safePrefix). It returns the offset of the first such
// byte, or, if the blocks it read held none, where it stopped: n rounded down to 32. It
// needs AVX2.
//
//go:noescape
func safeBlocksAVX2(p *byte, n int) int

// escapeMaskAVX2 returns, for the blockSize bytes at p, the masks escapeMask returns
// (see there). It needs AVX2.
//
//go:noescape
func escapeMaskAVX2(p *byte) (special, bs, bad, u uint64)

// literalMaskAVX2 returns, for the blockSize bytes at p, the masks literalMasks returns
// (see there). It needs AVX2.
//
//go:noescape
func literalMaskAVX2(p *byte) (unsafe, bs, chg uint64)

// literalHalfAVX2 is literalMaskAVX2 for the 32 bytes at p (the masks' upper halves are
// clear). It needs AVX2.
//
//go:noescape
func literalHalfAVX2(p *byte) (unsafe, bs, chg uint64)

// asciiBlocksAVX2 returns the length of the longest prefix of the n bytes at p made of
// whole 128-byte blocks of ASCII: 0 if the first block has a byte at or above 0x80, and
// at most n rounded down to 128. It needs AVX2.
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
// into the block at n. It needs AVX2.
//
//go:noescape
func escapedBlocksAVX2(p *byte, n int, window, carry uint64) (k, end int, special, next uint64, status int)

// literalBlocksAVX2 is AppendLiteral's reading of the n bytes at p a block at a time,
// given the carry into the first (see escapedBytes), for as long as no block has a byte
// to stop at: it returns the offset k of the first block that has one, or n rounded up to
// blockSize, and the carry into that block; and for a block with a stop, its masks (see
// literalMasks). The bytes past n of the last block are read and ignored: n rounded up
// to blockSize bytes at p must be readable. It needs AVX2.
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
// is compactShuffles. It needs AVX2.
//
//go:noescape
func unescapeBlocksAVX2(dst, src *byte, n int, compact *[256]uint64) (read, written int)
