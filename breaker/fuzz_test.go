package breaker

import (
	"testing"
	"time"
)

// FuzzReceive: a message on the channel, whatever its bytes, never panics and changes only
// a configured key's circuit. Seeded with the messages publish writes.
func FuzzReceive(f *testing.F) {
	for _, seed := range []string{"open 1764590430000 main/gpt-main", "closed 0 main/gpt-main", "open x main/gpt-main",
		"open 1764590430000 other/model", "open", "", "closed 0 ", "open -1 main/gpt-main", "open 99999999999999999999 main/gpt-main"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		s := New(Options{})
		s.Configure([]Circuit{{Key: "main/gpt-main", Policy: Policy{Failures: 1, Cooldown: time.Second}}})
		sh := &shared{set: s}
		sh.receive(payload)
		if len(*s.table.Load()) != 1 {
			t.Fatal("a message changed the set of circuits")
		}
	})
}
