package jsonx

import "unsafe"

// The ASCII kernel: the loop over a body's 128-byte blocks of ASCII, which ValidUTF8
// passes over before utf8.ValidString reads the rest (asciiBlocks). This file holds its
// portable Go twin; kernels_amd64.go runs the AVX2 one where the CPU has AVX2, and
// kernel_ascii_amd64_test.go holds that to this.

// asciiBlocksGo is asciiBlocks in portable Go: the length of the longest prefix of the n
// bytes at p made of whole 128-byte blocks of ASCII: 0 if the first block has a byte at
// or above 0x80, and at most n rounded down to 128.
func asciiBlocksGo(p *byte, n int) int {
	s := unsafe.String(p, n)
	k := 0
	for ; k+128 <= n; k += 128 {
		var or uint64
		for j := k; j < k+128; j += 8 {
			or |= load8(s[j : j+8])
		}
		if or&highs != 0 {
			break
		}
	}
	return k
}
