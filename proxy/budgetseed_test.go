package proxy

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/ledger"
	"github.com/agate-gateway/agate/limits"
)

// fakeSpend answers Spend from rows and notes the queries.
type fakeSpend struct {
	rows    []ledger.Spend
	queries []ledger.SpendQuery
}

func (f *fakeSpend) Spend(_ context.Context, q ledger.SpendQuery) ([]ledger.Spend, error) {
	f.queries = append(f.queries, q)
	var out []ledger.Spend
	for _, r := range f.rows {
		for _, n := range q.Names {
			if r.Name == n && !r.Bucket.Before(q.From) {
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// fakeSeeder notes the seeds.
type fakeSeeder struct{ seeds []limits.Seed }

func (f *fakeSeeder) SeedBudget(_ context.Context, s limits.Seed) (bool, error) {
	f.seeds = append(f.seeds, s)
	return true, nil
}

// TestSeedSubjects: one query per budget period, over the two periods before now, from
// the hour rollup unless its retention is shorter than that; each subject seeded with
// its current period, priced in micro-USD; a subject whose last period ended is not.
func TestSeedSubjects(t *testing.T) {
	t.Parallel() // nothing shared, no clock or environment of the process (#54)
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	day := limits.Budget{Tokens: 100, Period: 24 * time.Hour}
	month := limits.Budget{MicroUSD: 5_000_000, Period: 720 * time.Hour}
	src := &fakeSpend{rows: []ledger.Spend{
		{Name: "a", Bucket: now.Add(-3 * time.Hour), Tokens: 40, CostUSD: 0.5},
		{Name: "a", Bucket: now.Add(-1 * time.Hour), Tokens: 70, CostUSD: 0.25},
		{Name: "b", Bucket: now.Add(-30 * time.Hour), Tokens: 500}, // its period ended 6 h ago
		{Name: "c", Bucket: now.Add(-200 * time.Hour), Tokens: 9, CostUSD: 1.5},
	}}
	seeder := &fakeSeeder{}
	subjects := []budgetSubject{{name: "c", budget: month}, {name: "a", budget: day}, {name: "b", budget: day}}
	n, err := seedSubjects(context.Background(), src, seeder, subjects, 1000*time.Hour, now)
	if err != nil || n != 2 {
		t.Fatalf("seedSubjects = %d, %v; want 2 restored", n, err)
	}
	wantQueries := []ledger.SpendQuery{
		{From: now.Add(-48 * time.Hour), Names: []string{"a", "b"}},
		{From: now.Add(-1440 * time.Hour), Names: []string{"c"}, Daily: true}, // 1440 h > the hour rollup's 1000 h
	}
	if diff := cmp.Diff(wantQueries, src.queries); diff != "" {
		t.Errorf("queries (-want +got):\n%s", diff)
	}
	wantSeeds := []limits.Seed{
		{Key: "a", Budget: day, Start: now.Add(-3 * time.Hour), Used: limits.Usage{Tokens: 110, MicroUSD: 750_000}},
		{Key: "c", Budget: month, Start: now.Add(-200 * time.Hour), Used: limits.Usage{Tokens: 9, MicroUSD: 1_500_000}},
	}
	if diff := cmp.Diff(wantSeeds, seeder.seeds); diff != "" {
		t.Errorf("seeds (-want +got):\n%s", diff)
	}
}
