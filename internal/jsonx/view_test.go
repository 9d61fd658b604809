package jsonx

import "testing"

// TestEqual holds Equal to ==: the same memory, equal bytes elsewhere, a prefix of the
// same memory (one start, another length), different bytes of one length, empty ones.
func TestEqual(t *testing.T) {
	s := "anth/claude-bench"
	other := string([]byte(s)) // the same bytes, other memory
	for _, c := range []struct{ a, b string }{
		{s, s}, {s, other}, {s, s[:4]}, {s[:4], s[5:9]}, {s, "anth/claude-bencH"}, {"", ""}, {"", s[:0]}, {s[3:3], ""}, {"a", ""},
	} {
		if got, want := Equal(c.a, c.b), c.a == c.b; got != want {
			t.Errorf("Equal(%q, %q) = %v, want %v", c.a, c.b, got, want)
		}
	}
}
