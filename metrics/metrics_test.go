package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	m.SeriesOf("demo", "offline", "alice").AddTokens(TokenCounts{Prompt: 10, Completion: 5, Cached: 4, Reasoning: 2})
	m.SeriesOf("demo", "offline", "alice").AddTokens(TokenCounts{Prompt: 1})
	m.SeriesOf("demo", "offline", "bob").AddTokens(TokenCounts{CacheCreation: 3})
	m.ToolCall("weather", "ok", 20*time.Millisecond)
	m.ToolCall("weather", "cached", 0)
	m.CacheLookup(true)
	m.CacheLookup(false)
	m.CacheEviction()
	m.ConfigReload(true)
	m.ConfigReload(false)
	m.ConfigReload(false)

	tests := []struct {
		name string
		c    prometheus.Collector
		want float64
	}{
		{"prompt tokens summed", m.Tokens.WithLabelValues("demo", "offline", "alice", "prompt"), 11},
		{"completion tokens", m.Tokens.WithLabelValues("demo", "offline", "alice", "completion"), 5},
		{"cached tokens", m.Tokens.WithLabelValues("demo", "offline", "alice", "cached"), 4},
		{"reasoning tokens", m.Tokens.WithLabelValues("demo", "offline", "alice", "reasoning"), 2},
		{"another key's tokens", m.Tokens.WithLabelValues("demo", "offline", "bob", "cache_creation"), 3},
		{"tool calls ok", m.ToolCalls.WithLabelValues("weather", "ok"), 1},
		{"cache hits", m.ToolCache.WithLabelValues("hit"), 1},
		{"cache misses", m.ToolCache.WithLabelValues("miss"), 1},
		{"cache evictions", m.ToolCache.WithLabelValues("eviction"), 1},
		{"reload successes", m.ConfigReloads.WithLabelValues("success"), 1},
		{"reload failures", m.ConfigReloads.WithLabelValues("failure"), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := testutil.ToFloat64(tt.c); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	// Zero counts create no series: label sets stay as small as the traffic.
	if n := testutil.CollectAndCount(m.Tokens); n != 5 {
		t.Errorf("gateway_tokens_total has %d series, want 5 (alice's four, bob's cache_creation)", n)
	}
	// Tool durations exclude cache hits: one observation for two calls.
	if got := testutil.ToFloat64(m.ToolCalls.WithLabelValues("weather", "cached")); got != 1 {
		t.Errorf("cached calls = %v", got)
	}
	if n := histogramCount(t, reg, "gateway_tool_duration_seconds"); n != 1 {
		t.Errorf("tool duration observations = %d, want 1 (cache hits excluded)", n)
	}
	// The exposition names are the documented ones (README, metrics section).
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	all := strings.Join(names, " ")
	for _, want := range []string{"gateway_tokens_total", "gateway_tool_calls_total",
		"gateway_tool_duration_seconds", "gateway_tool_cache_total", "gateway_config_reloads_total", "go_goroutines", "process_cpu_seconds_total"} {
		if !strings.Contains(all, want) {
			t.Errorf("exposition lacks %s", want)
		}
	}
}

func histogramCount(t *testing.T, reg *prometheus.Registry, name string) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.Metric {
				n += m.GetHistogram().GetSampleCount()
			}
		}
	}
	return n
}

// familyNames gathers reg and returns its families' names.
func familyNames(reg *prometheus.Registry) ([]string, error) {
	families, err := reg.Gather()
	names := make([]string, 0, len(families))
	for _, f := range families {
		names = append(names, f.GetName())
	}
	return names, err
}

// TestNewWith_SharedRuntime checks that gateways given one Runtime gather the same
// families as New's own, go_* and process_* included, and that the shared collectors
// can be gathered from several registries at once.
func TestNewWith_SharedRuntime(t *testing.T) {
	own := prometheus.NewRegistry()
	New(own)
	want, err := familyNames(own)
	if err != nil {
		t.Fatal(err)
	}
	var goFamilies, processFamilies int
	for _, n := range want {
		goFamilies += boolInt(strings.HasPrefix(n, "go_"))
		processFamilies += boolInt(strings.HasPrefix(n, "process_"))
	}
	if goFamilies == 0 || processFamilies == 0 {
		t.Fatalf("New gathers %d go_ and %d process_ families, want some of each", goFamilies, processFamilies)
	}

	shared := NewRuntime()
	regs := []*prometheus.Registry{prometheus.NewRegistry(), prometheus.NewRegistry(), prometheus.NewRegistry()}
	for _, reg := range regs {
		NewWith(reg, Options{Runtime: shared})
	}
	done := make(chan []string, len(regs))
	for _, reg := range regs {
		go func() {
			names, err := familyNames(reg)
			if err != nil {
				t.Error(err)
			}
			done <- names
		}()
	}
	for range regs {
		if got := <-done; strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("shared runtime gathers\n%v\nwant New's\n%v", got, want)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// BenchmarkNew is what each gateway's metrics cost: its own Go and process collectors
// (own) or a shared Runtime (shared).
func BenchmarkNew(b *testing.B) {
	shared := NewRuntime()
	for _, bb := range []struct {
		name string
		o    Options
	}{{"own", Options{}}, {"shared", Options{Runtime: shared}}} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				NewWith(prometheus.NewRegistry(), bb.o)
			}
		})
	}
}
