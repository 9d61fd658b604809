//go:build !purego

package jsonx

import (
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestIndexKernels: indexBlocks answers as indexBlocksGo (its offset, carry, look mask,
// whether it saw a control byte, and the words it wrote) on random text with escapes,
// from each carry.
func TestIndexKernels(t *testing.T) {
	needAVX2(t)
	forKernelTexts(3, func(r *rand.Rand, s string) {
		carry := uint64(r.IntN(2))
		p := unsafe.StringData(s)
		got := make([]uint64, len(s)/blockSize*2)
		want := make([]uint64, len(s)/blockSize*2)
		gk, gnext, glook, gctrl := indexBlocks(p, len(s), &got[0], carry)
		wk, wnext, wlook, wctrl := indexBlocksGo(p, len(s), &want[0], carry)
		ok := gk == wk && gnext == wnext && glook == wlook && (gctrl != 0) == (wctrl != 0)
		for j := range gk / blockSize * 2 {
			ok = ok && got[j] == want[j]
		}
		if !ok {
			t.Fatalf("indexBlocks(%q, %d) = k %d next %d look %064b ctrl %t words %x, want k %d next %d look %064b ctrl %t words %x",
				s, carry, gk, gnext, glook, gctrl != 0, got, wk, wnext, wlook, wctrl != 0, want)
		}
	})
}
