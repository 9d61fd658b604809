//go:build purego || !amd64

package jsonx

// The kernel switch where there is no assembly (another GOARCH, or -tags purego): each
// kernel is its portable Go twin. kernels_amd64.go is the same list for amd64.

// specialMask is the mask of the block of s at blk (see specialMaskGo).
func specialMask(s string, blk int) uint64 { return specialMaskGo(s, blk) }

// stopBlocks passes over the whole blocks without a stop (see stopBlocksGo).
func stopBlocks(p *byte, n int) (k int, mask uint64) { return stopBlocksGo(p, n) }

// escapeMask is the masks of the block of s at blk for a string with escapes (see
// escapeMaskGo).
func escapeMask(s string, blk int) (special, bs, bad, u uint64) { return escapeMaskGo(s, blk) }

// escapedBlocks is escapedEnd's loop over whole blocks (see escapedBlocksGo).
func escapedBlocks(p *byte, n int, window, carry uint64) (k, end int, special, next uint64, status int) {
	return escapedBlocksGo(p, n, window, carry)
}

// safeBlocks passes over the 32-byte blocks AppendString copies as they are (see
// safeBlocksGo).
func safeBlocks(p *byte, n int) int { return safeBlocksGo(p, n) }

// literalMasks is the masks AppendLiteral reads of the block of lit at base (see
// literalMasksGo).
func literalMasks(lit string, base int) (unsafe_, bs, chg uint64) { return literalMasksGo(lit, base) }

// literalBlocks is AppendLiteral's loop over the blocks it has nothing to stop at (see
// literalBlocksGo).
func literalBlocks(p *byte, n int, carry uint64) (k int, next, unsafe_, bs, chg uint64) {
	return literalBlocksGo(p, n, carry)
}

// asciiBlocks passes over the 128-byte blocks of ASCII at p (see asciiBlocksGo).
func asciiBlocks(p *byte, n int) int { return asciiBlocksGo(p, n) }

// decodeEscaped writes the value of raw, the checked contents of a string with escapes,
// to out, which has room for len(raw) bytes, and returns its length (see decodeRun).
func decodeEscaped(out []byte, raw string) int {
	_, j := decodeRun(out, raw, 0, 0, len(raw))
	return j
}

// indexBlocks is StringIndex.Build's loop over whole blocks (see indexBlocksGo).
func indexBlocks(p *byte, n int, dst *uint64, carry uint64) (k int, next, look, ctrl uint64) {
	return indexBlocksGo(p, n, dst, carry)
}
