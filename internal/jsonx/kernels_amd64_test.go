//go:build !purego

package jsonx

import (
	"math/rand/v2"
	"strings"
	"testing"

	"golang.org/x/sys/cpu"
)

// The kernel tests (kernel_*_amd64_test.go) hold each AVX2 kernel to its portable Go twin
// on the same bytes; the package's other tests hold the twins, and the kernels as this
// machine runs them, to their byte-at-a-time definitions.

// needAVX2 skips a test of the AVX2 kernels where the CPU has no AVX2 (or
// GODEBUG=cpu.avx2=off hides it).
func needAVX2(t *testing.T) {
	t.Helper()
	if !cpu.X86.HasAVX2 {
		t.Skip("no AVX2")
	}
}

// kernelPieces are the bytes and runs the kernels tell apart: every byte a mask marks,
// the escapes JSON allows and some it does not, and plain runs long enough to fill a
// block.
var kernelPieces = []string{
	`"`, `\`, `\\`, `\"`, `\/`, `\n`, `\b`, `\u00e9`, `\u12`, `\x`, "\x00", "\x01", "\x1f",
	"<", ">", "&", "/", "u", "é", "\xff", "\x80", "\u2028", " ", "~", "a",
	strings.Repeat("b", 40), strings.Repeat(`\`, 63), strings.Repeat(`\"`, 20),
}

// kernelText returns n random pieces (kernelPieces) padded with plain bytes to a length
// that is a multiple of mult.
func kernelText(r *rand.Rand, n, mult int) string {
	var b strings.Builder
	for range n {
		b.WriteString(kernelPieces[r.IntN(len(kernelPieces))])
	}
	for b.Len()%mult != 0 {
		b.WriteByte('p')
	}
	return b.String()
}

// forKernelTexts calls check with 20,000 random texts of whole blocks (kernelText) from a
// generator seeded with seed, which check may draw its own choices from.
func forKernelTexts(seed uint64, check func(r *rand.Rand, s string)) {
	r := rand.New(rand.NewPCG(seed, 46))
	for range 20000 {
		if s := kernelText(r, r.IntN(30), blockSize); s != "" {
			check(r, s)
		}
	}
}
