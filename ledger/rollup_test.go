package ledger

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRollupWith_Runs sums records in runs of one group, alternating groups, a group
// coming back after others, and a minute boundary inside a run: each group's minute row
// holds exactly its records' sums, the rows in the order their groups first came, as
// summing each record through the index alone gives.
func TestRollupWith_Runs(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 6, 0, 58, 0, time.UTC)
	rec := func(sec int, key, model string, status int, prompt int64) Record {
		return Record{Time: t0.Add(time.Duration(sec) * time.Second), Key: key, Team: "t", Model: model,
			Deployment: "b/" + model, Status: status, PromptTokens: prompt, CostUSD: float64(prompt) / 1e3,
			Total: time.Duration(prompt) * time.Millisecond}
	}
	recs := []Record{
		rec(0, "a", "m", 200, 1), rec(0, "a", "m", 200, 2), rec(1, "a", "m", 200, 4), // a run
		rec(2, "a", "m", 200, 8),                             // the run goes on past the minute
		rec(2, "b", "m", 200, 16), rec(2, "a", "m", 200, 32), // alternating
		rec(2, "b", "m", 200, 64), rec(2, "a", "m", 429, 128), // another status
		rec(2, "a", "m", 200, 1024),                            // the route's texts as the record before's, another status
		rec(2, "a", "n", 200, 256), rec(3, "a", "m", 200, 512), // a group back after others
	}
	got := rollupWith(recs, nil, anonymous{n: 3, at: t0})
	// The SQLite writer's form, sameRoutes' answers given: the same rows.
	if d := cmp.Diff(got, rollupWith(recs, sameRoutes(recs, nil), anonymous{n: 3, at: t0}), cmp.AllowUnexported(rollupRow{}, rollupKey{})); d != "" {
		t.Errorf("rows with the runs given (-compared +given):\n%s", d)
	}
	// want: every record summed into its row by the index alone.
	var want rollupRows
	index := map[rollupKey]int{}
	add := func(k rollupKey, r rollupRow) {
		j, ok := index[k]
		if !ok {
			j = len(want)
			index[k] = j
			want = append(want, rollupRow{rollupKey: k})
		}
		want[j].add(&r)
	}
	add(rollupKey{bucket: t0.Unix() - t0.Unix()%60, status: 401}, rollupRow{requests: 3, errors: 3})
	for _, r := range recs {
		sec := r.Time.Unix()
		add(rollupKey{sec - sec%60, r.Key, r.Team, r.Model, r.Deployment, r.Status},
			rollupRow{requests: 1, errors: errorCount(r.Status), prompt: r.PromptTokens, costUSD: r.CostUSD, totalMS: r.Total.Milliseconds()})
	}
	if d := cmp.Diff(want, got[0], cmp.AllowUnexported(rollupRow{}, rollupKey{})); d != "" {
		t.Errorf("minute rows (-want +got):\n%s", d)
	}
	if len(want) != 6 {
		t.Fatalf("the test's own rows: %d, want 6", len(want))
	}
}
