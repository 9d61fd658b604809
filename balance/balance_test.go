package balance

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func specs(names ...string) []Spec {
	out := make([]Spec, len(names))
	for i, n := range names {
		out[i] = Spec{Name: n, Weight: 1}
	}
	return out
}

// seeded returns a deterministic random source.
func seeded() func() uint64 { return rand.New(rand.NewPCG(1, 2)).Uint64 }

// picks picks n times at now, ending each attempt at once, and returns the sequence of
// names chosen ("-" for none).
func picks(s *Set, n int, now time.Time) []string {
	var out []string
	for range n {
		c := s.Pick(context.Background(), now, 0, nil)
		if !c.OK() {
			out = append(out, "-")
			continue
		}
		out = append(out, s.Name(c.Index))
		s.Done(c.Index, Outcome{OK: true}, now)
	}
	return out
}

func counts(seq []string) map[string]int {
	m := map[string]int{}
	for _, n := range seq {
		m[n]++
	}
	return m
}

func TestWeightedIsSmoothAndExact(t *testing.T) {
	sp := []Spec{{Name: "a", Weight: 5}, {Name: "b", Weight: 1}, {Name: "c", Weight: 1}}
	s := New(sp, Options{Strategy: Weighted})
	// nginx's smooth weighted round robin for 5,1,1.
	if got, want := strings.Join(picks(s, 7, t0), ""), "aabacaa"; got != want {
		t.Fatalf("sequence = %s, want %s", got, want)
	}
	got := counts(picks(s, 700, t0))
	if got["a"] != 500 || got["b"] != 100 || got["c"] != 100 {
		t.Fatalf("counts over 700 = %v, want a:500 b:100 c:100", got)
	}
}

func TestLeastBusyPrefersTheIdle(t *testing.T) {
	// Three deployments; a's requests take 10 ticks, b's and c's 1: with requests
	// arriving every tick and held while in flight, the power of two choices sends a
	// fraction of the traffic to a that its slowness keeps small.
	s := New(specs("a", "b", "c"), Options{Strategy: LeastBusy, Rand: seeded()})
	type held struct{ i, until int }
	var open []held
	got := map[string]int{}
	for tick := range 3000 {
		kept := open[:0]
		for _, h := range open {
			if h.until <= tick {
				s.Done(h.i, Outcome{OK: true}, t0)
			} else {
				kept = append(kept, h)
			}
		}
		open = kept
		c := s.Pick(context.Background(), t0, 0, nil)
		got[s.Name(c.Index)]++
		d := 1
		if s.Name(c.Index) == "a" {
			d = 10
		}
		open = append(open, held{c.Index, tick + d})
	}
	if got["a"] >= got["b"]/2 || got["a"] >= got["c"]/2 {
		t.Fatalf("slow a got %d of 3000 (b %d, c %d): want under half of each fast one's", got["a"], got["b"], got["c"])
	}
	// Equal speeds: an even spread (seeded, so exact).
	s = New(specs("a", "b", "c"), Options{Strategy: LeastBusy, Rand: seeded()})
	even := counts(picks(s, 3000, t0))
	for _, n := range []string{"a", "b", "c"} {
		if even[n] < 900 || even[n] > 1100 {
			t.Fatalf("idle spread = %v, want about 1000 each", even)
		}
	}
}

func TestLatencyFollowsASlowdown(t *testing.T) {
	s := New(specs("a", "b"), Options{Strategy: Latency})
	ttft := map[string]time.Duration{"a": 100 * time.Millisecond, "b": 200 * time.Millisecond}
	run := func(n int) map[string]int {
		got := map[string]int{}
		for range n {
			c := s.Pick(context.Background(), t0, 0, nil)
			name := s.Name(c.Index)
			got[name]++
			s.Done(c.Index, Outcome{OK: true, TTFT: ttft[name]}, t0)
		}
		return got
	}
	// Both measured once (unmeasured counts as 0), then a, the faster, takes the rest.
	if got := run(10); got["a"] != 9 || got["b"] != 1 {
		t.Fatalf("before the slowdown = %v, want a:9 b:1", got)
	}
	ttft["a"] = time.Second // a slows down
	got := run(20)
	if got["a"] > 3 {
		t.Fatalf("after a slowed down = %v, want b to take over within 3 requests", got)
	}
	if e := s.State(s.Index("a")).EWMA(); e < 300*time.Millisecond {
		t.Fatalf("a's EWMA = %v, want it to have risen", e)
	}
}

