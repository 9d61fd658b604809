package ledger

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// overviewVolume times the console's Overview over the last hour, day and 30 days of
// TestLedgerVolume's n records (ending at end), and checks the 30 days count them all.
func overviewVolume(ctx context.Context, t *testing.T, st *store, db string, end time.Time, n int) {
	for _, span := range []time.Duration{time.Hour, 24 * time.Hour, 30 * 24 * time.Hour} {
		began := time.Now()
		o, err := st.overview(ctx, OverviewQuery{From: end.Add(-span), To: end})
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(began)
		if span == 30*24*time.Hour && o.Totals.Requests != int64(n) {
			t.Errorf("the 30-day overview counts %d requests, want %d", o.Totals.Requests, n)
		}
		t.Logf("%s: overview of the last %s: %d requests, %d points, latency sample %d, in %s",
			db, span, o.Totals.Requests, len(o.Series), o.LatencySample, took.Round(time.Microsecond))
	}
}

// TestOverview: the overview's series, totals, tops and percentiles of a few records.
func TestOverview(t *testing.T) {
	ctx := context.Background()
	st, err := openStore(ctx, "sqlite", FreshSQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.close() // the writer's connection too
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	recs := []Record{
		{Time: t0.Add(5 * time.Second), Key: "a", Model: "m1", Status: 200, PromptTokens: 10, CompletionTokens: 5, CostUSD: 0.5, Total: 100 * time.Millisecond, FirstToken: 10 * time.Millisecond},
		{Time: t0.Add(20 * time.Second), Key: "a", Model: "m2", Status: 200, PromptTokens: 20, CompletionTokens: 5, CostUSD: 0.25, Total: 200 * time.Millisecond},
		{Time: t0.Add(70 * time.Second), Key: "b", Model: "m1", Status: 502, ErrorType: "upstream_error", Total: 300 * time.Millisecond},
		{Time: t0.Add(75 * time.Second), Key: "b", Model: "m1", Status: 502, ErrorType: "upstream_error", Total: 400 * time.Millisecond},
		{Time: t0.Add(80 * time.Second), Key: "b", Model: "m1", Status: 429, ErrorType: "rate_limit_exceeded", Total: 1 * time.Millisecond},
		{Time: t0.Add(2 * time.Hour), Key: "c", Model: "m1", Status: 200, CostUSD: 9}, // out of range
	}
	if err := st.insert(ctx, recs); err != nil {
		t.Fatal(err)
	}
	o, err := st.overview(ctx, OverviewQuery{From: t0, To: t0.Add(time.Hour), Top: 2})
	if err != nil {
		t.Fatal(err)
	}
	type point struct {
		T        int64
		Name     string
		Requests int64
		Errors   int64
		Cost     float64
	}
	pts := func(l []OverviewPoint) []point {
		var out []point
		for _, p := range l {
			at := int64(-1) // none: a top list's
			if !p.Time.IsZero() {
				at = p.Time.Unix() - t0.Unix()
			}
			out = append(out, point{at, p.Name, p.Requests, p.Errors, p.CostUSD})
		}
		return out
	}
	if o.Step != time.Minute {
		t.Errorf("step %s, want 1m", o.Step)
	}
	if diff := cmp.Diff([]point{{0, "", 2, 0, 0.75}, {60, "", 3, 3, 0}}, pts(o.Series)); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]point{{-1, "a", 2, 0, 0.75}, {-1, "b", 3, 3, 0}}, pts(o.TopKeys)); diff != "" {
		t.Errorf("top keys (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]ErrorCount{{502, "upstream_error", 2}, {429, "rate_limit_exceeded", 1}}, o.TopErrors); diff != "" {
		t.Errorf("top errors (-want +got):\n%s", diff)
	}
	if o.Totals.Requests != 5 || o.Totals.PromptTokens != 30 || o.LatencySample != 5 {
		t.Errorf("totals %+v, sample %d", o.Totals, o.LatencySample)
	}
	// Nearest rank of 1, 100, 200, 300, 400 ms.
	if want := [3]time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 400 * time.Millisecond}; o.Latency != want {
		t.Errorf("latency %v, want %v", o.Latency, want)
	}
	if want := [3]time.Duration{10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond}; o.FirstToken != want {
		t.Errorf("first token %v, want %v", o.FirstToken, want)
	}
	for _, span := range []struct {
		d    time.Duration
		step time.Duration
	}{{6 * time.Hour, time.Minute}, {7 * 24 * time.Hour, time.Hour}, {30 * 24 * time.Hour, 24 * time.Hour}} {
		o, err := st.overview(ctx, OverviewQuery{From: t0.Add(-span.d + time.Hour), To: t0.Add(time.Hour)})
		if err != nil || o.Step != span.step || o.Totals.Requests != 5 && span.step != 24*time.Hour {
			t.Errorf("a %s range: step %s (want %s), %d requests, %v", span.d, o.Step, span.step, o.Totals.Requests, err)
		}
	}
	if _, err := st.overview(ctx, OverviewQuery{From: t0, To: t0.Add(time.Second)}); err == nil {
		t.Error("a range under a minute was accepted")
	}
}

// TestOverview_PostgresSumsAsSQLite: PostgreSQL's overview (the rollup summed by the
// database, GROUPING SETS) is SQLite's (summed in memory) for the same records, over the
// minute, hour and day rollups.
func TestOverview_PostgresSumsAsSQLite(t *testing.T) {
	ctx := context.Background()
	lite, err := openStore(ctx, "sqlite", FreshSQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer lite.db.Close()
	pg, err := openStore(ctx, "postgres", Postgres.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pg.db.Close()
	t0 := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	var recs []Record
	for i := range 120 {
		recs = append(recs, Record{Time: t0.Add(time.Duration(i) * 97 * time.Second), Key: []string{"a", "b", "c"}[i%3], Team: "t",
			Model: []string{"m1", "m2"}[i%2], Status: []int{200, 200, 429, 502, 200}[i%5], PromptTokens: int64(i), CompletionTokens: int64(2 * i),
			CachedReadTokens: int64(i % 7), ReasoningTokens: int64(i % 3), CostUSD: float64(i%4) / 8, Total: time.Duration(i) * time.Millisecond,
			Deployment: []string{"x/1", "y/2"}[i%2]})
	}
	for _, st := range []*store{lite, pg} {
		if err := st.ensureAhead(ctx, t0); err != nil {
			t.Fatal(err)
		}
		if err := st.insert(ctx, recs); err != nil {
			t.Fatal(err)
		}
	}
	for _, span := range []time.Duration{4 * time.Hour, 7 * 24 * time.Hour, 30 * 24 * time.Hour} {
		q := OverviewQuery{From: t0.Add(4*time.Hour - span), To: t0.Add(4 * time.Hour), Top: 2}
		want, err := lite.overview(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pg.overview(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" || want.Totals.Requests == 0 {
			t.Errorf("a %s overview, SQLite (-) against PostgreSQL (+):\n%s", span, diff)
		}
	}
}
