package proxy

import (
	"context"
	"math"
	"sort"
	"time"

	"github.com/agate-gateway/agate/ledger"
	"github.com/agate-gateway/agate/limits"
)

// This file re-seeds the budgets of the limiter from the ledger's rollups when the server
// starts: a restarted gateway (or a replica joining, with the state in memory) does not
// forget what the current budget periods have spent; and again when the shared state
// store (Redis) lost its data while the gateways run (reseedOnLoss).

// spendSource is a ledger whose rollups budgets can be re-seeded from
// (*ledger.Ledger is one).
type spendSource interface {
	Spend(ctx context.Context, q ledger.SpendQuery) ([]ledger.Spend, error)
}

// seedTimeout bounds the whole re-seeding at start.
const seedTimeout = 30 * time.Second

// budgetSubject is a key (or, with team set, a team) with a budget to re-seed.
type budgetSubject struct {
	name   string
	budget limits.Budget
	team   bool
}

// seedBudgets restores the budget period of every key of the running runtime that has a
// budget, and of every configured team that has one, replayed (limits.Replay) from the ledger's rollups over the two periods
// before now: the hour rollup, or the day rollup when hourRetention (0: for ever) does
// not reach back that far. A limiter that already counts a key's period keeps it
// (limits.Seeder). It reads the rollups only, one query per budget period and 500 keys,
// never the raw records. A failure is logged: the gateway serves all the same, with
// the budgets it could restore.
func (s *Server) seedBudgets(hourRetention time.Duration) {
	src, ok := s.ledger.(spendSource)
	seeder, ok2 := s.limiter.(limits.Seeder)
	if !ok || !ok2 {
		return
	}
	keys, teams := budgetSubjects(s.runtime(), nil)
	if len(keys) == 0 && len(teams) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(s.baseCtx, seedTimeout)
	defer cancel()
	s.seed(ctx, src, seeder, keys, teams, hourRetention, "budgets re-seeded from the ledger")
}

// budgetSubjects are the keys of rt with a budget, and the teams of its keys with one,
// leaving out those prev (nil: none) gives a budget too.
func budgetSubjects(rt, prev *runtime) (keys, teams []budgetSubject) {
	seen, seenTeam := map[string]bool{}, map[string]bool{}
	if prev != nil {
		prevKeys, prevTeams := budgetSubjects(prev, nil)
		for _, k := range prevKeys {
			seen[k.name] = true
		}
		for _, t := range prevTeams {
			seenTeam[t.name] = true
		}
	}
	for _, k := range rt.keys {
		if !k.limited {
			continue
		}
		if (k.budget.Tokens > 0 || k.budget.MicroUSD > 0) && !seen[k.name] {
			seen[k.name] = true
			keys = append(keys, budgetSubject{name: k.name, budget: k.budget})
		}
		if (k.teamBudget.Tokens > 0 || k.teamBudget.MicroUSD > 0) && !seenTeam[k.team] {
			seenTeam[k.team] = true
			teams = append(teams, budgetSubject{name: k.team, budget: k.teamBudget, team: true})
		}
	}
	return keys, teams
}

// grantTimeout bounds seedGranted: the ledger's flush and the rollups' queries.
const grantTimeout = 10 * time.Second

// seedGranted seeds the budgets that next gives and prev did not: a key or team without
// a budget (or unknown) that a reload or the admin API gives one. Its current period is
// replayed from the ledger's rollups, as at start (seedBudgets), after the ledger has
// written the records it holds, so that what the key or team spent before is counted.
// It runs before next goes in (under applyMu), so that no request charges the new budget
// from zero first (a limiter that counts a period keeps it). A failure is logged: the
// change goes in all the same, its budgets counted from zero.
func (s *Server) seedGranted(prev, next *runtime) {
	src, ok := s.ledger.(spendSource)
	seeder, ok2 := s.limiter.(limits.Seeder)
	if !ok || !ok2 || prev == nil {
		return
	}
	keys, teams := budgetSubjects(next, prev)
	if len(keys) == 0 && len(teams) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(s.baseCtx, grantTimeout)
	defer cancel()
	if f, ok := s.ledger.(interface{ Flush(context.Context) error }); ok {
		if err := f.Flush(ctx); err != nil {
			s.logger.Warn("writing the ledger before seeding new budgets failed", "error", err.Error())
		}
	}
	s.seed(ctx, src, seeder, keys, teams, next.cfg.Ledger.Rollups.Hour, "new budgets seeded from the ledger")
}

