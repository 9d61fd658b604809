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
