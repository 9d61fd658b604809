package balance

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agate-gateway/agate/limits/redistest"
)

// memQuotas is a QuotaStore in memory: what every replica's Set would share through Redis.
type memQuotas struct {
	mu     sync.Mutex
	counts map[string][2]int64
	rests  map[string]int64
	fail   bool
}

func (m *memQuotas) Exchange(_ context.Context, now int64, entries []QuotaEntry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail {
		return errors.New("store down")
	}
	if m.counts == nil {
		m.counts, m.rests = map[string][2]int64{}, map[string]int64{}
	}
	for i := range entries {
		e := &entries[i]
		k := e.Model + "/" + e.Deployment + "@" + time.Unix(0, window(now)).String()
		c := m.counts[k]
		c[0] += e.Reqs
		c[1] += e.Tokens
		m.counts[k] = c
		e.Reqs, e.Tokens = c[0], c[1]
		rk := e.Model + "/" + e.Deployment
		m.rests[rk] = max(m.rests[rk], e.RestUntil)
		e.RestUntil = m.rests[rk]
	}
	return nil
}

// quotaSpecs are deployments a (3 requests a minute, preferred by weight) and b (none).
func quotaSpecs() []Spec {
	return []Spec{{Name: "a", Weight: 10, RequestsPerMinute: 3}, {Name: "b", Weight: 1}}
}

// pickNames picks n times at now, each attempt ended OK, and returns the names ("-" for none).
func pickNames(s *Set, n int, now time.Time) string {
	var names []string
	for range n {
		c := s.Pick(context.Background(), now, 0, nil)
		if c.Index < 0 {
			names = append(names, "-")
			continue
		}
		names = append(names, s.Name(c.Index))
		s.Done(c.Index, Outcome{OK: true}, now)
	}
	return strings.Join(names, ",")
}

// TestSharedQuotas: two replicas' Sets sharing a QuotaStore spend one quota: after an
// exchange the second sees what the first used; counts made while the store is down are
// sent with the next exchange; a new clock minute starts from zero on both; a 429's rest
// on one replica reaches the other.
func TestSharedQuotas(t *testing.T) {
	store := &memQuotas{}
	r1 := New(quotaSpecs(), Options{Model: "m", Quotas: store, QuotaSync: -1})
	r2 := New(quotaSpecs(), Options{Model: "m", Quotas: store, QuotaSync: -1})
	ctx := context.Background()
	now := t0.Add(10 * time.Second)
	if got := pickNames(r1, 2, now); got != "a,a" {
		t.Fatalf("first replica: %s", got)
	}
	if err := r1.SyncQuotas(ctx, now.UnixNano()); err != nil {
		t.Fatal(err)
	}
	if err := r2.SyncQuotas(ctx, now.UnixNano()); err != nil {
		t.Fatal(err)
	}
	if got := pickNames(r2, 3, now); got != "a,b,b" {
		t.Fatalf("second replica after the exchange: %s, want the quota's last request on a, then b", got)
	}

	// The store down: r2's counts wait for the next exchange.
	store.fail = true
	if err := r2.SyncQuotas(ctx, now.UnixNano()); err == nil {
		t.Fatal("exchange with the store down: no error")
	}
	store.fail = false
	r1.SyncQuotas(ctx, now.UnixNano())
	if got := pickNames(r1, 1, now); got != "a" { // r1 saw only its own 2 before
		t.Fatalf("first replica before r2's counts arrived: %s", got)
	}
	r2.SyncQuotas(ctx, now.UnixNano())
	r1.SyncQuotas(ctx, now.UnixNano())
	if got := pickNames(r1, 1, now); got != "b" {
		t.Fatalf("first replica after r2's counts arrived: %s, want b (a at 4 of 3)", got)
	}

	// The next clock minute starts from zero everywhere.
	next := t0.Add(61 * time.Second)
	if got := pickNames(r2, 1, next); got != "a" {
		t.Fatalf("next minute: %s, want a", got)
	}

	// A 429 on r1 rests a on r2 too.
	c := r1.Pick(ctx, next, 0, nil)
	r1.Done(c.Index, Outcome{RateLimited: true, RetryAfter: 30 * time.Second}, next)
	r1.SyncQuotas(ctx, next.UnixNano())
	r2.SyncQuotas(ctx, next.UnixNano())
	if !r2.Resting(0, next.Add(29*time.Second)) || r2.Resting(0, next.Add(31*time.Second)) {
		t.Fatal("the rest r1 saw is not r2's")
	}
}

// TestSharedQuotas_Automatic: with a sync interval the Sets exchange by themselves from
// Pick, in the background, at most once an interval.
func TestSharedQuotas_Automatic(t *testing.T) {
	store := &countingQuotas{}
	s := New(quotaSpecs(), Options{Model: "m", Quotas: store, QuotaSync: time.Hour})
	for i := range 5 {
		c := s.Pick(context.Background(), t0.Add(time.Duration(i)*time.Second), 0, nil)
		s.Done(c.Index, Outcome{OK: true}, t0)
	}
	deadline := time.Now().Add(2 * time.Second)
	for store.calls() != 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := store.calls(); n != 1 {
		t.Fatalf("%d exchanges for 5 picks within the interval, want 1", n)
	}
}

type countingQuotas struct {
	mu sync.Mutex
	n  int
}

func (c *countingQuotas) Exchange(context.Context, int64, []QuotaEntry) error {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return nil
}

func (c *countingQuotas) calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// TestRedisQuotas: the same through a real redis-server: two replicas spend one quota,
// and a rest crosses.
func TestRedisQuotas(t *testing.T) {
	srv := redistest.Start(t)
	now := time.Now().Truncate(time.Minute).Add(5 * time.Second)
	r1 := New(quotaSpecs(), Options{Model: "m", Quotas: redisAffinity(t, srv), QuotaSync: -1})
	r2 := New(quotaSpecs(), Options{Model: "m", Quotas: redisAffinity(t, srv), QuotaSync: -1})
	ctx := context.Background()
	pickNames(r1, 2, now)
	for _, s := range []*Set{r1, r2} {
		if err := s.SyncQuotas(ctx, now.UnixNano()); err != nil {
			t.Fatal(err)
		}
	}
	if got := pickNames(r2, 2, now); got != "a,b" {
		t.Fatalf("second replica: %s, want a,b", got)
	}
	c := r2.Pick(ctx, now, 0, nil)
	r2.Done(c.Index, Outcome{RateLimited: true, RetryAfter: 20 * time.Second}, now) // b rests
	for _, s := range []*Set{r2, r1} {
		if err := s.SyncQuotas(ctx, now.UnixNano()); err != nil {
			t.Fatal(err)
		}
	}
	if !r1.Resting(1, now.Add(19*time.Second)) {
		t.Fatal("b's rest did not reach the first replica")
	}
	if got := pickNames(r1, 1, now); got != "-" {
		t.Fatalf("first replica with a spent and b resting: %s, want none", got)
	}
}
