package tools

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkCacheHit measures a whole Registry.Call answered from the cache: tool lookup,
// canonical key of the arguments, LRU lookup and the observer calls. Target: under 2 µs
// (the canonical key over encoding/json is most of it; a webhook round trip is thousands
// of times more).
func BenchmarkCacheHit(b *testing.B) {
	wh := newWebhook(&testing.T{}, echoBody)
	defer wh.srv.Close()
	r, err := New(context.Background(), map[string]SourceOptions{
		"weather": {Type: "http", URL: wh.srv.URL, ReadOnly: true, Parameters: weatherParams},
	}, CacheOptions{}, &countingObserver{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	ctx := WithCaller(context.Background(), "alice") // as the loop calls, cache scope key
	args := []byte(`{"city": "Paris", "days": 3}`)
	if res := r.Call(ctx, "weather", args); res.IsError {
		b.Fatal(res.Content)
	}
	b.ReportAllocs()
	for b.Loop() {
		if res := r.Call(ctx, "weather", args); res.IsError {
			b.Fatal(res.Content)
		}
	}
	if wh.calls.Load() != 1 {
		b.Fatalf("webhook called %d times, want 1", wh.calls.Load())
	}
}

// BenchmarkLRUCacheGet measures the cache lookup alone.
func BenchmarkLRUCacheGet(b *testing.B) {
	c := NewLRUCache(0, 0, nil)
	key, _ := cacheKey("alice", "weather", []byte(`{"city":"Paris","days":3}`))
	c.Add(key, Result{Content: "sunny"})
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := c.Get(key); !ok {
			b.Fatal("miss")
		}
	}
}

// countingObserver stands in for the Prometheus observer: atomic counters, no memory growth.
type countingObserver struct{ calls, lookups, evictions atomic.Int64 }

func (o *countingObserver) ToolCall(string, string, time.Duration) { o.calls.Add(1) }
func (o *countingObserver) CacheLookup(bool)                       { o.lookups.Add(1) }
func (o *countingObserver) CacheEviction()                         { o.evictions.Add(1) }
