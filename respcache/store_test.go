package respcache

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agate-gateway/agate/limits/redistest"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestMemory_TTLAndBytes(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)}
	m := NewMemory(30, c.now) // three entries of 10 bytes (key 1 + value 9)
	val := []byte("123456789")
	for _, k := range []string{"a", "b", "c"} {
		m.Set(ctx, k, val, time.Minute)
	}
	m.Get(ctx, "a") // a is now the most recently used
	m.Set(ctx, "d", val, time.Minute)
	steps := []struct {
		advance time.Duration
		key     string
		hit     bool
	}{
		{0, "b", false}, // the least recently used went for d
		{0, "a", true}, {0, "c", true}, {0, "d", true},
		{59 * time.Second, "a", true},
		{time.Second, "a", false}, // its TTL passed
	}
	for _, s := range steps {
		c.t = c.t.Add(s.advance)
		got, err := m.Get(ctx, s.key)
		if err != nil || (got != nil) != s.hit {
			t.Errorf("+%v %s: %q %v, want hit %v", s.advance, s.key, got, err, s.hit)
		}
	}
	if m.Bytes() > 30 {
		t.Errorf("holds %d bytes, over its 30", m.Bytes())
	}
	m.Set(ctx, "big", make([]byte, 40), time.Minute)
	if got, _ := m.Get(ctx, "big"); got != nil {
		t.Errorf("an entry over the whole bound was kept")
	}
}

func TestRedis_SharedCompressedBounded(t *testing.T) {
	rs := redistest.Start(t)
	opts, _ := redis.ParseURL(rs.URL())
	client := redis.NewClient(opts)
	defer client.Close()
	ctx := context.Background()
	a := &Redis{Client: client, Prefix: "agate:", MaxEntry: 1 << 16}
	b := &Redis{Client: client, Prefix: "agate:", MaxEntry: 1 << 16}
	entry := []byte(strings.Repeat("the same answer ", 1000))
	if err := a.Set(ctx, "k", entry, time.Minute); err != nil {
		t.Fatal(err)
	}
	got, err := b.Get(ctx, "k")
	if err != nil || string(got) != string(entry) {
		t.Fatalf("get on the other store: %d bytes, %v", len(got), err)
	}
	stored, _ := client.StrLen(ctx, "agate:rc:k").Result()
	if ttl, _ := client.PTTL(ctx, "agate:rc:k").Result(); ttl <= 0 || ttl > time.Minute {
		t.Errorf("ttl %v, want up to a minute", ttl)
	}
	if stored*10 > int64(len(entry)) {
		t.Errorf("stored %d bytes for %d: not compressed", stored, len(entry))
	}
	if got, err := a.Get(ctx, "absent"); got != nil || err != nil {
		t.Errorf("absent key: %q %v", got, err)
	}
	small := &Redis{Client: client, Prefix: "agate:", MaxEntry: 100}
	small.Set(ctx, "big", entry, time.Minute)
	if n, _ := client.Exists(ctx, "agate:rc:big").Result(); n != 0 {
		t.Errorf("an entry over max_entry_bytes was stored")
	}
	// A stored value that inflates beyond the reader's bound is refused, not inflated.
	if _, err := small.Get(ctx, "k"); !errors.Is(err, errTooLarge) {
		t.Errorf("inflating beyond max: %v, want errTooLarge", err)
	}
}

func TestFlights(t *testing.T) {
	var f Flights
	lead, ok := f.Join("k")
	if !ok {
		t.Fatal("the first request does not lead")
	}
	var wg sync.WaitGroup
	ended := make([]bool, 4)
	for i := range ended {
		fl, leads := f.Join("k")
		if leads {
			t.Fatal("a second leader")
		}
		wg.Add(1)
		go func() { defer wg.Done(); ended[i] = fl.Wait(context.Background()) }()
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if other, _ := f.Join("k"); other.Wait(ctx) {
		t.Error("a wait whose context ended reports the flight ended")
	}
	lead.Done()
	lead.Done() // again: nothing
	wg.Wait()
	for i, e := range ended {
		if !e {
			t.Errorf("waiter %d did not see the end", i)
		}
	}
	if _, leads := f.Join("k"); !leads {
		t.Error("after the flight ended, the next request does not lead")
	}
}
