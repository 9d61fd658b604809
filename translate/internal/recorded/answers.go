// Package recorded reads the recorded provider traffic under testdata/fixtures for the
// translate packages' tests and fuzzers. It defines no flags and imports no provider, so
// any of them can use it.
package recorded

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Answers reads the recorded answers the fuzzers and fast-reader tests of a provider are
// seeded with: every file matching a pattern (filepath.Glob, relative to the test's
// package directory) or named outright, except the recorded requests beside them
// (*.request.json). It fails tb when a pattern is malformed, a file cannot be read, or
// fewer than min answers are found (a fixture directory moved away must not leave a
// fuzzer without seeds).
func Answers(tb testing.TB, min int, patterns ...string) [][]byte {
	tb.Helper()
	var out [][]byte
	for _, pat := range patterns {
		paths, err := filepath.Glob(pat)
		if err != nil {
			tb.Fatal(err)
		}
		for _, p := range paths {
			if strings.HasSuffix(p, ".request.json") {
				continue
			}
			b, err := os.ReadFile(p)
			if err != nil {
				tb.Fatal(err)
			}
			out = append(out, b)
		}
	}
	if len(out) < min {
		tb.Fatalf("found %d recorded answers in %v, want at least %d", len(out), patterns, min)
	}
	return out
}
