//go:build !amd64

package jsonx

// hasAVX2 reports whether blockMaskAVX2 may run: only on amd64.
func hasAVX2() bool { return false }

// blockMaskAVX2 is never called where hasAVX2 is false.
func blockMaskAVX2(*byte) uint64 { panic("jsonx: blockMaskAVX2 without AVX2") }

// stopBlocksAVX2 is never called where hasAVX2 is false.
func stopBlocksAVX2(*byte, int) (k int, mask uint64) { panic("jsonx: stopBlocksAVX2 without AVX2") }

// safeBlocksAVX2 is never called where hasAVX2 is false.
func safeBlocksAVX2(*byte, int) int { panic("jsonx: safeBlocksAVX2 without AVX2") }

// escapeMaskAVX2 is never called where hasAVX2 is false.
func escapeMaskAVX2(*byte) (special, bs, bad, u uint64) {
	panic("jsonx: escapeMaskAVX2 without AVX2")
}

// literalMaskAVX2 is never called where hasAVX2 is false.
func literalMaskAVX2(*byte) (unsafe, bs, chg uint64) { panic("jsonx: literalMaskAVX2 without AVX2") }

// literalHalfAVX2 is never called where hasAVX2 is false.
func literalHalfAVX2(*byte) (unsafe, bs, chg uint64) { panic("jsonx: literalHalfAVX2 without AVX2") }

// asciiBlocksAVX2 is never called where hasAVX2 is false.
func asciiBlocksAVX2(*byte, int) int { panic("jsonx: asciiBlocksAVX2 without AVX2") }

// escapedBlocksAVX2 is never called where hasAVX2 is false.
func escapedBlocksAVX2(*byte, int, uint64, uint64) (k, end int, special, next uint64, status int) {
	panic("jsonx: escapedBlocksAVX2 without AVX2")
}

// literalBlocksAVX2 is never called where hasAVX2 is false.
func literalBlocksAVX2(*byte, int, uint64) (k int, next, unsafe, bs, chg uint64) {
	panic("jsonx: literalBlocksAVX2 without AVX2")
}

// unescapeBlocksAVX2 is never called where hasAVX2 is false.
func unescapeBlocksAVX2(*byte, *byte, int, *[256]uint64) (read, written int) {
	panic("jsonx: unescapeBlocksAVX2 without AVX2")
}
