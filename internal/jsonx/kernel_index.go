package jsonx

import "unsafe"

// The index kernel: the loop over the whole blocks of a text that builds a StringIndex
// (indexBlocks). This file holds its portable Go twin; kernels_amd64.go runs the AVX2
// one where the CPU has AVX2, and kernel_index_amd64_test.go holds it to this.

// indexBlocksGo is indexBlocks in portable Go: it reads the whole blocks of n bytes (a
// multiple of blockSize) at p and writes two words a block to dst (which has room for
// n/blockSize*2): the mask of its quotes not escaped, then that of its backslashes. A
// block's escaped bytes are those escapedBytes finds from its backslashes and the carry
// into it (carry, 0 or 1, for the first block). It stops after writing a block whose
// escaped bytes include one JSON does not allow after a backslash or a u (look is then
// their mask, not zero, and k the offset past that block), and otherwise reads all n
// bytes (k is n, look 0); next is the carry into the block at k. ctrl is not zero when
// a byte below 0x20 is among the blocks read.
func indexBlocksGo(p *byte, n int, dst *uint64, carry uint64) (k int, next, look, ctrl uint64) {
	s := unsafe.String(p, n)
	out := unsafe.Slice(dst, n/blockSize*2)
	for ; k < n; k += blockSize {
		b := s[k : k+blockSize]
		special, bs, bad, u := escapeBlockGo(b)
		var q uint64
		for j := 0; j < blockSize; j += 8 {
			q |= gather8(zeroBytes(load8(b[j:j+8])^(ones*'"'))) << j
		}
		ctrl |= special &^ bs &^ q
		escaped, out1 := escapedBytes(bs, carry)
		out[k/blockSize*2], out[k/blockSize*2+1] = q&^escaped, bs
		carry = out1
		if l := escaped & (bad | u); l != 0 {
			return k + blockSize, carry, l, ctrl
		}
	}
	return n, carry, 0, ctrl
}