// seed seeds the budgets of keys and teams and logs the outcome with msg.
func (s *Server) seed(ctx context.Context, src spendSource, seeder limits.Seeder, keys, teams []budgetSubject,
	hourRetention time.Duration, msg string) {
	start, now := time.Now(), time.Now()
	n, err := seedSubjects(ctx, src, seeder, keys, hourRetention, now)
	if err == nil {
		var m int
		m, err = seedSubjects(ctx, src, seeder, teams, hourRetention, now)
		n += m
	}
	if err != nil {
		s.logger.Error("re-seeding budgets from the ledger failed; the budgets not restored start from zero",
			"error", err.Error(), "restored", n)
		return
	}
	s.logger.Info(msg, "keys", len(keys), "teams", len(teams), "restored", n,
		"took_ms", time.Since(start).Milliseconds())
}

// seedSubjects replays and seeds each subject's current budget period and returns how
// many it restored. The subjects are all keys or all teams.
func seedSubjects(ctx context.Context, src spendSource, seeder limits.Seeder, subjects []budgetSubject,
	hourRetention time.Duration, now time.Time) (int, error) {
	sort.Slice(subjects, func(i, j int) bool {
		if p, q := subjects[i].budget.Period, subjects[j].budget.Period; p != q {
			return p < q
		}
		return subjects[i].name < subjects[j].name
	})
	restored := 0
	for i := 0; i < len(subjects); {
		// One query per run of subjects with the same period, 500 names at most.
		j := i + 1
		for j < len(subjects) && j-i < 500 && subjects[j].budget.Period == subjects[i].budget.Period {
			j++
		}
		group := subjects[i:j]
		i = j
		period := budgetPeriod(group[0].budget)
		names := make([]string, len(group))
		for k, g := range group {
			names[k] = g.name
		}
		q := ledger.SpendQuery{From: now.Add(-2 * period), Names: names, Team: group[0].team,
			Daily: hourRetention > 0 && hourRetention < 2*period}
		spend, err := src.Spend(ctx, q)
		if err != nil {
			return restored, err
		}
		byName := map[string][]limits.Charge{}
		for _, sp := range spend {
			byName[sp.Name] = append(byName[sp.Name], limits.Charge{At: sp.Bucket,
				Usage: limits.Usage{Tokens: sp.Tokens, MicroUSD: int64(math.Round(sp.CostUSD * 1e6))}})
		}
		for _, g := range group {
			used, from := limits.Replay(byName[g.name], g.budget, now)
			if from.IsZero() {
				continue
			}
			ok, err := seeder.SeedBudget(ctx, limits.Seed{Key: g.name, Team: g.team, Budget: g.budget, Start: from, Used: used})
			if err != nil {
				return restored, err
			}
			if ok {
				restored++
			}
		}
	}
	return restored, nil
}

// budgetPeriod is b's period as the limiter counts it (zero: 30 days).
func budgetPeriod(b limits.Budget) time.Duration {
	if b.Period <= 0 {
		return 720 * time.Hour
	}
	return b.Period
}

// reseedOnLoss has the budgets re-seeded whenever the limiter finds that its shared state
// was lost while the gateway runs (limits.LossNotifier: a Redis server restarted without
// persistence, or flushed), when there is a ledger to re-seed them from. One replica
// re-seeds for all: the first to notice the loss.
func (s *Server) reseedOnLoss(hourRetention time.Duration) {
	n, ok := s.limiter.(limits.LossNotifier)
	if _, ok2 := s.ledger.(spendSource); !ok || !ok2 {
		return
	}
	n.NotifyLost(func() {
		s.logger.Warn("the state store lost its data (restarted without persistence, or flushed): re-seeding budgets from the ledger")
		s.seedBudgets(hourRetention)
	})
}
