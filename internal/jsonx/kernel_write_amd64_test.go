//go:build !purego

package jsonx

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"
)

// TestWriteKernels: safeBlocks, literalMaskAVX2, literalHalfAVX2 and
// literalBlocks answer as their Go twins on random text of any length; the bytes
// literalBlocks reads past the end (a buffer holds them) are ones that would stop it.
func TestWriteKernels(t *testing.T) {
	needAVX2(t)
	r := rand.New(rand.NewPCG(3, 46))
	pad := strings.Repeat(`"\<u/`+"\x01\xff", blockSize/7+1)[:blockSize]
	for range 20000 {
		s := kernelText(r, r.IntN(12), 1)
		s = s[:r.IntN(len(s)+1)]
		p := unsafe.StringData(s + pad) // the bytes past len(s), up to a block, readable
		if got, want := safeBlocks(p, len(s)), safeBlocksGo(p, len(s)); got != want {
			t.Fatalf("safeBlocks(%q) = %d, want %d", s, got, want)
		}
		for base := 0; base+blockSize <= len(s); base += blockSize {
			gu, gb, gc := literalMaskAVX2(unsafe.StringData(s[base:]))
			if wu, wb, wc := literalMaskGo(s[base : base+blockSize]); gu != wu || gb != wb || gc != wc {
				t.Fatalf("literalMaskAVX2(%q) = %064b %064b %064b, want %064b %064b %064b", s[base:base+blockSize], gu, gb, gc, wu, wb, wc)
			}
			gu, gb, gc = literalHalfAVX2(unsafe.StringData(s[base:]))
			if wu, wb, wc := literalMasksGo(s[base:base+32], 0); gu != wu || gb != wb || gc != wc {
				t.Fatalf("literalHalfAVX2(%q) = %064b %064b %064b, want %064b %064b %064b", s[base:base+32], gu, gb, gc, wu, wb, wc)
			}
		}
		carry := uint64(r.IntN(2))
		gk, gnext, gu, gb, gc := literalBlocks(p, len(s), carry)
		wk, wnext, wu, wb, wc := literalBlocksGo(p, len(s), carry)
		if gk != wk || gnext != wnext || wk < len(s) && (gu != wu || gb != wb || gc != wc) {
			t.Fatalf("literalBlocks(%q, %d) = %d %d %064b %064b %064b, want %d %d %064b %064b %064b",
				s, carry, gk, gnext, gu, gb, gc, wk, wnext, wu, wb, wc)
		}
	}
}

// TestLiteralBlocksPassesCleanBlocks: literalBlocks passes over a block by its nibble
// lookup alone when the block has no unsafe byte and no escape runs into it, so every
// byte value, at every offset of a block between clean ones, and clean bytes past n, give
// the twin's answers; and so do long texts that are mostly clean runs.
func TestLiteralBlocksPassesCleanBlocks(t *testing.T) {
	needAVX2(t)
	clean := strings.Repeat("The forecast is dry; 23 C (rain_mm: 0).", 8)[:blockSize]
	check := func(s string, carry uint64) {
		t.Helper()
		p := unsafe.StringData(s + clean) // clean bytes past len(s)
		gk, gnext, gu, gb, gc := literalBlocks(p, len(s), carry)
		wk, wnext, wu, wb, wc := literalBlocksGo(p, len(s), carry)
		if gk != wk || gnext != wnext || wk < len(s) && (gu != wu || gb != wb || gc != wc) {
			t.Fatalf("literalBlocks(%q, %d) = %d %d %064b %064b %064b, want %d %d %064b %064b %064b",
				s, carry, gk, gnext, gu, gb, gc, wk, wnext, wu, wb, wc)
		}
	}
	for c := range 256 {
		for _, at := range []int{0, 1, 15, 16, 31, 32, 33, 47, 62, 63} {
			b := []byte(clean + clean + clean)
			b[blockSize+at] = byte(c)
			for _, n := range []int{len(b), 2*blockSize + 10, blockSize + at + 1, blockSize + at} {
				check(string(b[:n]), 0)
				check(string(b[:n]), 1)
			}
		}
	}
	r := rand.New(rand.NewPCG(5, 55))
	for range 5000 {
		var b strings.Builder
		for range r.IntN(12) {
			if r.IntN(4) == 0 {
				b.WriteString(kernelPieces[r.IntN(len(kernelPieces))])
			} else {
				b.WriteString(clean[:r.IntN(blockSize)+1])
			}
		}
		s := b.String()
		check(s, uint64(r.IntN(2)))
	}
}