func TestCostTakesTheCheapestHealthy(t *testing.T) {
	sp := []Spec{{Name: "dear", Price: 18, Priced: true}, {Name: "unpriced"}, {Name: "cheap", Price: 3, Priced: true}}
	h := &fakeHealth{down: map[string]bool{}}
	s := New(sp, Options{Strategy: Cost, Health: h})
	if got := picks(s, 3, t0); strings.Join(got, ",") != "cheap,cheap,cheap" {
		t.Fatalf("picks = %v, want cheap", got)
	}
	h.down["cheap"] = true
	if got := picks(s, 1, t0); got[0] != "dear" {
		t.Fatalf("cheap unhealthy: pick = %v, want dear (priced before unpriced)", got)
	}
	h.down["dear"] = true
	if got := picks(s, 1, t0); got[0] != "unpriced" {
		t.Fatalf("pick = %v, want unpriced", got)
	}
}

// fakeHealth is a Health whose down deployments are refused; it counts what it saw.
type fakeHealth struct {
	down            map[string]bool
	allows, records int
	failed          []string
}

func (h *fakeHealth) Allow(key string, _ time.Time) bool { h.allows++; return !h.down[key] }
func (h *fakeHealth) Record(key string, ok bool, _ time.Time) {
	h.records++
	if !ok {
		h.failed = append(h.failed, key)
	}
}

func TestPriorityTiers(t *testing.T) {
	sp := []Spec{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}, {Name: "backup", Weight: 1, Priority: 1}}
	h := &fakeHealth{down: map[string]bool{}}
	s := New(sp, Options{Health: h})
	if got := counts(picks(s, 10, t0)); got["backup"] != 0 || got["a"] != 5 || got["b"] != 5 {
		t.Fatalf("all healthy: %v, want a and b only", got)
	}
	h.down["a"] = true
	if got := counts(picks(s, 4, t0)); got["b"] != 4 {
		t.Fatalf("a down: %v, want b only (tier 0 still has one)", got)
	}
	h.down["b"] = true
	if got := counts(picks(s, 4, t0)); got["backup"] != 4 {
		t.Fatalf("tier 0 down: %v, want backup", got)
	}
	h.down["backup"] = true
	if got := picks(s, 1, t0); got[0] != "-" {
		t.Fatalf("all down: %v, want none", got)
	}
	// A request that tried both tier-0 deployments moves to the next tier.
	clear(h.down)
	var tried Tried
	tried.Add(0)
	tried.Add(1)
	if c := s.Pick(context.Background(), t0, 0, &tried); s.Name(c.Index) != "backup" {
		t.Fatalf("a and b tried: picked %s, want backup", s.Name(c.Index))
	}
}

func TestSkipsAtItsLimits(t *testing.T) {
	t.Run("429 rests it until Retry-After", func(t *testing.T) {
		s := New(specs("a", "b"), Options{})
		c := s.Pick(context.Background(), t0, 0, nil) // a
		s.Done(c.Index, Outcome{RateLimited: true, RetryAfter: 3 * time.Second}, t0)
		if got := counts(picks(s, 4, t0.Add(2*time.Second))); got["b"] != 4 {
			t.Fatalf("within Retry-After: %v, want b only", got)
		}
		if got := counts(picks(s, 4, t0.Add(3*time.Second))); got["a"] == 0 {
			t.Fatalf("after Retry-After: %v, want a back", got)
		}
	})
	t.Run("max_conns", func(t *testing.T) {
		sp := []Spec{{Name: "a", Weight: 10, MaxConns: 2}, {Name: "b", Weight: 1}}
		s := New(sp, Options{})
		var got []string
		for range 4 { // held: nothing ends
			got = append(got, s.Name(s.Pick(context.Background(), t0, 0, nil).Index))
		}
		if strings.Join(got, ",") != "a,a,b,b" {
			t.Fatalf("held picks = %v, want a twice (max_conns 2), then b", got)
		}
		s.Done(0, Outcome{OK: true}, t0)
		if c := s.Pick(context.Background(), t0, 0, nil); s.Name(c.Index) != "a" {
			t.Fatalf("after one of a's ended: %s, want a", s.Name(c.Index))
		}
	})
	t.Run("requests and tokens per minute", func(t *testing.T) {
		sp := []Spec{{Name: "a", Weight: 10, RequestsPerMinute: 3}, {Name: "b", Weight: 1, TokensPerMinute: 100}}
		s := New(sp, Options{})
		if got := strings.Join(picks(s, 5, t0), ","); got != "a,a,a,b,b" {
			t.Fatalf("picks = %s, want a's 3 per minute, then b", got)
		}
		c := s.Pick(context.Background(), t0, 0, nil)
		s.Done(c.Index, Outcome{OK: true, Tokens: 150}, t0)
		if got := picks(s, 1, t0.Add(30*time.Second)); got[0] != "-" {
			t.Fatalf("both over quota: %v, want none", got)
		}
		if got := picks(s, 1, t0.Add(61*time.Second)); got[0] != "a" {
			t.Fatalf("next minute: %v, want a", got)
		}
	})
}

