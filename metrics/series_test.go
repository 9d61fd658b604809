package metrics

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestSeries: the recorders count into the series WithLabelValues names, each label
// combination its own, however often they are called and whichever Series of the same
// names records.
func TestSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	for range 3 {
		s := m.SeriesOf("gpt", "oai", "alice")
		s.CountRequest(200, false, "chat")
		s.RequestDuration(false, "chat").Observe((10 * time.Millisecond).Seconds())
		m.UpstreamOf("oai", "oai/gpt-4o", "200").Observe((5 * time.Millisecond).Seconds())
	}
	alice := m.SeriesOf("gpt", "oai", "alice")
	if m.SeriesOf("gpt", "oai", "alice") != alice {
		t.Error("SeriesOf made a second Series for the same names")
	}
	for _, tt := range []struct {
		m                   *Metrics
		model, backend, key string
		want                bool
	}{
		{m, "gpt", "oai", "alice", true},
		{m, "gpt", "oai", "bob", false},
		{m, "gpt", "other", "alice", false},
		{m, "gpt-4o", "oai", "alice", false},
		{New(prometheus.NewRegistry()), "gpt", "oai", "alice", false},
	} {
		if got := alice.Is(tt.m, tt.model, tt.backend, tt.key); got != tt.want {
			t.Errorf("alice.Is(%q, %q, %q) = %v, want %v", tt.model, tt.backend, tt.key, got, tt.want)
		}
	}
	up := m.UpstreamSeriesOf("oai", "oai/gpt-4o")
	if m.UpstreamSeriesOf("oai", "oai/gpt-4o") != up || !up.Is(m, "oai", "oai/gpt-4o") || up.Is(m, "oai", "oai/*") || up.Is(m, "other", "oai/gpt-4o") {
		t.Error("UpstreamSeriesOf made a second UpstreamSeries for the same names, or Is is wrong")
	}
	up.Of("200").Observe((5 * time.Millisecond).Seconds()) // counted with UpstreamOf's below
	alice.CountRequest(502, false, "chat")
	alice.CountRequest(200, true, "chat")
	alice.CountRequest(200, false, "responses")
	m.SeriesOf("gpt", "oai", "bob").CountRequest(200, false, "chat")
	m.SeriesOf("gpt", "other", "alice").CountRequest(200, false, "chat")
	alice.RequestDuration(true, "chat").Observe((time.Second).Seconds())
	alice.TTFT().Observe((100 * time.Millisecond).Seconds())
	m.SeriesOf("gpt", "oai", "bob").TTFT().Observe((100 * time.Millisecond).Seconds()) // TTFT has no key label
	m.UpstreamOf("oai", "oai/gpt-4o", "0").Observe((time.Second).Seconds())
	m.UpstreamOf("other", "other/*", "200").Observe((time.Second).Seconds())

	counts := []struct {
		name string
		c    prometheus.Collector
		want float64
	}{
		{"ok requests", m.Requests.WithLabelValues("gpt", "oai", "alice", "200", "false", "chat"), 3},
		{"failed request", m.Requests.WithLabelValues("gpt", "oai", "alice", "502", "false", "chat"), 1},
		{"streamed request", m.Requests.WithLabelValues("gpt", "oai", "alice", "200", "true", "chat"), 1},
		{"other api", m.Requests.WithLabelValues("gpt", "oai", "alice", "200", "false", "responses"), 1},
		{"other key", m.Requests.WithLabelValues("gpt", "oai", "bob", "200", "false", "chat"), 1},
		{"other backend", m.Requests.WithLabelValues("gpt", "other", "alice", "200", "false", "chat"), 1},
	}
	for _, tt := range counts {
		if got := testutil.ToFloat64(tt.c); got != tt.want {
			t.Errorf("%s = %v, want %v", tt.name, got, tt.want)
		}
	}
	series := []struct {
		name   string
		metric string
		want   uint64 // samples over every series
		n      int    // series
	}{
		{"durations", "gateway_request_duration_seconds", 4, 2},
		{"ttft", "gateway_time_to_first_token_seconds", 2, 1},
		{"upstream", "gateway_upstream_duration_seconds", 6, 3}, // one through up.Of, into the series of UpstreamOf("oai", "oai/gpt-4o", "200")
	}
	for _, tt := range series {
		if got := histogramCount(t, reg, tt.metric); got != tt.want {
			t.Errorf("%s: %d samples, want %d", tt.name, got, tt.want)
		}
		if got := testutil.CollectAndCount(reg, tt.metric); got != tt.n {
			t.Errorf("%s: %d series, want %d", tt.name, got, tt.n)
		}
	}
	if got := testutil.CollectAndCount(m.Requests); got != 6 {
		t.Errorf("gateway_requests_total: %d series, want 6", got)
	}
}

