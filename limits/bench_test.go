package limits

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agate-gateway/agate/limits/redistest"
)

var benchRequest = &Request{Key: "alice", KeyRate: Rate{RequestsPerMinute: 1 << 50, TokensPerMinute: 1 << 50, Concurrent: 1 << 20},
	Budget: Budget{Tokens: 1 << 50, MicroUSD: 1 << 50, Period: time.Hour},
	Model:  "claude-sonnet", ModelRate: Rate{RequestsPerMinute: 1 << 50, TokensPerMinute: 1 << 50}}

// BenchmarkMemory_AdmitFinish is one admitted request with every limit set: Admit, then
// Finish with its usage.
func BenchmarkMemory_AdmitFinish(b *testing.B) {
	l := NewMemory(nil)
	ctx := context.Background()
	var a Admission
	b.ReportAllocs()
	for b.Loop() {
		if err := l.Admit(ctx, benchRequest, &a); err != nil || a.Denied != NoLimit {
			b.Fatal(a.Denied, err)
		}
		if err := l.Finish(ctx, benchRequest, &a, Usage{Tokens: 100, MicroUSD: 30}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMemory_AdmitFinishParallel(b *testing.B) {
	l := NewMemory(nil)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		var a Admission
		for pb.Next() {
			_ = l.Admit(ctx, benchRequest, &a)
			_ = l.Finish(ctx, benchRequest, &a, Usage{Tokens: 100, MicroUSD: 30})
		}
	})
}

// roundTrips counts the commands and pipelines sent to Redis.
type roundTrips struct{ n atomic.Int64 }

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.n.Add(1); return next(ctx, cmd) }
}
func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.n.Add(1); return next(ctx, cmds) }
}

// BenchmarkRedis_AdmitFinish is one admitted request with every limit set against a local
// redis-server; round-trips/op counts the commands sent (one Admit, one Finish).
func BenchmarkRedis_AdmitFinish(b *testing.B) {
	srv := redistest.Start(b)
	l := newRedis(b, srv, RedisOptions{KeyPrefix: "bench:"})
	var rt roundTrips
	l.Client().AddHook(&rt)
	ctx := context.Background()
	var a Admission
	// Load the scripts first so EVALSHA never falls back to EVAL in the loop.
	_ = l.Admit(ctx, benchRequest, &a)
	_ = l.Finish(ctx, benchRequest, &a, Usage{Tokens: 1})
	rt.n.Store(0)
	b.ReportAllocs()
	for b.Loop() {
		if err := l.Admit(ctx, benchRequest, &a); err != nil || a.Denied != NoLimit {
			b.Fatal(a.Denied, err)
		}
		if err := l.Finish(ctx, benchRequest, &a, Usage{Tokens: 100, MicroUSD: 30}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rt.n.Load())/float64(b.N), "round-trips/op")
}
