package metrics

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestSeries: the cached recorders count into the series WithLabelValues names, each
// label combination its own, however often they are called.
func TestSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	for range 3 {
		m.CountRequest("gpt", "oai", "alice", 200, false, "chat")
		m.RequestDurationOf("gpt", "oai", false, "chat").Observe((10 * time.Millisecond).Seconds())
		m.UpstreamOf("oai", "200").Observe((5 * time.Millisecond).Seconds())
	}
	m.CountRequest("gpt", "oai", "alice", 502, false, "chat")
	m.CountRequest("gpt", "oai", "alice", 200, true, "chat")
	m.CountRequest("gpt", "oai", "bob", 200, false, "chat")
	m.RequestDurationOf("gpt", "oai", true, "chat").Observe((time.Second).Seconds())
	m.TTFTOf("gpt", "oai").Observe((100 * time.Millisecond).Seconds())
	m.UpstreamOf("oai", "0").Observe((time.Second).Seconds())

	counts := []struct {
		name string
		c    prometheus.Collector
		want float64
	}{
		{"ok requests", m.Requests.WithLabelValues("gpt", "oai", "alice", "200", "false", "chat"), 3},
		{"failed request", m.Requests.WithLabelValues("gpt", "oai", "alice", "502", "false", "chat"), 1},
		{"streamed request", m.Requests.WithLabelValues("gpt", "oai", "alice", "200", "true", "chat"), 1},
		{"other key", m.Requests.WithLabelValues("gpt", "oai", "bob", "200", "false", "chat"), 1},
	}
	for _, tt := range counts {
		if got := testutil.ToFloat64(tt.c); got != tt.want {
			t.Errorf("%s = %v, want %v", tt.name, got, tt.want)
		}
	}
	histograms := []struct {
		name   string
		metric string
		want   uint64 // samples over every series
	}{
		{"durations", "gateway_request_duration_seconds", 4},
		{"ttft", "gateway_time_to_first_token_seconds", 1},
		{"upstream", "gateway_upstream_duration_seconds", 4},
	}
	for _, tt := range histograms {
		if got := histogramCount(t, reg, tt.metric); got != tt.want {
			t.Errorf("%s: %d samples, want %d", tt.name, got, tt.want)
		}
	}
}

func BenchmarkCountRequest(b *testing.B) {
	m := New(prometheus.NewRegistry())
	b.Run("with-label-values", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.Requests.WithLabelValues("claude-bench", "anth", "bench", "200", "false", "chat").Inc()
			m.RequestDuration.WithLabelValues("claude-bench", "anth", "false", "chat").Observe(0.05)
			m.Upstream.WithLabelValues("anth", "200").Observe(0.05)
		}
	})
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.CountRequest("claude-bench", "anth", "bench", 200, false, "chat")
			m.RequestDurationOf("claude-bench", "anth", false, "chat").Observe((50 * time.Millisecond).Seconds())
			m.UpstreamOf("anth", "200").Observe((50 * time.Millisecond).Seconds())
		}
	})
	// The lookups alone, from every core at once, as a gateway under load makes them.
	b.Run("lookups-parallel", func(b *testing.B) {
		m.CountRequest("claude-bench", "anth", "bench", 200, false, "chat") // the child, made
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				m.series.requests.get(requestKey{"claude-bench", "anth", "bench", "chat", 200, false}, nil)
				m.RequestDurationOf("claude-bench", "anth", false, "chat")
				m.UpstreamOf("anth", "200")
			}
		})
	})
}

// TestLabelCache_Concurrent: goroutines asking for the same keys at once all get one
// child per key, made once, while other keys are added.
func TestLabelCache_Concurrent(t *testing.T) {
	var c labelCache[int, *int]
	var made [64]atomic.Int32
	var wg sync.WaitGroup
	got := make([][64]*int, 8)
	for g := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 64 {
				k := (i + 8*g) % 64 // each goroutine starts elsewhere
				got[g][k] = c.get(k, func() *int {
					made[k].Add(1)
					return new(int)
				})
			}
		}()
	}
	wg.Wait()
	for k := range 64 {
		if n := made[k].Load(); n != 1 {
			t.Errorf("key %d: child made %d times, want once", k, n)
		}
		for g := range got {
			if got[g][k] != got[0][k] {
				t.Errorf("key %d: goroutines %d and 0 got different children", k, g)
			}
		}
	}
}
