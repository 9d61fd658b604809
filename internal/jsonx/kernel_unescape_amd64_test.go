//go:build !purego

package jsonx

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestUnescapeKernel: the AVX2 decoder (decodeEscaped with AVX2, unescapeBlocksAVX2 and
// its partial blocks) writes what decodeRun, its portable twin, writes, for random
// strings with escapes of any length.
func TestUnescapeKernel(t *testing.T) {
	needAVX2(t)
	r := rand.New(rand.NewPCG(4, 46))
	pieces := []string{`\\`, `\"`, `\/`, `\n`, `\b`, `\f`, `\r`, `\t`, `\u00e9`, `\ud83d\ude00`, `\ud83d`, "é", "a", "u", strings.Repeat("b", 40)}
	for range 20000 {
		var b strings.Builder
		for range r.IntN(40) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		raw := b.String()
		got := make([]byte, len(raw))
		want := make([]byte, len(raw))
		g := decodeEscaped(got, raw)
		_, w := decodeRun(want, raw, 0, 0, len(raw))
		if string(got[:g]) != string(want[:w]) {
			t.Fatalf("decodeEscaped(%q) = %q, decodeRun %q", raw, got[:g], want[:w])
		}
	}
}
