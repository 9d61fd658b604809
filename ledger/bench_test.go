package ledger

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestLedgerVolume writes AGATE_LEDGER_BENCH records (e.g. 10000000) spread over 30 days
// into each database through the writer's insert (batches of 2000, with their rollups),
// then reports rows per second, bytes per record (tables and indexes) and the time of a
// 30-day usage report by key and day and by team and model, and of a key's listings. It
// is skipped unless the variable is set:
// `AGATE_LEDGER_BENCH=1000000 go test -run TestLedgerVolume -v ./ledger`.
func TestLedgerVolume(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("AGATE_LEDGER_BENCH"))
	if n <= 0 {
		t.Skip("set AGATE_LEDGER_BENCH=<records> to run the ledger volume benchmark")
	}
	dbs := []string{"sqlite", "postgres"}
	if only := os.Getenv("AGATE_LEDGER_BENCH_DB"); only != "" {
		dbs = []string{only}
	}
	for _, db := range dbs {
		t.Run(db, func(t *testing.T) {
			ctx := context.Background()
			dsn := filepath.Join(t.TempDir(), "ledger.db")
			if db == "postgres" {
				dsn = Postgres.NewDatabase(t)
			}
			st, err := openStore(ctx, db, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer st.close() // the writer's connection too
			end := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
			start := end.Add(-30 * 24 * time.Hour)
			step := 30 * 24 * time.Hour / time.Duration(n)
			rng := rand.New(rand.NewPCG(1, 2))
			batch := make([]Record, 0, 2000)
			began := time.Now()
			for i := range n {
				k := rng.IntN(200)
				batch = append(batch, Record{Time: start.Add(time.Duration(i) * step), RequestID: fmt.Sprintf("req_%024x", i),
					Key: "key-" + strconv.Itoa(k), Team: "team-" + strconv.Itoa(k%20), API: "chat",
					Model: "model-" + strconv.Itoa(rng.IntN(10)), Served: "model-" + strconv.Itoa(rng.IntN(10)), Backend: "openai",
					Stream: i%2 == 0, Status: []int{200, 200, 200, 200, 200, 200, 200, 200, 429, 502}[rng.IntN(10)],
					PromptTokens: int64(rng.IntN(20000)), CachedReadTokens: int64(rng.IntN(5000)), CompletionTokens: int64(rng.IntN(2000)),
					CostUSD: rng.Float64() / 100, Total: time.Duration(rng.IntN(30000)) * time.Millisecond,
					FirstToken: time.Duration(rng.IntN(2000)) * time.Millisecond, Upstream: time.Duration(rng.IntN(30000)) * time.Millisecond})
				if len(batch) == cap(batch) || i == n-1 {
					if err := st.insert(ctx, batch); err != nil {
						t.Fatal(err)
					}
					batch = batch[:0]
				}
			}
			took := time.Since(began)
			size := st.sizeBytes(ctx, t)
			t.Logf("%s: %d records in %s: %.0f rows/s; %d bytes on disk, %.0f bytes per record (records, indexes and rollups)",
				db, n, took.Round(time.Millisecond), float64(n)/took.Seconds(), size, float64(size)/float64(n))
			for _, g := range [][]string{{"key", "day"}, {"team", "model"}} {
				began = time.Now()
				rows, err := st.usage(ctx, UsageQuery{From: start, To: end, GroupBy: g})
				if err != nil {
					t.Fatal(err)
				}
				var total int64
				for _, r := range rows {
					total += r.Requests
				}
				if total != int64(n) {
					t.Errorf("the report counts %d requests, want %d", total, n)
				}
				t.Logf("%s: 30-day usage report by %v: %d rows in %s", db, g, len(rows), time.Since(began).Round(time.Microsecond))
			}
			for _, q := range []RequestQuery{{Key: "key-7", Limit: 100}, {Key: "key-7", ErrorsOnly: true, Limit: 100},
				{Key: "key-7", From: start.Add(24 * time.Hour), To: start.Add(25 * time.Hour), Limit: 100}} {
				began = time.Now()
				recs, _, err := st.requests(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s: a key's listing (key %s, errors only %v, from %s): %d records in %s", db, q.Key, q.ErrorsOnly,
					q.From.Format(time.DateOnly), len(recs), time.Since(began).Round(time.Microsecond))
			}
			overviewVolume(ctx, t, st, db, end, n)
		})
	}
}

// sizeBytes is the database's size on disk.
func (s *store) sizeBytes(ctx context.Context, t *testing.T) int64 {
	var n int64
	q := `SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()`
	if s.d.dollar {
		q = `SELECT pg_database_size(current_database())`
	}
	if err := s.db.QueryRowContext(ctx, q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
