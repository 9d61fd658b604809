package openaichat

import (
	"strconv"
	"testing"
)

// TestAppendIndex holds appendIndex to strconv's decimal for the single digits it writes
// itself and the numbers around them it leaves to jsonx.AppendInt.
func TestAppendIndex(t *testing.T) {
	for _, n := range []int{-11, -10, -1, 0, 1, 5, 9, 10, 11, 99, 100, 12345} {
		if got, want := string(appendIndex([]byte("x"), n)), "x"+strconv.Itoa(n); got != want {
			t.Errorf("appendIndex(%d) = %q, want %q", n, got, want)
		}
	}
}
