package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agate-gateway/agate/ledger"
)

// TestLedger_Spend: the spend budgets are re-seeded from is read from the hour (or day)
// rollup, by key or by team, one row per bucket with spend, since the query's start.
func TestLedger_Spend(t *testing.T) {
	databases(t, func(t *testing.T, opts ledger.Options) {
		l := open(t, opts)
		for _, r := range sample() {
			l.Add(r)
		}
		flush(t, l)
		ctx := context.Background()
		h := func(hours int) time.Time { return day0.Add(time.Duration(hours) * time.Hour) }
		tests := []struct {
			name string
			q    ledger.SpendQuery
			want []ledger.Spend
		}{
			{"by key, hourly", ledger.SpendQuery{From: day0, Names: []string{"alice", "bob"}}, []ledger.Spend{
				{Name: "alice", Bucket: h(10), Tokens: 132, CostUSD: 0.0012},
				{Name: "bob", Bucket: h(26), Tokens: 10, CostUSD: 0.00003}}}, // bob's 429 spent nothing
			{"from rounds down to the bucket", ledger.SpendQuery{From: h(10).Add(40 * time.Minute), Names: []string{"alice"}},
				[]ledger.Spend{{Name: "alice", Bucket: h(10), Tokens: 132, CostUSD: 0.0012}}},
			{"later start", ledger.SpendQuery{From: h(11), Names: []string{"alice", "bob"}},
				[]ledger.Spend{{Name: "bob", Bucket: h(26), Tokens: 10, CostUSD: 0.00003}}},
			{"by team, daily", ledger.SpendQuery{From: day0, Team: true, Daily: true, Names: []string{"eng", "ops"}}, []ledger.Spend{
				{Name: "eng", Bucket: day0, Tokens: 132, CostUSD: 0.0012},
				{Name: "ops", Bucket: h(24), Tokens: 10, CostUSD: 0.00003}}},
			{"only the names asked", ledger.SpendQuery{From: day0, Names: []string{"carol"}}, nil},
			{"no names", ledger.SpendQuery{From: day0}, nil},
		}
		for _, tc := range tests {
			got, err := l.Spend(ctx, tc.q)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 })); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.name, diff)
			}
		}
	})
}

// TestLedger_Unauthenticated: requests refused before a key was known make no record;
// their count is added to every rollup as key, team and model "" with status 401, so
// usage reports by status show them.
func TestLedger_Unauthenticated(t *testing.T) {
	databases(t, func(t *testing.T, opts ledger.Options) {
		now := time.Date(2026, 12, 6, 10, 30, 0, 0, time.UTC)
		opts.Now = func() time.Time { return now }
		l := open(t, opts)
		for range 1000 {
			l.AddUnauthenticated()
		}
		l.Add(ledger.Record{Time: now, RequestID: "r1", Key: "alice", Status: 200, PromptTokens: 3})
		flush(t, l)
		for range 5 {
			l.AddUnauthenticated()
		}
		flush(t, l) // the count alone, no record
		ctx := context.Background()
		recs, _, err := l.Requests(ctx, ledger.RequestQuery{})
		if err != nil || len(recs) != 1 {
			t.Fatalf("%d records (%v), want 1: refusals without a key make none", len(recs), err)
		}
		for _, r := range []struct {
			name     string
			from, to time.Time
		}{{"minute", now, now.Add(time.Minute)}, {"hour", now.Truncate(time.Hour), now.Truncate(time.Hour).Add(time.Hour)},
			{"day", now.Truncate(24 * time.Hour), now.Truncate(24 * time.Hour).Add(24 * time.Hour)}} {
			got, err := l.Usage(ctx, ledger.UsageQuery{From: r.from, To: r.to, GroupBy: []string{"key", "status"}})
			if err != nil {
				t.Fatal(err)
			}
			want := []ledger.UsageRow{{Status: 401, Requests: 1005, Errors: 1005}, {Key: "alice", Status: 200, Requests: 1, PromptTokens: 3}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s rollup by key and status (-want +got):\n%s", r.name, diff)
			}
		}
	})
}
