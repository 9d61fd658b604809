package limits

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Charge is spend at a time, as a usage record keeps it: a bucket of the ledger's
// rollups, timed at the bucket's start.
type Charge struct {
	At time.Time
	Usage
}

// Replay returns what the budget period current at now holds, given the charges made
// before now in time order, and when that period began (zero, with nothing used, when no
// period is current). It applies the limiter's rule: a period starts with the first
// charge after the previous period ended and lasts b's period. Charges should reach back
// two periods before now: the replay then finds where the current period began unless a
// period was running when the history starts.
//
// A charge timed at the start of its rollup bucket makes the period begin and end up to
// a bucket's width earlier than the limiter's did: a restarted period renews a little
// early rather than late.
func Replay(charges []Charge, b Budget, now time.Time) (Usage, time.Time) {
	period := b.period()
	var used Usage
	var start, end time.Time
	for _, c := range charges {
		if c.At.After(now) {
			break
		}
		if c.Tokens <= 0 && c.MicroUSD <= 0 {
			continue
		}
		if start.IsZero() || !c.At.Before(end) {
			start, end, used = c.At, c.At.Add(period), Usage{}
		}
		used.Tokens += max(0, c.Tokens)
		used.MicroUSD += max(0, c.MicroUSD)
	}
	if start.IsZero() || !now.Before(end) {
		return Usage{}, time.Time{}
	}
	return used, start
}

// Seed is a budget period to restore into a limiter (a key's, or a team's), typically
// replayed from the ledger's rollups at start ([Replay]).
type Seed struct {
	// Key names the key whose budget it is; with Team set, the team.
	Key  string
	Team bool
	// Budget is the key's (team's) budget: its period, with Start, gives the period's end.
	Budget Budget
	// Start is when the period began; Used what it holds.
	Start time.Time
	Used  Usage
}

// Seeder is a [Limiter] whose budget periods can be restored (both [Memory] and [Redis]
// are).
type Seeder interface {
	// SeedBudget restores s unless the budget already has state, and reports whether it
	// did: a period this process counted ([Memory]), or a period any replica counted
	// that the shared state still holds ([Redis]; a replica joining, or a restart with
	// Redis intact, so restores nothing), is kept as it is. A period that has already
	// ended by now is not restored.
	SeedBudget(ctx context.Context, s Seed) (bool, error)
}

var (
	_ Seeder = (*Memory)(nil)
	_ Seeder = (*Redis)(nil)
)

// SeedBudget implements [Seeder].
func (m *Memory) SeedBudget(_ context.Context, s Seed) (bool, error) {
	if s.Budget.zero() || s.Start.IsZero() {
		return false, nil
	}
	now := m.now().UnixNano()
	end := s.Start.Add(s.Budget.period()).UnixNano()
	if end <= now {
		return false, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	set := m.keys
	if s.Team {
		set = m.teams
	}
	c := m.subject(set, s.Key)
	if c.budgetEnd != 0 {
		return false, nil
	}
	c.budgetEnd, c.budgetTokens, c.budgetMicroUSD = end, max(0, s.Used.Tokens), max(0, s.Used.MicroUSD)
	return true, nil
}

// seedScript restores a budget period unless its key exists. KEYS: the budget.
// ARGV: period end (Unix ms), tokens, micro-USD. Returns 1 when it restored it, 0 when
// the key existed or the period has ended by Redis's clock.
var seedScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1]) - now
if ttl <= 0 then return 0 end
redis.call('HSET', KEYS[1], 't', ARGV[2], 'u', ARGV[3], 'id', now)
redis.call('PEXPIRE', KEYS[1], ttl)
return 1
`)

// SeedBudget implements [Seeder] with one script round trip.
func (r *Redis) SeedBudget(ctx context.Context, s Seed) (bool, error) {
	if s.Budget.zero() || s.Start.IsZero() {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	end := s.Start.Add(s.Budget.period()).UnixMilli()
	key, what := r.prefix+"bu:k:"+s.Key, "key"
	if s.Team {
		key, what = r.prefix+"bu:t:"+s.Key, "team"
	}
	n, err := seedScript.Run(ctx, r.client, []string{key}, end,
		max(0, s.Used.Tokens), max(0, s.Used.MicroUSD)).Int64()
	if err != nil {
		return false, r.fail("seed", fmt.Errorf("budget of %s %s: %w", what, s.Key, err))
	}
	return n == 1, nil
}
