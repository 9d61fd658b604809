//go:build !purego

package jsonx

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"
)

// TestStopsKernels: blockMaskAVX2 and stopBlocks answer as blockMaskGo and
// stopBlocksGo on random blocks, and with each byte value at each offset of a run of
// plain blocks.
func TestStopsKernels(t *testing.T) {
	needAVX2(t)
	check := func(s string) {
		t.Helper()
		for blk := 0; blk < len(s); blk += blockSize {
			if got, want := blockMaskAVX2(unsafe.StringData(s[blk:])), blockMaskGo(s[blk:blk+blockSize]); got != want {
				t.Fatalf("blockMaskAVX2(%q) = %064b, want %064b", s[blk:blk+blockSize], got, want)
			}
		}
		gk, gm := stopBlocks(unsafe.StringData(s), len(s))
		if wk, wm := stopBlocksGo(unsafe.StringData(s), len(s)); gk != wk || gm != wm {
			t.Fatalf("stopBlocks(%q) = %d %064b, want %d %064b", s, gk, gm, wk, wm)
		}
	}
	r := rand.New(rand.NewPCG(1, 46))
	for range 5000 {
		check(kernelText(r, r.IntN(12), blockSize))
	}
	for c := range 256 {
		for pos := range 3 * blockSize {
			b := []byte(strings.Repeat("p", 3*blockSize))
			b[pos] = byte(c)
			check(string(b))
		}
	}
}
