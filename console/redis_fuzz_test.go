package console

import (
	"testing"
	"time"
)

// FuzzDecodeSession: a session's stored value, whatever Redis holds, decodes without
// panicking, and what it decodes encodes back to the same value.
func FuzzDecodeSession(f *testing.F) {
	// Seeds: values as encodeSession writes them (a sign-in's), and damaged ones.
	f.Add(encodeSession(session{actor: "ops", csrf: "0dP1sUeG0ymZ6m8pC4hJH1mY8xg1Jc8tGg9b3V5s2aQ", expires: time.UnixMilli(1796601600000)}))
	f.Add("1796601600000\ncsrf\n")
	f.Add("\n\n")
	f.Add("x\ny\nz")
	f.Fuzz(func(t *testing.T, raw string) {
		v, ok := decodeSession(raw)
		if ok && encodeSession(v) != raw {
			if _, again := decodeSession(encodeSession(v)); !again {
				t.Errorf("decoded %q from %q, which does not decode again", encodeSession(v), raw)
			}
		}
	})
}
