//go:build !purego

package jsonx

import (
	"strings"
	"testing"
	"unsafe"
)

// TestASCIIKernel: asciiBlocks answers as asciiBlocksGo with each byte at or above
// 0x80 (and a plain one) at each offset of runs of up to four 128-byte blocks, and each
// length.
func TestASCIIKernel(t *testing.T) {
	needAVX2(t)
	for n := 0; n <= 4*128+3; n += 5 {
		for _, c := range []byte{'a', 0x7f, 0x80, 0xc3, 0xff} {
			for pos := 0; pos < n; pos += 3 {
				b := []byte(strings.Repeat("abcdefg ", n/8+1)[:n])
				b[pos] = c
				p := unsafe.StringData(string(b))
				if got, want := asciiBlocks(p, n), asciiBlocksGo(p, n); got != want {
					t.Fatalf("asciiBlocks(%d bytes, %#x at %d) = %d, want %d", n, c, pos, got, want)
				}
			}
		}
	}
}
