//go:build !purego

package jsonx

import (
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestEscapesKernels: escapeMaskAVX2 answers as escapeBlockGo, and escapedBlocks as
// escapedBlocksGo (its offset and status, and what the status says is meaningful: the
// end and special mask of ebFound, the carry of ebSlow and ebMore), on random text with
// escapes, from each window and carry.
func TestEscapesKernels(t *testing.T) {
	needAVX2(t)
	forKernelTexts(2, func(r *rand.Rand, s string) {
		for blk := 0; blk < len(s); blk += blockSize {
			gs, gb, gbad, gu := escapeMaskAVX2(unsafe.StringData(s[blk:]))
			if ws, wb, wbad, wu := escapeBlockGo(s[blk : blk+blockSize]); gs != ws || gb != wb || gbad != wbad || gu != wu {
				t.Fatalf("escapeMaskAVX2(%q) = %064b %064b %064b %064b, want %064b %064b %064b %064b",
					s[blk:blk+blockSize], gs, gb, gbad, gu, ws, wb, wbad, wu)
			}
		}
		window, carry := ^uint64(0)<<r.IntN(blockSize), uint64(r.IntN(2))
		p := unsafe.StringData(s)
		gk, gend, gspecial, gnext, gstatus := escapedBlocks(p, len(s), window, carry)
		wk, wend, wspecial, wnext, wstatus := escapedBlocksGo(p, len(s), window, carry)
		ok := gk == wk && gstatus == wstatus
		switch wstatus {
		case ebFound:
			ok = ok && gend == wend && gspecial == wspecial
		case ebSlow, ebMore:
			ok = ok && gnext == wnext
		}
		if !ok {
			t.Fatalf("escapedBlocks(%q, %064b, %d) = k %d end %d special %064b next %d status %d, want k %d end %d special %064b next %d status %d",
				s, window, carry, gk, gend, gspecial, gnext, gstatus, wk, wend, wspecial, wnext, wstatus)
		}
	})
}