// BenchmarkCountRequest is what a request records at its end (its count and duration,
// an upstream attempt, its prompt and completion tokens): through WithLabelValues, and
// as the gateway does.
func BenchmarkCountRequest(b *testing.B) {
	m := New(prometheus.NewRegistry())
	b.Run("with-label-values", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.Requests.WithLabelValues("claude-bench", "anth", "bench", "200", "false", "chat").Inc()
			m.RequestDuration.WithLabelValues("claude-bench", "anth", "false", "chat").Observe(0.05)
			m.Upstream.WithLabelValues("anth", "anth/claude", "200").Observe(0.05)
			m.Tokens.WithLabelValues("claude-bench", "anth", "bench", "prompt").Add(412)
			m.Tokens.WithLabelValues("claude-bench", "anth", "bench", "completion").Add(187)
		}
	})
	b.Run("series", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s := m.SeriesOf("claude-bench", "anth", "bench")
			s.CountRequest(200, false, "chat")
			s.RequestDuration(false, "chat").Observe((50 * time.Millisecond).Seconds())
			m.UpstreamOf("anth", "anth/claude", "200").Observe((50 * time.Millisecond).Seconds())
			m.SeriesOf("claude-bench", "anth", "bench").AddTokens(TokenCounts{Prompt: 412, Completion: 187})
		}
	})
	// The lookups alone, from every core at once, as a gateway under load makes them.
	b.Run("lookups-parallel", func(b *testing.B) {
		m.SeriesOf("claude-bench", "anth", "bench").CountRequest(200, false, "chat") // the child, made
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				s := m.SeriesOf("claude-bench", "anth", "bench")
				s.requests.get(requestSub{200, false, "chat"}, nil)
				s.RequestDuration(false, "chat")
				m.UpstreamOf("anth", "anth/claude", "200")
			}
		})
	})
}

// TestCaches_Concurrent: goroutines asking a cache for the same keys at once all get one
// child per key, made once, while other keys are added: the labelCache of Series by
// names, and the smallCache of a Series' children.
func TestCaches_Concurrent(t *testing.T) {
	var big labelCache[int, *int]
	var small smallCache[int, *int]
	for _, c := range []struct {
		name string
		keys int
		get  func(k int, child func() *int) *int
	}{
		{"labelCache", 64, big.get},
		{"smallCache", 16, small.get},
	} {
		t.Run(c.name, func(t *testing.T) {
			made := make([]atomic.Int32, c.keys)
			got := make([][]*int, 8)
			var wg sync.WaitGroup
			for g := range got {
				got[g] = make([]*int, c.keys)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range c.keys {
						k := (i + 8*g) % c.keys // each goroutine starts elsewhere
						got[g][k] = c.get(k, func() *int {
							made[k].Add(1)
							return new(int)
						})
					}
				}()
			}
			wg.Wait()
			for k := range c.keys {
				if n := made[k].Load(); n != 1 {
					t.Errorf("key %d: child made %d times, want once", k, n)
				}
				for g := range got {
					if got[g][k] != got[0][k] {
						t.Errorf("key %d: goroutines %d and 0 got different children", k, g)
					}
				}
			}
		})
	}
}

// TestLazy_Concurrent: first uses at once each get the one child WithLabelValues would
// return them, and once one is kept, lazy makes no other.
func TestLazy_Concurrent(t *testing.T) {
	var l lazy[*int]
	shared := new(int) // what WithLabelValues returns: one child for every caller
	got := make([]*int, 8)
	var wg sync.WaitGroup
	for g := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[g] = l.get(func() *int { return shared })
		}()
	}
	wg.Wait()
	for g, p := range got {
		if p != shared {
			t.Errorf("goroutine %d: lazy returned %p, want the child %p", g, p, shared)
		}
	}
	if kept := l.get(func() *int { t.Error("lazy made a child after one was kept"); return nil }); kept != shared {
		t.Error("lazy kept no child, or another")
	}
}