func TestBreakerStyleHealth(t *testing.T) {
	h := &fakeHealth{down: map[string]bool{"a": true}}
	s := New(specs("a", "b"), Options{Health: h})
	c := s.Pick(context.Background(), t0, 0, nil)
	if s.Name(c.Index) != "b" || c.Unhealthy != 1 {
		t.Fatalf("pick = %s (unhealthy %d), want b with a refused once", s.Name(c.Index), c.Unhealthy)
	}
	s.Done(c.Index, Outcome{OK: false}, t0)
	if len(h.failed) != 1 || h.failed[0] != "b" {
		t.Fatalf("recorded failures = %v, want [b]", h.failed)
	}
}

func TestAffinityKeepsAConversation(t *testing.T) {
	mem := NewMemory(100, time.Minute)
	s := New(specs("a", "b", "c"), Options{Model: "m", Affinity: mem})
	first := map[uint64]int{}
	for round := range 5 {
		for key := uint64(1); key <= 30; key++ {
			c := s.Pick(context.Background(), t0, key, nil)
			s.Done(c.Index, Outcome{OK: true}, t0)
			if round == 0 {
				if c.Hit {
					t.Fatalf("key %d hit on its first request", key)
				}
				first[key] = c.Index
			} else if !c.Hit || c.Index != first[key] {
				t.Fatalf("round %d key %d: %d (hit %v), want %d", round, key, c.Index, c.Hit, first[key])
			}
		}
	}
	if got := counts(func() []string {
		var n []string
		for _, i := range first {
			n = append(n, s.Name(i))
		}
		return n
	}()); got["a"] != 10 || got["b"] != 10 || got["c"] != 10 {
		t.Fatalf("new conversations = %v, want spread by weight", got)
	}
	// Its deployment resting after a 429: the conversation moves, and stays moved.
	i := first[1]
	c := s.Pick(context.Background(), t0, 1, nil)
	s.Done(c.Index, Outcome{RateLimited: true, RetryAfter: time.Minute}, t0)
	c = s.Pick(context.Background(), t0, 1, nil)
	if c.Index == i || c.Hit {
		t.Fatalf("after a 429: %d (hit %v), want another deployment", c.Index, c.Hit)
	}
	moved := c.Index
	s.Done(c.Index, Outcome{OK: true}, t0)
	if c = s.Pick(context.Background(), t0.Add(2*time.Minute), 1, nil); c.Index == moved && c.Hit {
		// TTL one minute: at +2m the entry expired, a new choice is made
		t.Fatalf("expired entry still hit")
	}
	// Expired entries are forgotten; the LRU keeps at most its size.
	small := NewMemory(2, time.Minute)
	s = New(specs("a", "b"), Options{Model: "m", Affinity: small})
	for key := uint64(1); key <= 5; key++ {
		s.Pick(context.Background(), t0, key, nil)
	}
	if small.Len() != 2 {
		t.Fatalf("entries = %d, want 2 (the bound)", small.Len())
	}
}

