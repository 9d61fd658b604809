package breaker_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agate-gateway/agate/breaker"
	"github.com/agate-gateway/agate/limits/redistest"
)

// replica is one gateway's Set on the shared Redis.
func replica(t *testing.T, url string) *breaker.Set {
	t.Helper()
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opts)
	t.Cleanup(func() { client.Close() })
	s := breaker.New(breaker.Options{Redis: client, Prefix: "agate:", Errors: func(op string, err error) { t.Errorf("%s: %v", op, err) }})
	t.Cleanup(s.Close)
	s.Configure([]breaker.Circuit{{Key: "b/m", Backend: "b", Model: "m", Policy: breaker.Policy{Failures: 2, Cooldown: 30 * time.Second}}})
	return s
}

// eventually waits (at most 2 s of wall time: pub/sub takes a millisecond) for s's state.
func eventually(t *testing.T, s *breaker.Set, now time.Time, want breaker.State) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		got, _ := s.State("b/m", now)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("state %v, want %v", got, want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestSharedAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	a, b := replica(t, srv.URL()), replica(t, srv.URL())
	subscribed(t, srv.URL(), 2)
	t0 := time.Now()

	// Opening on one replica is seen by the other, which never failed.
	a.Record("b/m", false, t0)
	a.Record("b/m", false, t0)
	eventually(t, b, t0, breaker.Open)
	if b.Allow("b/m", t0.Add(time.Second)) {
		t.Fatal("b let a call through while a's opening holds")
	}
	// A replica that starts while it is open reads it at its subscription.
	c := replica(t, srv.URL())
	eventually(t, c, t0, breaker.Open)

	// After the cooldown exactly one replica probes.
	after := t0.Add(30 * time.Second)
	probes := 0
	for _, s := range []*breaker.Set{a, b, c} {
		if s.Allow("b/m", after) {
			probes++
		}
	}
	if probes != 1 {
		t.Fatalf("%d probes across three replicas, want 1", probes)
	}
	// a probed (it asked first); its success closes every replica.
	a.Record("b/m", true, after)
	eventually(t, b, after, breaker.Closed)
	eventually(t, c, after, breaker.Closed)
	if !b.Allow("b/m", after) || !c.Allow("b/m", after) {
		t.Fatal("closed replicas must let calls through")
	}
}

// subscribed waits until n replicas listen on the channel.
func subscribed(t *testing.T, url string, n int64) {
	t.Helper()
	opts, _ := redis.ParseURL(url)
	client := redis.NewClient(opts)
	defer client.Close()
	deadline := time.Now().Add(2 * time.Second)
	for {
		m, err := client.PubSubNumSub(t.Context(), "agate:circuit").Result()
		if err == nil && m["agate:circuit"] >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d replicas subscribed, want %d (%v)", m["agate:circuit"], n, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
