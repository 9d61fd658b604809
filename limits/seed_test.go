package limits

import (
	"context"
	"testing"
	"time"

	"github.com/agate-gateway/agate/limits/redistest"
)

// TestReplay: the budget period current at now, replayed from rollup buckets, starts
// with the first charge after the previous period ended.
func TestReplay(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	day := Budget{Tokens: 1000, Period: 24 * time.Hour}
	at := func(hoursAgo int, tokens, micro int64) Charge {
		return Charge{At: now.Add(-time.Duration(hoursAgo) * time.Hour), Usage: Usage{Tokens: tokens, MicroUSD: micro}}
	}
	tests := []struct {
		name      string
		charges   []Charge
		wantUsed  Usage
		wantStart time.Time
	}{
		{name: "no charges"},
		{name: "one period running", charges: []Charge{at(5, 100, 1), at(3, 50, 2), at(0, 1, 0)},
			wantUsed: Usage{Tokens: 151, MicroUSD: 3}, wantStart: now.Add(-5 * time.Hour)},
		{name: "the last period ended: nothing is current", charges: []Charge{at(30, 900, 0), at(25, 50, 0)}},
		{name: "a period ended, the next began with a later charge",
			charges:  []Charge{at(40, 900, 0), at(20, 70, 0), at(16, 10, 0), at(15, 5, 0)},
			wantUsed: Usage{Tokens: 15}, wantStart: now.Add(-16 * time.Hour)},
		{name: "buckets without spend start nothing", charges: []Charge{at(30, 0, 0), at(2, 7, 0)},
			wantUsed: Usage{Tokens: 7}, wantStart: now.Add(-2 * time.Hour)},
		{name: "charges after now are left out", charges: []Charge{at(2, 7, 0), {At: now.Add(time.Hour), Usage: Usage{Tokens: 99}}},
			wantUsed: Usage{Tokens: 7}, wantStart: now.Add(-2 * time.Hour)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			used, start := Replay(tc.charges, day, now)
			if used != tc.wantUsed || !start.Equal(tc.wantStart) {
				t.Errorf("Replay = %+v from %v, want %+v from %v", used, start, tc.wantUsed, tc.wantStart)
			}
		})
	}
}

// TestSeedBudget: a seeded period refuses a key over its budget, renews when the seeded
// period ends, and never replaces a period the limiter already counts.
func TestSeedBudget(t *testing.T) {
	req := &Request{Key: "k", Budget: Budget{Tokens: 100, Period: time.Hour}}
	check := func(t *testing.T, l interface {
		Limiter
		Seeder
	}, start time.Time) {
		ctx := context.Background()
		ok, err := l.SeedBudget(ctx, Seed{Key: "k", Budget: req.Budget, Start: start, Used: Usage{Tokens: 100}})
		if err != nil || !ok {
			t.Fatalf("SeedBudget = %v, %v; want true", ok, err)
		}
		var a Admission
		if err := l.Admit(ctx, req, &a); err != nil {
			t.Fatal(err)
		}
		if a.Denied != BudgetTokens {
			t.Fatalf("Denied = %v after seeding a spent budget, want %v", a.Denied, BudgetTokens)
		}
		if a.RetryAfter <= 0 || a.RetryAfter > 45*time.Minute {
			t.Errorf("RetryAfter = %v, want the seeded period's end, within 45m", a.RetryAfter)
		}
		ok, err = l.SeedBudget(ctx, Seed{Key: "k", Budget: req.Budget, Start: start, Used: Usage{}})
		if err != nil || ok {
			t.Errorf("second SeedBudget = %v, %v; want false: the counted period stays", ok, err)
		}
		ok, err = l.SeedBudget(ctx, Seed{Key: "gone", Budget: req.Budget, Start: start.Add(-time.Hour), Used: Usage{Tokens: 100}})
		if err != nil || ok {
			t.Errorf("SeedBudget of an ended period = %v, %v; want false", ok, err)
		}
	}
	t.Run("memory", func(t *testing.T) {
		now := time.Unix(1_700_000_000, 0)
		m := NewMemory(func() time.Time { return now })
		check(t, m, now.Add(-20*time.Minute))
		checkTeam(t, m)
		now = now.Add(41 * time.Minute) // the seeded period is over
		var a Admission
		if err := m.Admit(context.Background(), req, &a); err != nil || a.Denied != NoLimit {
			t.Errorf("after the seeded period: Denied = %v (%v), want admitted", a.Denied, err)
		}
	})
	t.Run("redis", func(t *testing.T) {
		srv := redistest.Start(t)
		r := newRedis(t, srv, RedisOptions{KeyPrefix: "seed:"})
		check(t, r, time.Now().Add(-20*time.Minute))
		checkTeam(t, r)
		// A replica joining seeds nothing: the period is in Redis already.
		other := newRedis(t, srv, RedisOptions{KeyPrefix: "seed:"})
		if ok, err := other.SeedBudget(context.Background(), Seed{Key: "k", Budget: req.Budget, Start: time.Now(), Used: Usage{}}); err != nil || ok {
			t.Errorf("joining replica's SeedBudget = %v, %v; want false", ok, err)
		}
	})
}

// checkTeam seeds team t's spent budget: every key of the team is refused.
func checkTeam(t *testing.T, l interface {
	Limiter
	Seeder
}) {
	t.Helper()
	ctx := context.Background()
	b := Budget{MicroUSD: 500, Period: time.Hour}
	if ok, err := l.SeedBudget(ctx, Seed{Key: "t", Team: true, Budget: b, Start: time.Now().Add(-time.Minute), Used: Usage{MicroUSD: 500}}); err != nil || !ok {
		t.Fatalf("SeedBudget of a team = %v, %v; want true", ok, err)
	}
	var a Admission
	if err := l.Admit(ctx, &Request{Key: "other", Team: "t", TeamBudget: b}, &a); err != nil || a.Denied != TeamBudgetUSD {
		t.Errorf("a key of the seeded team: Denied = %v (%v), want %v", a.Denied, err, TeamBudgetUSD)
	}
}