func TestReloadKeepsState(t *testing.T) {
	old := New(specs("a", "b"), Options{Strategy: LeastBusy, Rand: seeded()})
	c := old.Pick(context.Background(), t0, 0, nil) // in flight across the reload
	old.Done(old.Index("b"), Outcome{}, t0)         // harmless bookkeeping below
	old.State(old.Index("b")).inflight.Add(1)
	old.Done(old.Index("a"), Outcome{OK: true, TTFT: time.Second}, t0)
	old.State(old.Index("a")).inflight.Add(1)
	next := New(specs("b", "c"), Options{Strategy: LeastBusy, Previous: old})
	if next.State(0) != old.State(old.Index("b")) {
		t.Fatal("b's state was not taken over")
	}
	if next.State(1).InFlight() != 0 {
		t.Fatal("c, new, has state")
	}
	before := next.State(0).InFlight()
	old.Done(c.Index, Outcome{OK: true}, t0) // the old request ends on the old set
	if c.Index == old.Index("b") && next.State(0).InFlight() != before-1 {
		t.Fatal("an old request's end did not reach the new set's count")
	}
}

func TestPrefixKey(t *testing.T) {
	turn1 := chatReq("be brief", "hello")
	turn2 := chatReq("be brief", "hello", "hi!", "and then?")
	other := chatReq("be brief", "goodbye")
	if PrefixKey(turn1) != PrefixKey(turn2) {
		t.Fatal("two turns of one conversation have different keys")
	}
	if PrefixKey(turn1) == PrefixKey(other) {
		t.Fatal("two conversations share a key")
	}
	if PrefixKey(chatReq("be verbose", "hello")) == PrefixKey(turn1) {
		t.Fatal("the system prompt is not in the key")
	}
	if StringKey("user", "") != 0 || StringKey("user", "u1") == StringKey("x-session", "u1") {
		t.Fatal("StringKey")
	}
	if n := testing.AllocsPerRun(100, func() { PrefixKey(turn2) }); n != 0 {
		t.Fatalf("PrefixKey allocates %v", n)
	}
}

func BenchmarkPick(b *testing.B) {
	for _, n := range []int{2, 10, 100} {
		for _, aff := range []string{"off", "memory"} {
			b.Run("deployments="+strconv.Itoa(n)+"/affinity="+aff, func(b *testing.B) {
				sp := make([]Spec, n)
				for i := range sp {
					sp[i] = Spec{Name: "backend-" + strconv.Itoa(i) + "/model", Weight: 1 + i%3}
				}
				o := Options{Model: "m"}
				if aff == "memory" {
					o.Affinity = NewMemory(10000, time.Hour)
				}
				s := New(sp, o)
				now := time.Now()
				ctx := context.Background()
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					var key uint64
					if aff == "memory" {
						key = uint64(i%1000) + 1 // 1000 conversations
					}
					c := s.Pick(ctx, now, key, nil)
					s.Done(c.Index, Outcome{OK: true}, now)
				}
			})
		}
	}
}

// BenchmarkPrefixKey hashes the start of an agent's conversation: a 10 KB system prompt,
// ten tools and the first user message.
func BenchmarkPrefixKey(b *testing.B) {
	req := chatReq(strings.Repeat("You are a coding agent. Follow the repository's rules. ", 180), "fix the failing test", "ok", "and now?")
	for i := range 10 {
		req.Tools = append(req.Tools, req.Tools[0])
		req.Tools[i].Name = "tool" + strconv.Itoa(i)
	}
	b.SetBytes(int64(len(req.Messages[0].Content[0].Text)))
	b.ReportAllocs()
	for b.Loop() {
		PrefixKey(req)
	}
}

// TestDoneTellsHealthOnce: each attempt's outcome is told to Health once, the way it
// went, except an Unknown one (a 429, the client leaving before an answer), which tells
// it nothing.
func TestDoneTellsHealthOnce(t *testing.T) {
	for _, tt := range []struct {
		name    string
		o       Outcome
		records int
		failed  bool
	}{
		{"ok", Outcome{OK: true}, 1, false},
		{"failure", Outcome{}, 1, true},
		{"unknown", Outcome{Unknown: true}, 0, false},
		{"429", Outcome{RateLimited: true, Unknown: true}, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := &fakeHealth{down: map[string]bool{}}
			s := New(specs("a", "b"), Options{Health: h})
			c := s.Pick(context.Background(), t0, 0, nil)
			s.Done(c.Index, tt.o, t0)
			if h.allows != 1 || h.records != tt.records || (len(h.failed) == 1) != tt.failed {
				t.Fatalf("Allow asked %d times, Record %d (failed %v); want 1, %d (failed %v)", h.allows, h.records, h.failed, tt.records, tt.failed)
			}
		})
	}
}
