package limits

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agate-gateway/agate/limits/redistest"
)

// TestRedisNotifyLost: two replicas on one redis-server; after the server forgets its
// data (FLUSHALL, as a restart without persistence), the first replica whose renewal
// finds the marker missing is told, once, and the other is not; nothing is told before
// a loss or without a NotifyLost function.
func TestRedisNotifyLost(t *testing.T) {
	srv := redistest.Start(t)
	t1, t2 := make(chan time.Time), make(chan time.Time)
	r1 := newRedis(t, srv, RedisOptions{KeyPrefix: "l:", renewTicks: t1})
	r2 := newRedis(t, srv, RedisOptions{KeyPrefix: "l:", renewTicks: t2})
	var lost1, lost2 atomic.Int32
	done := make(chan struct{}, 4)
	r1.NotifyLost(func() { lost1.Add(1); done <- struct{}{} })
	r2.NotifyLost(func() { lost2.Add(1); done <- struct{}{} })
	tick := func(c chan time.Time) {
		c <- time.Now()
		c <- time.Now() // the loop has finished the first tick once it takes the second
	}
	tick(t1)
	tick(t2)
	if lost1.Load()+lost2.Load() != 0 {
		t.Fatal("told of a loss before any")
	}
	if err := r1.Client().FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	tick(t2)
	tick(t1)
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("no replica was told of the loss")
	}
	if lost1.Load() != 0 || lost2.Load() != 1 {
		t.Fatalf("told: first replica %d, second %d; want only the second (it found the marker missing first)", lost1.Load(), lost2.Load())
	}
	tick(t1)
	tick(t2)
	if lost1.Load()+lost2.Load() != 1 {
		t.Fatal("told twice of one loss")
	}
	r1.NotifyLost(nil)
	r1.Client().FlushAll(context.Background())
	tick(t1)
	if lost1.Load() != 0 {
		t.Fatal("told after NotifyLost(nil)")
	}
}
