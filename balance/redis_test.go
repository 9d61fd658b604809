package balance

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agate-gateway/agate/limits/redistest"
)

func redisAffinity(t testing.TB, srv *redistest.Server) *Redis {
	opts, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	return &Redis{Client: c, Prefix: "agate:", TTL: time.Minute, Timeout: time.Second}
}

// Two replicas share one redis-server: a conversation the first placed goes to the same
// deployment from the second, whatever the second's own round robin would say.
func TestRedisAffinityAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	a := New(specs("a", "b", "c"), Options{Model: "m", Affinity: redisAffinity(t, srv)})
	b := New(specs("a", "b", "c"), Options{Model: "m", Affinity: redisAffinity(t, srv)})
	ctx := context.Background()
	placed := map[uint64]int{}
	for key := uint64(1); key <= 9; key++ {
		c := a.Pick(ctx, t0, key, nil)
		if c.Hit || !c.Affine {
			t.Fatalf("key %d: first request %+v, want an affine miss", key, c)
		}
		a.Done(c.Index, Outcome{OK: true}, t0)
		placed[key] = c.Index
	}
	b.Pick(ctx, t0, 0, nil) // shift b's round robin off a's
	for key := uint64(1); key <= 9; key++ {
		c := b.Pick(ctx, t0, key, nil)
		if !c.Hit || c.Index != placed[key] {
			t.Fatalf("key %d on the second replica: %+v, want a hit on %d", key, c, placed[key])
		}
		b.Done(c.Index, Outcome{OK: true}, t0)
	}
	// Its deployment resting on the second replica: moved there, and the move is shared.
	i := placed[1]
	b.Done(i, Outcome{RateLimited: true, RetryAfter: time.Minute}, t0)
	c := b.Pick(ctx, t0, 1, nil)
	if c.Index == i || c.Hit {
		t.Fatalf("after a 429: %+v, want another deployment", c)
	}
	if c2 := a.Pick(ctx, t0, 1, nil); !c2.Hit || c2.Index != c.Index {
		t.Fatalf("first replica after the move: %+v, want a hit on %d", c2, c.Index)
	}
}

func BenchmarkPickRedis(b *testing.B) {
	srv := redistest.Start(b)
	s := New(specs("a", "b", "c", "d", "e", "f", "g", "h", "i", "j"), Options{Model: "m", Affinity: redisAffinity(b, srv)})
	ctx := context.Background()
	now := time.Now()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c := s.Pick(ctx, now, uint64(i%1000)+1, nil)
		s.Done(c.Index, Outcome{OK: true}, now)
	}
}
