package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRun runs the harness briefly: every target answers every request correctly (the
// harness fails on any non-200 or unterminated stream) and the table has all rows. It
// asserts nothing about speed.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(40, 4, 5, &out); err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"upstream direct", "raw proxy", "agate passthrough", "agate mock"} {
		if n := strings.Count(out.String(), row); n != 2 {
			t.Errorf("%q appears %d times, want 2 (json and stream):\n%s", row, n, out.String())
		}
	}
}
